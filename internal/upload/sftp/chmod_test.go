//go:build !nosftp

package sftp

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/memwho/memwho/internal/upload/sshtest"
)

// TestChmodRefused: on a server that refuses to change a file's
// mode (internal-sftp -P fsetstat,setstat), the upload fails before the
// producer writes its first byte: no world-readable export, not even a
// partial temporary one, is left on the server.
func TestChmodRefused(t *testing.T) {
	s := sshtest.StartDenying(t, "fsetstat,setstat")
	var wrote atomic.Int64
	produce := func(ctx context.Context, w io.Writer) error {
		n, err := w.Write([]byte("pid,user,pss\\n1,root,1234\\n"))
		wrote.Add(int64(n))
		return err
	}
	cfg := config(t, s, s.Addr, s.KnownHostsFile, "secret.csv")
	cfg.Retries = 0
	_, err := Upload(context.Background(), cfg, produce)
	if err == nil {
		fi, _ := os.Stat(filepath.Join(s.Dir, "secret.csv"))
		t.Fatalf("Upload succeeded on a server refusing chmod (mode %v)", fi.Mode())
	}
	if !strings.Contains(err.Error(), "chmod") {
		t.Errorf("error %q does not say chmod failed", err)
	}
	if n := wrote.Load(); n != 0 {
		t.Errorf("the producer wrote %d bytes before the mode was set", n)
	}
	if names := files(t, s.Dir); len(names) != 0 {
		t.Errorf("left on the server: %q", names)
	}
}

// TestNoDataBeforeChmod: on a server that takes the chmod, the
// temporary file is already 0600 when the first byte reaches it, even
// with a umask that would make it world-readable.
func TestNoDataBeforeChmod(t *testing.T) {
	s := sshtest.Start(t)
	var modes []os.FileMode
	produce := func(ctx context.Context, w io.Writer) error {
		// The temporary file exists, empty, when the producer starts.
		ents, _ := os.ReadDir(s.Dir)
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				modes = append(modes, fi.Mode().Perm())
			}
		}
		_, err := w.Write([]byte("x"))
		return err
	}
	cfg := config(t, s, s.Addr, s.KnownHostsFile, "ok.csv")
	if _, err := Upload(context.Background(), cfg, produce); err != nil {
		t.Fatal(err)
	}
	if len(modes) == 0 {
		t.Fatal("no temporary file when the producer started")
	}
	for _, m := range modes {
		if m&0o077 != 0 {
			t.Errorf("a file in the upload directory was %v when the producer started", m)
		}
	}
	if fi, err := os.Stat(filepath.Join(s.Dir, "ok.csv")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("uploaded file: %v %v", err, fi)
	}
}
