//go:build !nosftp

package sftp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/upload/sshtest"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Target
		err  bool
	}{
		{in: "sftp://alice@example.com/srv/drop/x.csv.gz", want: Target{"alice", "example.com", 22, "/srv/drop/x.csv.gz"}},
		{in: "sftp://alice@example.com:2222/x.csv", want: Target{"alice", "example.com", 2222, "/x.csv"}},
		{in: "sftp://example.com/~/exports/x.csv", want: Target{"me", "example.com", 22, "exports/x.csv"}},
		{in: "sftp://bob@[::1]:22/tmp/x", want: Target{"bob", "::1", 22, "/tmp/x"}},
		{in: "sftp://b%40corp@host/x", want: Target{"b@corp", "host", 22, "/x"}},
		{in: "sftp://alice:secret@host/x", err: true},
		{in: "scp://host/x", err: true},
		{in: "sftp://host", err: true},
		{in: "sftp://host/", err: true},
		{in: "sftp://host/dir/", err: true},
		{in: "sftp://host/~/", err: true},
		{in: "sftp://host:0/x", err: true},
		{in: "sftp://host:99999/x", err: true},
		{in: "sftp://host/x?y=1", err: true},
		{in: "sftp:host/x", err: true},
		// Found by FuzzParseURL: no host name; a path or zone that
		// String printed unescaped.
		{in: "sftp://:/0", err: true},
		{in: "sftp://u@:22/x", err: true},
		{in: "sftp://::/0", err: true},
		{in: "sftp://u@a:b:22/x", err: true},
		{in: "sftp://u@h/a%3Fb%23c%25d", want: Target{"u", "h", 22, "/a?b#c%d"}},
		{in: "sftp://u@[fe80::1%25eth0]:2222/x", want: Target{"u", "fe80::1%eth0", 2222, "/x"}},
		{in: "/local/path", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseURL(tc.in, "me")
			if tc.err {
				if err == nil {
					t.Errorf("ParseURL(%q) = %+v, want an error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseURL(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("ParseURL(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			back, err := ParseURL(got.String(), "nobody")
			if err != nil || back != got {
				t.Errorf("ParseURL(%q.String() = %q) = %+v, %v; want %+v", tc.in, got.String(), back, err, got)
			}
		})
	}
}

// payload is size bytes of incompressible data, the same for every call
// of its producer; calls counts the calls.
func payload(size int) ([]byte, Producer, *atomic.Int32) {
	data := make([]byte, size)
	r := rand.NewChaCha8([32]byte{1})
	r.Read(data)
	var calls atomic.Int32
	return data, func(ctx context.Context, w io.Writer) error {
		calls.Add(1)
		// Small writes, as a CSV stream makes them.
		for p := data; len(p) > 0; {
			k := min(len(p), 10_000)
			if _, err := w.Write(p[:k]); err != nil {
				return err
			}
			p = p[k:]
		}
		return nil
	}, &calls
}

func config(t *testing.T, s *sshtest.Server, addr, knownHosts, name string) Config {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	tgt, err := ParseURL("sftp://"+s.User+"@"+net.JoinHostPort(host, port)+filepath.Join(s.Dir, name), "")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cb, algos, err := KnownHosts(addr, f)
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Target:            tgt,
		HostKeyCallback:   cb,
		HostKeyAlgorithms: algos,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(s.Signer)},
		Backoff:           10 * time.Millisecond,
		Timeout:           20 * time.Second,
		Logf:              t.Logf,
	}
}

// files lists the names in dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func wantFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("uploaded file: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("uploaded file has %d bytes, differs from the %d bytes produced", len(got), len(want))
	}
}

