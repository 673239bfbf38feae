package agent

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// listenLimited starts the agent's metrics listeners of p (TCP on
// 127.0.0.1) with handler h (nil: one that answers "figures"), and
// returns the TCP address and the server.
func listenLimited(t *testing.T, p Listeners, h http.Handler) (string, *Server) {
	t.Helper()
	s, addr := serveLimited(t, p, h, nil)
	return addr, s
}

// countOpen returns how many of conns the server still holds open.
func countOpen(conns []net.Conn) int {
	n := 0
	for _, c := range conns {
		if !closedByServer(c) {
			n++
		}
	}
	return n
}

// askAndKeep sends one request on a new connection (with no
// credentials), reads the whole answer, checks its status, and leaves the
// connection open (idle, kept alive).
func askAndKeep(t *testing.T, addr string, tc *tls.Config, status int) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if tc != nil {
		c = tls.Client(c, tc)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != status {
		t.Fatalf("answer %d %q, want status %d", resp.StatusCode, body, status)
	}
	c.SetDeadline(time.Time{})
	return c
}

// closedByServer reports whether the server closed c (a read ends at
// once), as against c being held open (the read times out).
func closedByServer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	defer c.SetReadDeadline(time.Time{})
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestMaxConnectionsIdle: a client that opens connection after
// connection, each asking once and then staying idle, holds at most
// --max-connections of them: each new one closes the longest idle, so
// the agent's descriptors and memory stay bounded and a new scrape is
// answered at once. Unbounded, 5,000 such connections took 96 MiB. With
// TLS and basic auth the client has no password: each of its requests
// is refused (401), and its connection then idles all the same.
func TestMaxConnectionsIdle(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		name := "plain"
		if tlsOn {
			name = "tls"
		}
		t.Run(name, func(t *testing.T) {
			p := Listeners{MaxConns: 4}
			var tc *tls.Config
			status := 200
			if tlsOn {
				dir := t.TempDir()
				cert := newTestCert(t, dir, "server")
				cfg, err := LoadWebConfig(writeConfig(t, dir, "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prometheus: "+hashOf(t, "s3cret")+"\n"), nil)
				if err != nil {
					t.Fatal(err)
				}
				p.Web = cfg
				tc = &tls.Config{RootCAs: cert.pool, ServerName: "127.0.0.1"}
				status = 401
			}
			addr, _ := listenLimited(t, p, nil)
			var conns []net.Conn
			for range 40 {
				conns = append(conns, askAndKeep(t, addr, tc, status))
			}
			// The server holds the limit: the newest, and three of the
			// others (the longest idle by the server's clock, which a
			// busy machine may order otherwise than the client).
			if open := countOpen(conns); open != 4 {
				t.Errorf("%d of %d connections held open, want 4", open, len(conns))
			}
			if closedByServer(conns[len(conns)-1]) {
				t.Error("the newest connection was closed")
			}
			// A scrape through net/http's client is answered at once.
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
			defer client.CloseIdleConnections()
			scheme := "http://"
			if tlsOn {
				scheme = "https://"
			}
			start := time.Now()
			req, _ := http.NewRequest("GET", scheme+addr+"/metrics", nil)
			req.SetBasicAuth("prometheus", "s3cret")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("scrape: %d", resp.StatusCode)
			}
			// Closing an idle TLS connection must not wait for its
			// peer (tls.Conn.Close's alert may block 5 s).
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("scrape took %v", d)
			}
		})
	}
}

// TestMaxConnectionsSilent: connections that send nothing hold no slot
// against a newcomer: the one that has waited the longest is closed to
// make room, so a flood of silent connections cannot lock a scrape out.
func TestMaxConnectionsSilent(t *testing.T) {
	addr, _ := listenLimited(t, Listeners{MaxConns: 2}, nil)
	var silent []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	time.Sleep(50 * time.Millisecond)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !closedByServer(silent[0]) {
		t.Error("the oldest silent connection was not closed to make room")
	}
	if closedByServer(silent[1]) {
		t.Error("the newer silent connection was closed too")
	}
}

