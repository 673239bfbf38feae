package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/proc/proctest"
	"golang.org/x/crypto/bcrypt"
)

// syncBuffer is a bytes.Buffer that serve's goroutine writes while the
// test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// unixClient speaks HTTP over the unix socket at path.
func unixClient(path string) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}
}

func get(t *testing.T, c *http.Client, url, user, pass string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeListeners runs `memwho serve` with the metrics socket, the
// debug socket and a TCP listener behind basic auth: the figures come
// from the socket and, with the password, from TCP; pprof answers on
// the debug socket only; the sockets have their modes and are removed
// at exit.
func TestServeListeners(t *testing.T) {
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	web := filepath.Join(dir, "web.yml")
	os.WriteFile(web, []byte("basic_auth_users:\n  prometheus: "+string(hash)+"\n"), 0o600)
	sock := filepath.Join(dir, "run", "memwho.sock")
	dbg := filepath.Join(dir, "run", "debug.sock")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--proc", root, "--conns=false",
			"--socket", sock, "--debug-socket", dbg,
			"--listen", "127.0.0.1:0", "--web-config", web}, io.Discard, &stderr)
	}()
	addrRE := regexp.MustCompile(`serving metrics on http://(127\.0\.0\.1:\d+)/metrics \(basic auth\)`)
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; {
		if m := addrRE.FindStringSubmatch(stderr.String()); m != nil && strings.Contains(stderr.String(), "serving pprof") {
			addr = m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d:\n%s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	for path, want := range map[string]fs.FileMode{sock: 0o660 | fs.ModeSocket, dbg: 0o600 | fs.ModeSocket, filepath.Dir(sock): 0o750 | fs.ModeDir} {
		if st, err := os.Lstat(path); err != nil || st.Mode() != want {
			t.Errorf("%s: %v %v, want mode %v", path, st.Mode(), err, want)
		}
	}

	metrics := unixClient(sock)
	if code, body := get(t, metrics, "http://localhost/metrics", "", ""); code != 200 || !strings.Contains(body, `memwho_group_processes{group="helper"} 3`) {
		t.Errorf("metrics socket: %d\n%.300s", code, body)
	}
	if code, _ := get(t, metrics, "http://localhost/debug/pprof/", "", ""); code == 200 {
		t.Error("pprof answers on the metrics socket")
	}
	if code, body := get(t, unixClient(dbg), "http://localhost/debug/pprof/", "", ""); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("debug socket: %d\n%.300s", code, body)
	}

	tcp := &http.Client{Timeout: 10 * time.Second}
	base := "http://" + addr
	if code, body := get(t, tcp, base+"/metrics", "", ""); code != 401 || strings.Contains(body, "memwho_") {
		t.Errorf("TCP without credentials: %d, want 401\n%.300s", code, body)
	}
	if code, _ := get(t, tcp, base+"/metrics", "prometheus", "wrong"); code != 401 {
		t.Errorf("TCP, wrong password: %d, want 401", code)
	}
	if code, body := get(t, tcp, base+"/metrics", "prometheus", "s3cret"); code != 200 || !strings.Contains(body, `memwho_group_processes{group="helper"} 3`) {
		t.Errorf("TCP, right password: %d, want 200\n%.300s", code, body)
	}
	if code, _ := get(t, tcp, base+"/debug/pprof/", "prometheus", "s3cret"); code == 200 {
		t.Error("pprof answers on TCP")
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d:\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	for _, p := range []string{sock, dbg} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after exit: %v, want it removed", p, err)
		}
	}
}

// TestServeTCPRefused: TCP without --web-config is refused with exit
// code 2, before anything listens, and says how to proceed.
func TestServeTCPRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "--listen", addr}, &stdout, &stderr)
	if code != cli.ExitUsage {
		t.Errorf("exit %d, want %d", code, cli.ExitUsage)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if !strings.HasPrefix(lines[0], "memwho: error: --listen "+addr+" needs --web-config FILE") || !strings.Contains(lines[0], "--no-auth") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	if stdout.Len() > 0 {
		t.Errorf("stdout: %q", stdout.String())
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("something listens on %s", addr)
	}
}

// TestServeWebConfigFileAlias: node_exporter's --web.config.file is
// --web-config, so that its command lines carry over: both spellings
// read the file they name.
func TestServeWebConfigFileAlias(t *testing.T) {
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	missing := filepath.Join(t.TempDir(), "no-such-web.yml")
	for _, flagName := range []string{"--web-config", "--web.config.file"} {
		var stderr syncBuffer
		code := run(context.Background(), []string{"serve", "--proc", root, "--conns=false", "--once",
			"--listen", "127.0.0.1:0", flagName, missing}, io.Discard, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), "no-such-web.yml") {
			t.Errorf("%s %s: exit %d, stderr %q: want the file named in an error", flagName, missing, code, stderr.String())
		}
	}
}