func TestUpload(t *testing.T) {
	s := sshtest.Start(t)
	ctx := context.Background()

	t.Run("ok", func(t *testing.T) {
		data, produce, calls := payload(3 << 20)
		cfg := config(t, s, s.Addr, s.KnownHostsFile, "ok.bin")
		res, err := Upload(ctx, cfg, produce)
		if err != nil {
			t.Fatalf("Upload: %v", err)
		}
		if res.Bytes != int64(len(data)) || res.Attempts != 1 || calls.Load() != 1 {
			t.Errorf("Upload = %+v after %d producer calls, want %d bytes in 1 attempt", res, calls.Load(), len(data))
		}
		wantFile(t, filepath.Join(s.Dir, "ok.bin"), data)
		// Private, as -o makes it: it was 0644 on the server (audit of
		// 2026-11-26).
		if fi, err := os.Stat(filepath.Join(s.Dir, "ok.bin")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("uploaded file: %v, mode %v, want 0600", err, fi.Mode().Perm())
		}

		// Again: the new file replaces the old one.
		data2, produce2, _ := payload(1000)
		if _, err := Upload(ctx, cfg, produce2); err != nil {
			t.Fatalf("second Upload: %v", err)
		}
		wantFile(t, filepath.Join(s.Dir, "ok.bin"), data2)
		if got := files(t, s.Dir); !slices.Equal(got, []string{"ok.bin"}) {
			t.Errorf("upload directory holds %q, want only ok.bin", got)
		}
	})

	t.Run("agent", func(t *testing.T) {
		keyring := agent.NewKeyring()
		_, priv := sshtestKey(t, s)
		if err := keyring.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(t.TempDir(), "agent.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go agent.ServeAgent(keyring, c)
			}
		}()
		auth, closer, err := Agent(sock)
		if err != nil {
			t.Fatal(err)
		}
		defer closer.Close()
		data, produce, _ := payload(1 << 20)
		cfg := config(t, s, s.Addr, s.KnownHostsFile, "agent.bin")
		cfg.Auth = []ssh.AuthMethod{auth}
		if _, err := Upload(ctx, cfg, produce); err != nil {
			t.Fatalf("Upload with ssh-agent: %v", err)
		}
		wantFile(t, filepath.Join(s.Dir, "agent.bin"), data)
	})

	t.Run("producer fails", func(t *testing.T) {
		errDB := errors.New("database went away")
		var calls atomic.Int32
		cfg := config(t, s, s.Addr, s.KnownHostsFile, "fail.bin")
		cfg.Retries = 3
		_, err := Upload(ctx, cfg, func(ctx context.Context, w io.Writer) error {
			calls.Add(1)
			w.Write(make([]byte, 1<<20))
			return errDB
		})
		if !errors.Is(err, errDB) {
			t.Errorf("Upload error = %v, want %v", err, errDB)
		}
		if calls.Load() != 1 {
			t.Errorf("producer called %d times, want 1 (not retried)", calls.Load())
		}
		assertAbsent(t, s.Dir, "fail.bin")
	})

	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		cfg := config(t, s, s.Addr, s.KnownHostsFile, "canceled.bin")
		cfg.Retries = 3
		_, err := Upload(ctx, cfg, func(ctx context.Context, w io.Writer) error {
			w.Write(make([]byte, 1<<20))
			cancel() // as SIGINT would
			<-ctx.Done()
			return ctx.Err()
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Upload error = %v, want %v", err, context.Canceled)
		}
		assertAbsent(t, s.Dir, "canceled.bin")
	})

	t.Run("no such directory", func(t *testing.T) {
		_, produce, _ := payload(10)
		cfg := config(t, s, s.Addr, s.KnownHostsFile, "missing/x.bin")
		cfg.Retries = 3
		res, err := Upload(ctx, cfg, produce)
		var ue *Error
		if !errors.As(err, &ue) || ue.Transient || res.Attempts != 1 {
			t.Errorf("Upload = %+v, %v; want a permanent error after 1 attempt", res, err)
		}
	})

	t.Run("key not authorized", func(t *testing.T) {
		_, produce, calls := payload(10)
		cfg := config(t, s, s.Addr, s.KnownHostsFile, "denied.bin")
		cfg.Auth = []ssh.AuthMethod{ssh.PublicKeys(sshtest.NewKey(t))}
		cfg.Retries = 3
		res, err := Upload(ctx, cfg, produce)
		if err == nil || res.Attempts != 1 || calls.Load() != 0 {
			t.Errorf("Upload = %+v, %v after %d producer calls; want an error after 1 attempt and no producer call", res, err, calls.Load())
		}
		assertAbsent(t, s.Dir, "denied.bin")
	})
}

// sshtestKey returns the server's authorized key as a crypto key for the
// agent.
func sshtestKey(t *testing.T, s *sshtest.Server) (ssh.Signer, any) {
	t.Helper()
	b, err := os.ReadFile(s.IdentityFile)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := ssh.ParseRawPrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return s.Signer, priv
}

func assertAbsent(t *testing.T, dir, name string) {
	t.Helper()
	for _, n := range files(t, dir) {
		if n == name || (len(n) > len(name) && n[:len(name)] == name) {
			t.Errorf("%s exists in the upload directory after a failed upload", n)
		}
	}
}

