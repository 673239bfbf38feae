package agent

// The tenth adversarial review (docs/safe.md): attacks on the metrics
// listeners' connection limit (limit.go), each as a client would make
// them, over real connections.

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// r10Listen starts the metrics listeners of p with the agent's own
// server settings, TCP on 127.0.0.1 unless p names a socket only;
// tweak, when not nil, changes the servers before they serve. It
// returns the last server (TCP, or the socket) and its address.
func r10Listen(t *testing.T, p Listeners, h http.Handler, tweak func(*Server)) (*Server, string) {
	t.Helper()
	if p.Socket == "" {
		p.TCP = "127.0.0.1:0"
	}
	if h == nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "figures\n") })
	}
	servers, err := p.Listen(h, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if tweak != nil {
		for _, s := range servers {
			tweak(s)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, servers) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	s := servers[len(servers)-1]
	return s, s.ln.Addr().String()
}

// r10Web is a web configuration with the user prometheus (password
// s3cret), over TLS when tlsOn; tc is the client's TLS configuration for
// it, nil without TLS.
func r10Web(t *testing.T, tlsOn bool) (web *WebConfig, tc *tls.Config) {
	t.Helper()
	dir := t.TempDir()
	cert := newTestCert(t, dir, "server")
	text := "basic_auth_users:\n  prometheus: " + hashOf(t, "s3cret") + "\n"
	if tlsOn {
		text = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n" + text
		tc = &tls.Config{RootCAs: cert.pool, ServerName: "127.0.0.1"}
	}
	web, err := LoadWebConfig(writeConfig(t, dir, text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return web, tc
}

// r10Scrape asks for /metrics on a new connection as Prometheus would
// (with the password when the listener has a web configuration), and
// returns the status.
func r10Scrape(addr string, tc *tls.Config, timeout time.Duration) (int, error) {
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: tc}}
	defer client.CloseIdleConnections()
	scheme := "http://"
	if tc != nil {
		scheme = "https://"
	}
	req, _ := http.NewRequest("GET", scheme+addr+"/metrics", nil)
	req.SetBasicAuth("prometheus", "s3cret")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// r10Dial opens a connection to addr (over TLS, handshake done, when tc
// is not nil), closed at the test's end.
func r10Dial(t *testing.T, network, addr string, tc *tls.Config) net.Conn {
	t.Helper()
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if tc != nil {
		tlsc := tls.Client(c, tc)
		tlsc.SetDeadline(time.Now().Add(5 * time.Second))
		if err := tlsc.Handshake(); err != nil {
			t.Fatal(err)
		}
		tlsc.SetDeadline(time.Time{})
		return tlsc
	}
	return c
}

// waitingChecks counts the goroutines in a password check (running one
// or waiting for its turn).
func waitingChecks() int {
	buf := make([]byte, 8<<20)
	n := runtime.Stack(buf, true)
	return strings.Count(string(buf[:n]), "(*basicAuth).check(")
}

// eventually polls cond for up to 5 s.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); ; {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func basicHeader(user, pass string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass)) + "\r\n"
}

// TestReview10BodyNeverSent: a request that announces a body (a length,
// chunks, or Expect: 100-continue) and never sends it. net/http reads up
// to 256 KiB of an unread body after the handler, to keep the connection,
// and the agent sets no read deadline past the headers: the connection
// stayed "serving" for ever, never closed for a newcomer, so two such
// connections locked out every scrape on a listener of 2, on --no-auth
// and, refused with 401, behind basic auth too. Requests with a body are
// now refused (413) and that read fails at once.
func TestReview10BodyNeverSent(t *testing.T) {
	heads := map[string]string{
		"length":   "Content-Length: 10\r\n",
		"chunked":  "Transfer-Encoding: chunked\r\n",
		"continue": "Content-Length: 10\r\nExpect: 100-continue\r\n",
	}
	for _, where := range []string{"no-auth", "basic-auth", "socket"} {
		for name, head := range heads {
			t.Run(where+"/"+name, func(t *testing.T) {
				p := Listeners{MaxConns: 2}
				network := "tcp"
				switch where {
				case "basic-auth":
					p.Web, _ = r10Web(t, false)
				case "socket":
					dir := t.TempDir()
					os.Chmod(dir, 0o700)
					p.Socket, p.SocketGID, network = filepath.Join(dir, "m.sock"), -1, "unix"
				}
				_, addr := r10Listen(t, p, nil, nil)
				var attackers []net.Conn
				for range 2 {
					c := r10Dial(t, network, addr, nil)
					io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n"+head+"\r\n")
					attackers = append(attackers, c)
				}
				time.Sleep(200 * time.Millisecond)
				var code int
				var err error
				if network == "unix" {
					c := r10Dial(t, "unix", addr, nil)
					c.SetDeadline(time.Now().Add(3 * time.Second))
					io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
					var resp *http.Response
					if resp, err = http.ReadResponse(bufio.NewReader(c), nil); err == nil {
						code = resp.StatusCode
					}
				} else {
					code, err = r10Scrape(addr, nil, 3*time.Second)
				}
				if err != nil || code != 200 {
					t.Fatalf("scrape: %d, %v; want 200", code, err)
				}
				// Each was answered and closed, not held.
				for i, c := range attackers {
					c.SetReadDeadline(time.Now().Add(3 * time.Second))
					resp, err := http.ReadResponse(bufio.NewReader(c), nil)
					if err != nil {
						continue // closed to make room before its answer: as good
					}
					if resp.StatusCode != http.StatusRequestEntityTooLarge {
						t.Errorf("connection %d: status %d, want 413", i, resp.StatusCode)
					}
					if !closedByServer(c) {
						t.Errorf("connection %d left open after refusing its body", i)
					}
				}
			})
		}
	}
}

// TestReview10PipelinedUnread: a client without a password pipelines
// requests and reads no answer. Its 401s fill the socket buffers, the
// server's write blocks, and the connection counted as serving a request
// (never closed) until the write timeout, --scrape-timeout + 30 s,
// renewed by reconnecting: two such connections locked scrapes out of a
// listener of 2. Only a request that passed the access check now keeps
// its connection from being closed for a newcomer.
func TestReview10PipelinedUnread(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "tls"}[tlsOn], func(t *testing.T) {
			web, tc := r10Web(t, tlsOn)
			_, addr := r10Listen(t, Listeners{MaxConns: 2, Web: web}, nil, nil)
			flood := strings.Repeat("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 100000)
			for range 2 {
				c := r10Dial(t, "tcp", addr, tc)
				go io.WriteString(c, flood) // ends when the test closes c
			}
			time.Sleep(500 * time.Millisecond)
			if code, err := r10Scrape(addr, tc, 3*time.Second); err != nil || code != 200 {
				t.Fatalf("scrape: %d, %v; want 200", code, err)
			}
		})
	}
}