// TestMaxConnectionsBusy: a connection serving a request is not closed
// for a newcomer whose source or address holds as many, or one fewer; a
// newcomer finding every slot busy, with no source or address two ahead
// of any other, waits for one to end. (From an address that holds a slot, when one
// holds two, it is closed instead: TestHogQueuesAhead.)
func TestMaxConnectionsBusy(t *testing.T) {
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started.Done()
			<-release
		}
		io.WriteString(w, "figures\n")
	})
	// Two sources: IPv4 loopback, all one, and ::1, on a dual-stack
	// listener.
	if ln, err := net.Listen("tcp", "[::]:0"); err != nil {
		t.Skipf("no dual-stack listener: %v", err)
	} else {
		ln.Close()
	}
	addr, _ := listenLimited(t, Listeners{TCP: "[::]:0", MaxConns: 2}, h)
	_, port, _ := net.SplitHostPort(addr)
	v4, v6 := "http://"+net.JoinHostPort("127.0.0.1", port), "http://"+net.JoinHostPort("::1", port)
	slow := make(chan error, 2)
	for _, ip := range []string{"127.0.0.1", "::1"} {
		base := v4
		if ip == "::1" {
			base = v6
		}
		go func() {
			resp, err := fromIP(ip).Get(base + "/slow")
			if err == nil {
				resp.Body.Close()
			}
			slow <- err
		}()
	}
	started.Wait()
	answered := make(chan error, 1)
	go func() {
		resp, err := fromIP("127.0.0.2").Get(v4 + "/metrics")
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("answered (%v) while both slots served requests", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	for range 2 {
		if err := <-slow; err != nil {
			t.Errorf("a request in progress failed: %v", err)
		}
	}
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not answered after the requests ended")
	}
}

// TestLimitListenerClose: closing the listener ends an Accept waiting
// for a slot, and closes the connection it had accepted.
func TestLimitListenerClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ll := newLimitListener(ln, 1)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	held, err := ll.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	waiting, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	done := make(chan error, 1)
	go func() {
		_, err := ll.Accept()
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	ll.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waiting after Close")
	}
	if !closedByServer(waiting) {
		t.Error("the connection waiting for a slot was left open")
	}
	// Closing a connection twice frees its slot once.
	held.Close()
	held.Close()
	if n := len(ll.slots); n != 0 {
		t.Errorf("%d slots taken after the connection closed, want 0", n)
	}
}

// TestMaxConnectionsSocket: the metrics unix socket is bounded the same
// way, for the members of its group.
func TestMaxConnectionsSocket(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	sock := filepath.Join(dir, "m.sock")
	serveLimited(t, Listeners{Socket: sock, SocketGID: -1, MaxConns: 3}, nil, nil)
	var conns []net.Conn
	for range 10 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "figures") {
			t.Fatalf("answer %q", b)
		}
		conns = append(conns, c)
	}
	if open := countOpen(conns); open != 3 {
		t.Errorf("%d connections held open, want 3", open)
	}
}

// TestMaxHeaderBytes: a request whose headers pass the limit is refused
// (431) instead of being held in memory up to net/http's 1 MiB.
func TestMaxHeaderBytes(t *testing.T) {
	addr, _ := listenLimited(t, Listeners{}, nil)
	for _, tc := range []struct {
		size int
		want int
	}{{1 << 10, 200}, {40 << 10, 431}} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: "+strings.Repeat("a", tc.size)+"\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%d bytes of headers: %v", tc.size, err)
		}
		resp.Body.Close()
		c.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%d bytes of headers: status %d, want %d", tc.size, resp.StatusCode, tc.want)
		}
	}
}

// fromIP is an HTTP client whose connections come from ip, a loopback
// address of its own: another source to the limit.
func fromIP(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestMaxConnectionsHog: a client allowed to ask that holds every slot
// with requests it never lets end (answers it does not read keep a
// connection served until the write timeout) does not lock other
// sources out: a newcomer from another address closes the hog's
// longest-served connection. A source holding one slot more than the
// newcomer's keeps it (TestMaxConnectionsBusy: all from one address).
func TestMaxConnectionsHog(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var started sync.WaitGroup
	started.Add(4)
	addr, _ := listenLimited(t, Listeners{MaxConns: 4}, slowHandler(release, &started))
	hogs := holdSlots(t, fromIP("127.0.0.1"), "http://"+addr, 4, &started)
	resp, err := fromIP("127.0.0.2").Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("a newcomer from another address: %v", err)
	}
	resp.Body.Close()
	wantCut(t, hogs)
}

// TestSourceOf: TCP peers are told apart by address (loopback ones
// within one source), unix-socket peers by user.
func TestSourceOf(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 3)}}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := sourceOf(s), newPeer("127.0.0.0/8", "127.0.0.3"); got != want {
		t.Errorf("TCP peer %q, want %q", got, want)
	}

	sock := filepath.Join(t.TempDir(), "s.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	uc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	us, err := uln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer us.Close()
	uid := "uid " + strconv.Itoa(os.Getuid())
	if got, want := sourceOf(us), newPeer(uid); got != want {
		t.Errorf("unix source %q, want %q", got, want)
	}
}
