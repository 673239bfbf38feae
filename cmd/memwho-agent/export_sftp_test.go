//go:build !nosftp

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/export"
	"github.com/memwho/memwho/internal/upload/sshtest"
)

// TestExportUpload sends exports to a real OpenSSH server.
func TestExportUpload(t *testing.T) {
	s := sshtest.Start(t)
	old := export.UploadBackoff
	export.UploadBackoff = 10 * time.Millisecond
	t.Cleanup(func() { export.UploadBackoff = old })

	dir := t.TempDir()
	// 400 samples: about 300 KiB of CSV, enough to cut in the middle.
	db := writeHistory(t, filepath.Join(dir, "history.db"), 200, "web1", "web2")
	local := filepath.Join(dir, "local.csv.gz")
	if _, errOut, code := memwho("export", "--db", db, "--gzip", "-o", local); code != 0 {
		t.Fatalf("local export: exit %d: %s", code, errOut)
	}
	wantGz, _ := os.ReadFile(local)
	plain := filepath.Join(dir, "local.csv")
	if _, errOut, code := memwho("export", "--db", db, "-o", plain); code != 0 {
		t.Fatalf("local export: exit %d: %s", code, errOut)
	}
	wantPlain, _ := os.ReadFile(plain)
	url := func(addr, name string) string {
		return "sftp://" + s.User + "@" + addr + filepath.Join(s.Dir, name)
	}

	t.Run("ok", func(t *testing.T) {
		_, errOut, code := memwho("export", "--db", db, "--gzip", "--upload", url(s.Addr, "x.csv.gz"),
			"--identity", s.IdentityFile, "--known-hosts", s.KnownHostsFile)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if got, _ := os.ReadFile(filepath.Join(s.Dir, "x.csv.gz")); !bytes.Equal(got, wantGz) {
			t.Errorf("uploaded file (%d bytes) differs from the local export (%d bytes)", len(got), len(wantGz))
		}
	})

	t.Run("connection cut", func(t *testing.T) {
		p := sshtest.NewProxy(t, s.Addr, func(n int) int64 {
			if n == 0 {
				return 64 << 10
			}
			return 0
		})
		kh := s.WriteKnownHosts(t, p.Addr, s.HostKey)
		_, errOut, code := memwho("export", "--db", db, "--upload", url(p.Addr, "cut.csv"),
			"--identity", s.IdentityFile, "--known-hosts", kh)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if !strings.Contains(errOut, "memwho: warning: upload attempt 1 of 4 failed") {
			t.Errorf("stderr does not report the retry:\n%s", errOut)
		}
		if got, _ := os.ReadFile(filepath.Join(s.Dir, "cut.csv")); !bytes.Equal(got, wantPlain) {
			t.Errorf("uploaded file (%d bytes) differs from the local export (%d bytes)", len(got), len(wantPlain))
		}
		assertNoFile(t, s.Dir, "cut.csv.tmp")
	})

	t.Run("retries exhausted", func(t *testing.T) {
		p := sshtest.NewProxy(t, s.Addr, func(n int) int64 { return 64 << 10 })
		kh := s.WriteKnownHosts(t, p.Addr, s.HostKey)
		_, errOut, code := memwho("export", "--db", db, "--upload", url(p.Addr, "never.csv"), "--retries", "1",
			"--identity", s.IdentityFile, "--known-hosts", kh)
		if code != 1 {
			t.Fatalf("exit %d, want 1: %s", code, errOut)
		}
		assertNoFile(t, s.Dir, "never.csv")
	})

	t.Run("wrong host key", func(t *testing.T) {
		kh := s.WriteKnownHosts(t, s.Addr, sshtest.NewKey(t).PublicKey())
		_, errOut, code := memwho("export", "--db", db, "--upload", url(s.Addr, "mitm.csv"),
			"--identity", s.IdentityFile, "--known-hosts", kh)
		if code != 1 || !strings.Contains(errOut, "HOST KEY MISMATCH") {
			t.Errorf("exit %d, stderr %q; want 1 and a host key mismatch", code, errOut)
		}
		assertNoFile(t, s.Dir, "mitm.csv")
	})

	t.Run("unknown host", func(t *testing.T) {
		kh := filepath.Join(t.TempDir(), "known_hosts")
		os.WriteFile(kh, nil, 0o600)
		_, errOut, code := memwho("export", "--db", db, "--upload", url(s.Addr, "unknown.csv"),
			"--identity", s.IdentityFile, "--known-hosts", kh)
		if code != 1 || !strings.Contains(errOut, "is not in "+kh) || !strings.Contains(errOut, "ssh-keyscan -p") {
			t.Errorf("exit %d, stderr %q; want 1, the unknown host and an ssh-keyscan hint", code, errOut)
		}
		assertNoFile(t, s.Dir, "unknown.csv")
	})
}

// assertNoFile fails if dir holds name or a temporary file of it.
func assertNoFile(t *testing.T, dir, name string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), name) {
			t.Errorf("%s exists after a failed upload", e.Name())
		}
	}
}