// TestReview10WrongPasswordQueue: wrong passwords wait in turn for a
// bcrypt check (one at a time). Each waiting request counted as serving,
// so a few connections with wrong passwords held every slot for as long
// as bcrypt kept them queued, and a scrape whose password was known
// (remembered, no bcrypt) could not get a connection. A request waiting
// for its check may now be closed for a newcomer, and its wait ends with
// its connection, so closed requests do not pile up behind bcrypt. The
// check in progress is played by holding the semaphore.
func TestReview10WrongPasswordQueue(t *testing.T) {
	web, _ := r10Web(t, false)
	s, addr := r10Listen(t, Listeners{MaxConns: 2, Web: web}, nil, nil)
	if code, err := r10Scrape(addr, nil, 5*time.Second); err != nil || code != 200 {
		t.Fatalf("first scrape: %d, %v", code, err)
	}
	// Its connection gone, so that the newcomers below close none but
	// each other.
	ll := s.ln.(*limitListener)
	if !eventually(func() bool { return len(ll.slots) == 0 }) {
		t.Fatal("the first scrape's connection is still held")
	}
	base := waitingChecks()
	web.auth.sem <- struct{}{}
	released := false
	release := func() {
		if !released {
			released = true
			<-web.auth.sem
		}
	}
	defer release()
	wrong := "GET /metrics HTTP/1.1\r\nHost: x\r\n" + basicHeader("prometheus", "wrong") + "\r\n"
	for range 2 {
		io.WriteString(r10Dial(t, "tcp", addr, nil), wrong)
	}
	if !eventually(func() bool { return waitingChecks()-base == 2 }) {
		t.Fatalf("%d checks waiting, want 2", waitingChecks()-base)
	}
	if code, err := r10Scrape(addr, nil, 3*time.Second); err != nil || code != 200 {
		t.Fatalf("scrape with a remembered password while wrong ones wait: %d, %v; want 200", code, err)
	}
	// A flood of wrong passwords: each newcomer closes a waiting one,
	// whose check gives up; at most the slots' worth keep waiting.
	for range 30 {
		io.WriteString(r10Dial(t, "tcp", addr, nil), wrong)
		time.Sleep(2 * time.Millisecond)
	}
	if !eventually(func() bool { return waitingChecks()-base <= 2 }) {
		t.Errorf("%d checks waiting for a listener of 2 connections", waitingChecks()-base)
	}
	release()
}

