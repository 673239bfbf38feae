package snapshot

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

// fakeAgent listens on a socket in a new directory and runs answer for
// every connection, closing it afterwards.
func fakeAgent(t *testing.T, answer func(c net.Conn)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "memwho.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				answer(c)
			}()
		}
	}()
	return path
}

// request reads the client's request byte.
func request(t *testing.T, c net.Conn) {
	var b [1]byte
	if _, err := c.Read(b[:]); err != nil {
		t.Errorf("reading the request: %v", err)
		return
	}
	if b[0] != Version {
		t.Errorf("request %d, want %d", b[0], Version)
	}
}

func writeAll(c net.Conn, b []byte) { c.Write(b) }

func TestFetch(t *testing.T) {
	taken := time.Unix(1795000000, 7)
	for _, tc := range []struct {
		name  string
		snap  *sample.Snapshot
		meta  Meta
		taken time.Time
	}{
		{"small", small(), Meta{Taken: taken}, taken},
		{"no-taken", small(), Meta{}, small().Time},
		{"hostile", hostile(), Meta{Taken: taken}, taken},
		// Larger than the first buffer: the growing path.
		{"large", synthetic(20000), Meta{Taken: taken}, taken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := EncodeMeta(nil, tc.snap, tc.meta)
			path := fakeAgent(t, func(c net.Conn) {
				request(t, c)
				writeAll(c, msg)
			})
			var s sample.Snapshot
			got, err := Fetch(path, 30*time.Second, &s)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tc.taken) {
				t.Errorf("taken %v, want %v", got, tc.taken)
			}
			if d := same(&s, tc.snap); d != "" {
				t.Error(d)
			}
		})
	}
}

// TestFetchUnavailable: the cases a caller falls back from silently.
func TestFetchUnavailable(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	regular := filepath.Join(dir, "file")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		path  string
		errno error
	}{
		{"absent", filepath.Join(dir, "none.sock"), syscall.ENOENT},
		{"absent-dir", filepath.Join(dir, "none", "memwho.sock"), syscall.ENOENT},
		{"not-a-dir", filepath.Join(regular, "memwho.sock"), syscall.ENOTDIR},
		{"stale", stale, syscall.ECONNREFUSED},
		{"regular-file", regular, syscall.ECONNREFUSED},
		{"too-long", "/" + strings.Repeat("x", 200), syscall.EINVAL},
		{"no-snapshot-yet", fakeAgent(t, func(c net.Conn) { request(t, c) }), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Fetch(tc.path, 5*time.Second, new(sample.Snapshot))
			if !errors.Is(err, ErrUnavailable) || tc.errno != nil && !errors.Is(err, tc.errno) {
				t.Errorf("got %v, want ErrUnavailable and %v", err, tc.errno)
			}
		})
	}
	// An agent that hangs up at once: EPIPE, ECONNRESET or an empty
	// answer, whichever comes first; all mean nothing to use.
	t.Run("hangs-up", func(t *testing.T) {
		path := fakeAgent(t, func(c net.Conn) {})
		for range 20 {
			if _, err := Fetch(path, 30*time.Second, new(sample.Snapshot)); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("got %v, want ErrUnavailable", err)
			}
		}
	})
}

// TestFetchBadAnswer: what an agent (or whatever listens there) may
// answer that the caller must report, and that no answer holds the
// client longer than its timeout or makes it allocate more than it
// received.
func TestFetchBadAnswer(t *testing.T) {
	good := Encode(nil, small())
	future := bytes.Clone(good)
	future[4] = Version + 1
	hold := func(c net.Conn) {
		// Keep the connection open until the client gives up.
		c.Read(make([]byte, 1))
	}
	for _, tc := range []struct {
		name   string
		answer func(c net.Conn)
		want   error
		text   string
	}{
		{"garbage-held-open", func(c net.Conn) {
			request(t, c)
			writeAll(c, []byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			hold(c)
		}, ErrMalformed, "not a memwho snapshot"},
		{"truncated", func(c net.Conn) { request(t, c); writeAll(c, good[:len(good)-10]) }, ErrMalformed, "cut short"},
		{"header-only", func(c net.Conn) { request(t, c); writeAll(c, good[:3]) }, ErrMalformed, "cut short: 3 bytes"},
		{"oversized-claim", func(c net.Conn) {
			request(t, c)
			b := bytes.Clone(good[:headerLen])
			b[5], b[6], b[7], b[8] = 0xff, 0xff, 0xff, 0xff
			writeAll(c, b)
			hold(c)
		}, ErrMalformed, "more than the"},
		{"trailing", func(c net.Conn) { request(t, c); writeAll(c, append(bytes.Clone(good), 'x')) }, ErrMalformed, "after the end"},
		{"endless", func(c net.Conn) {
			request(t, c)
			writeAll(c, good)
			junk := make([]byte, 1<<16)
			for {
				if _, err := c.Write(junk); err != nil {
					return
				}
			}
		}, ErrMalformed, "after the end"},
		{"future-version", func(c net.Conn) { request(t, c); writeAll(c, future) }, ErrVersion, "newer than this memwho"},
		{"silent", func(c net.Conn) { request(t, c); hold(c) }, ErrTimeout, "0 bytes received"},
		{"trickle", func(c net.Conn) {
			request(t, c)
			for i := range good {
				if _, err := c.Write(good[i : i+1]); err != nil {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}, ErrTimeout, "bytes received"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := fakeAgent(t, tc.answer)
			const timeout = 300 * time.Millisecond
			start := time.Now()
			_, err := Fetch(path, timeout, new(sample.Snapshot))
			took := time.Since(start)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("got %v, want %v with %q", err, tc.want, tc.text)
			}
			if errors.Is(err, ErrUnavailable) {
				t.Error("a bad answer is not ErrUnavailable: it must be reported")
			}
			// Not a speed goal: the timeout must bound the whole
			// exchange, however the bytes come.
			if took > timeout+2*time.Second {
				t.Errorf("took %v with a timeout of %v", took, timeout)
			}
		})
	}
}