// TestHostKeyChecked: an unknown or changed host key stops the upload
// before anything is sent.
func TestHostKeyChecked(t *testing.T) {
	s := sshtest.Start(t)
	for _, tc := range []struct {
		name       string
		knownHosts string
		mismatch   bool
	}{
		{"changed key", s.WriteKnownHosts(t, s.Addr, sshtest.NewKey(t).PublicKey()), true},
		{"unknown host", s.WriteKnownHosts(t, "[otherhost]:22", s.HostKey), false},
		{"empty known_hosts", emptyFile(t), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, produce, calls := payload(1000)
			cfg := config(t, s, s.Addr, tc.knownHosts, "hostkey.bin")
			cfg.Retries = 3
			res, err := Upload(context.Background(), cfg, produce)
			var he *HostKeyError
			if !errors.As(err, &he) {
				t.Fatalf("Upload error = %v, want a HostKeyError", err)
			}
			if got := len(he.Known) > 0; got != tc.mismatch {
				t.Errorf("HostKeyError %q: mismatch = %v, want %v", he, got, tc.mismatch)
			}
			if msg := he.Error(); !strings.Contains(msg, tc.knownHosts) || strings.Contains(msg, "/proc/self/fd") {
				t.Errorf("HostKeyError %q does not name the file %s", msg, tc.knownHosts)
			}
			if res.Attempts != 1 || calls.Load() != 0 {
				t.Errorf("%d attempts, %d producer calls; want 1 attempt and none", res.Attempts, calls.Load())
			}
			t.Logf("error: %v", err)
			assertAbsent(t, s.Dir, "hostkey.bin")
		})
	}
}

func emptyFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKnownHostsAlgorithms: known_hosts holds the server's ed25519 key
// only, and x/crypto/ssh would ask for its ECDSA key first; KnownHosts's
// algorithm list makes the known key the one negotiated.
func TestKnownHostsAlgorithms(t *testing.T) {
	s := sshtest.Start(t)
	_, produce, _ := payload(100)
	cfg := config(t, s, s.Addr, s.KnownHostsFile, "algos.bin")
	if got, want := cfg.HostKeyAlgorithms, []string{ssh.KeyAlgoED25519}; !slices.Equal(got, want) {
		t.Errorf("KnownHosts algorithms = %q, want %q", got, want)
	}
	if _, err := Upload(context.Background(), cfg, produce); err != nil {
		t.Errorf("Upload with the known algorithms: %v", err)
	}
	cfg.HostKeyAlgorithms = nil
	var he *HostKeyError
	if _, err := Upload(context.Background(), cfg, produce); !errors.As(err, &he) {
		t.Errorf("Upload with x/crypto's default algorithms: %v, want a HostKeyError (is the server's ECDSA key in use?)", err)
	}
}

// TestUploadConnectionCut cuts the SSH connection in the middle of the
// transfer with a proxy that closes it after a number of bytes.
func TestUploadConnectionCut(t *testing.T) {
	s := sshtest.Start(t)
	const size = 4 << 20
	const cutAfter = 1 << 20 // well past the handshake, well before the end

	t.Run("retry succeeds", func(t *testing.T) {
		p := sshtest.NewProxy(t, s.Addr, func(n int) int64 {
			if n == 0 {
				return cutAfter
			}
			return 0
		})
		data, produce, calls := payload(size)
		cfg := config(t, s, p.Addr, s.WriteKnownHosts(t, p.Addr, s.HostKey), "cut.bin")
		cfg.Retries = 2
		res, err := Upload(context.Background(), cfg, produce)
		if err != nil {
			t.Fatalf("Upload: %v", err)
		}
		if res.Attempts != 2 || calls.Load() != 2 {
			t.Errorf("Upload = %+v with %d producer calls, want 2 attempts and 2 calls", res, calls.Load())
		}
		wantFile(t, filepath.Join(s.Dir, "cut.bin"), data)
		if got := files(t, s.Dir); !slices.Contains(got, "cut.bin") || slices.ContainsFunc(got, func(n string) bool { return len(n) > 8 && n[:8] == "cut.bin." }) {
			t.Errorf("upload directory holds %q, want cut.bin and no temporary file", got)
		}
	})

	t.Run("retries exhausted", func(t *testing.T) {
		p := sshtest.NewProxy(t, s.Addr, func(n int) int64 { return cutAfter })
		_, produce, calls := payload(size)
		cfg := config(t, s, p.Addr, s.WriteKnownHosts(t, p.Addr, s.HostKey), "gone.bin")
		cfg.Retries = 2
		res, err := Upload(context.Background(), cfg, produce)
		var ue *Error
		if !errors.As(err, &ue) || !ue.Transient {
			t.Fatalf("Upload error = %v, want a transient *Error", err)
		}
		if res.Attempts != 3 || calls.Load() != 3 {
			t.Errorf("Upload = %+v with %d producer calls, want 3 attempts", res, calls.Load())
		}
		if _, err := os.Stat(filepath.Join(s.Dir, "gone.bin")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("final name after a failed upload: %v, want it absent", err)
		}
		// Each attempt removed the previous one's temporary file; the last
		// one went with a fourth, short connection.
		assertAbsent(t, s.Dir, "gone.bin")
		if got := p.Conns(); got != 4 {
			t.Errorf("%d connections, want 4 (3 attempts and a clean-up)", got)
		}
	})
}