// TestReview10HTTP2: net/http speaks HTTP/2 over TLS to a client that
// offers it, and an HTTP/2 connection carries up to 250 requests at
// once: 200 wrong-password requests on one connection all waited for
// their check at once, on a listener of 2 connections (a request's
// headers, up to the header limit each, held meanwhile). The metrics
// listeners now speak HTTP/1.1 only (Prometheus' scrapes do). Unencrypted
// HTTP/2 (prior knowledge) is not served either.
func TestReview10HTTP2(t *testing.T) {
	web, tc := r10Web(t, true)
	_, addr := r10Listen(t, Listeners{MaxConns: 2, Web: web}, nil, nil)
	tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true, MaxConnsPerHost: 1}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "https://"+addr+"/metrics", nil)
	req.SetBasicAuth("prometheus", "s3cret")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Proto != "HTTP/1.1" || resp.StatusCode != 200 {
		t.Errorf("scrape offering h2: %s %d, want HTTP/1.1 200", resp.Proto, resp.StatusCode)
	}

	base := waitingChecks()
	web.auth.sem <- struct{}{}
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", "https://"+addr+"/metrics", nil)
			req.SetBasicAuth("prometheus", "wrong")
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	n := waitingChecks() - base
	<-web.auth.sem
	wg.Wait()
	if n > 2 {
		t.Errorf("%d requests in their password check at once, on one connection to a listener of 2", n)
	}

	// h2c with prior knowledge, on a plain listener.
	_, plain := r10Listen(t, Listeners{MaxConns: 2}, nil, nil)
	c := r10Dial(t, "tcp", plain, nil)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	b, _ := io.ReadAll(c)
	if len(b) > 0 && !strings.HasPrefix(string(b), "HTTP/1.1 ") {
		t.Errorf("answer to an HTTP/2 preface: %q", b)
	}
}

// TestReview10HeaderMemory: the header limit bounds the bytes, not the
// memory: 36 KiB of headers with short names ("0:" to "1fff:") took
// 508 KiB of heap per connection while the headers were still coming
// (net/http's map of them), 32 MiB for 64 connections, and the agent from
// 27 to 90 MiB of RSS (the unit's MemoryMax is 128M). The limit is now
// 4 KiB (8 KiB on the wire: net/http allows 4,096 bytes more), about
// 130 KiB a connection at worst. A scrape's headers (under 1 KiB) and
// 3 KiB more still pass.
func TestReview10HeaderMemory(t *testing.T) {
	_, addr := r10Listen(t, Listeners{MaxConns: 64}, nil, nil)
	var b strings.Builder
	b.WriteString("GET /metrics HTTP/1.1\r\nHost: x\r\n")
	for i := 0; b.Len() < 36<<10; i++ {
		fmt.Fprintf(&b, "%x:\r\n", i)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse
	const n = 32
	for range n {
		c := r10Dial(t, "tcp", addr, nil)
		// Up to the limit (past it, the server refuses and closes),
		// and no blank line: the headers are still coming.
		io.WriteString(c, b.String()[:min(b.Len(), maxHeaderBytes+4096-64)])
	}
	time.Sleep(500 * time.Millisecond)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	per := (int64(ms.HeapInuse) - int64(before)) / n
	t.Logf("%d KiB of heap per connection sending headers", per>>10)
	if per > 256<<10 {
		t.Errorf("%d KiB of heap per connection sending headers, want at most 256", per>>10)
	}
	for _, tc := range []struct {
		pad, want int
	}{{3 << 10, 200}, {9 << 10, 431}} {
		c := r10Dial(t, "tcp", addr, nil)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain;version=0.0.4;q=0.2,*/*;q=0.1\r\nX-Pad: "+strings.Repeat("a", tc.pad)+"\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%d bytes of padding: %v", tc.pad, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%d bytes of padding: %d, want %d", tc.pad, resp.StatusCode, tc.want)
		}
	}
}

// TestReview10TLSHandshakeMemory: a ClientHello of 64 KiB (the most a
// TLS handshake message may be) sent in 16 KiB records, all but its last
// byte: held while the handshake waits, like headers, it costs about
// 110 KiB a connection, no more than headers at their limit.
func TestReview10TLSHandshakeMemory(t *testing.T) {
	web, _ := r10Web(t, true)
	_, addr := r10Listen(t, Listeners{MaxConns: 64, Web: web}, nil, nil)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse
	const n = 32
	size := 65532
	for range n {
		c := r10Dial(t, "tcp", addr, nil)
		msg := make([]byte, 4+size)
		msg[0], msg[1], msg[2], msg[3] = 1, byte(size>>16), byte(size>>8), byte(size) // ClientHello
		msg[4], msg[5] = 3, 3
		msg = msg[:len(msg)-1]
		for len(msg) > 0 {
			k := min(len(msg), 16<<10)
			c.Write(append([]byte{0x16, 3, 1, byte(k >> 8), byte(k)}, msg[:k]...))
			msg = msg[k:]
		}
	}
	time.Sleep(500 * time.Millisecond)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	per := (int64(ms.HeapInuse) - int64(before)) / n
	t.Logf("%d KiB of heap per connection in its handshake", per>>10)
	if per > 256<<10 {
		t.Errorf("%d KiB of heap per connection in its handshake, want at most 256", per>>10)
	}
}
