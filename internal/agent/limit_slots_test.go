package agent

// Attacks on the metrics listeners' connection limit (limit.go; tabled
// in docs/safe.md), each as a client would make them, over real
// connections.

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serveLimited starts the metrics listeners of p with the agent's own
// server settings, TCP on 127.0.0.1 unless p names a socket only;
// tweak, when not nil, changes the servers before they serve. It
// returns the last server (TCP, or the socket) and its address.
func serveLimited(t *testing.T, p Listeners, h http.Handler, tweak func(*Server)) (*Server, string) {
	t.Helper()
	if p.Socket == "" && p.TCP == "" {
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

// limitWebConfig is a web configuration with the user prometheus (password
// s3cret), over TLS when tlsOn; tc is the client's TLS configuration for
// it, nil without TLS.
func limitWebConfig(t *testing.T, tlsOn bool) (web *WebConfig, tc *tls.Config) {
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

// scrapeOnce asks for /metrics on a new connection as Prometheus would
// (with the password when the listener has a web configuration), and
// returns the status.
func scrapeOnce(addr string, tc *tls.Config, timeout time.Duration) (int, error) {
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

// limitDial opens a connection to addr (over TLS, handshake done, when tc
// is not nil), closed at the test's end.
func limitDial(t *testing.T, network, addr string, tc *tls.Config) net.Conn {
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

// TestBodyNeverSent: a request that announces a body (a length,
// chunks, or Expect: 100-continue) and never sends it. net/http reads up
// to 256 KiB of an unread body after the handler, to keep the connection,
// and the agent sets no read deadline past the headers: the connection
// stayed "serving" for ever, never closed for a newcomer, so two such
// connections locked out every scrape on a listener of 2, on --no-auth
// and, refused with 401, behind basic auth too. Requests with a body are
// now refused (413) and that read fails at once.
func TestBodyNeverSent(t *testing.T) {
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
					p.Web, _ = limitWebConfig(t, false)
				case "socket":
					dir := t.TempDir()
					os.Chmod(dir, 0o700)
					p.Socket, p.SocketGID, network = filepath.Join(dir, "m.sock"), -1, "unix"
				}
				_, addr := serveLimited(t, p, nil, nil)
				var attackers []net.Conn
				for range 2 {
					c := limitDial(t, network, addr, nil)
					io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n"+head+"\r\n")
					attackers = append(attackers, c)
				}
				time.Sleep(200 * time.Millisecond)
				var code int
				var err error
				if network == "unix" {
					c := limitDial(t, "unix", addr, nil)
					c.SetDeadline(time.Now().Add(3 * time.Second))
					io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
					var resp *http.Response
					if resp, err = http.ReadResponse(bufio.NewReader(c), nil); err == nil {
						code = resp.StatusCode
					}
				} else {
					code, err = scrapeOnce(addr, nil, 3*time.Second)
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

// TestPipelinedUnread: a client without a password pipelines
// requests and reads no answer. Its 401s fill the socket buffers, the
// server's write blocks, and the connection counted as serving a request
// (never closed) until the write timeout, --scrape-timeout + 30 s,
// renewed by reconnecting: two such connections locked scrapes out of a
// listener of 2. Only a request that passed the access check now keeps
// its connection from being closed for a newcomer.
func TestPipelinedUnread(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "tls"}[tlsOn], func(t *testing.T) {
			web, tc := limitWebConfig(t, tlsOn)
			_, addr := serveLimited(t, Listeners{MaxConns: 2, Web: web}, nil, nil)
			flood := strings.Repeat("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 100000)
			for range 2 {
				c := limitDial(t, "tcp", addr, tc)
				go io.WriteString(c, flood) // ends when the test closes c
			}
			time.Sleep(500 * time.Millisecond)
			if code, err := scrapeOnce(addr, tc, 3*time.Second); err != nil || code != 200 {
				t.Fatalf("scrape: %d, %v; want 200", code, err)
			}
		})
	}
}

// TestUnreadNoAuthWriteTimeout: on --no-auth every request is
// allowed, and one whose answers are not read keeps its slot until the
// write timeout; then the waiting scrape is answered. (The agent's write
// timeout is --scrape-timeout + 30 s; here 1 s.) What this leaves open is
// in docs/agent.md, "Connections".
func TestUnreadNoAuthWriteTimeout(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) })
	_, addr := serveLimited(t, Listeners{MaxConns: 1}, h, func(s *Server) { s.srv.WriteTimeout = time.Second })
	c := limitDial(t, "tcp", addr, nil)
	go io.WriteString(c, strings.Repeat("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 10000))
	time.Sleep(300 * time.Millisecond)
	if code, err := scrapeOnce(addr, nil, 10*time.Second); err != nil || code != 200 {
		t.Fatalf("scrape: %d, %v; want 200 once the write timed out", code, err)
	}
	if !closedByServer(c) {
		t.Error("the connection that read nothing is still open")
	}
}

// TestWrongPasswordQueue: wrong passwords wait in turn for a
// bcrypt check (one at a time). Each waiting request counted as serving,
// so a few connections with wrong passwords held every slot for as long
// as bcrypt kept them queued, and a scrape whose password was known
// (remembered, no bcrypt) could not get a connection. A request waiting
// for its check may now be closed for a newcomer, and its wait ends with
// its connection, so closed requests do not pile up behind bcrypt. The
// check in progress is played by holding the semaphore.
func TestWrongPasswordQueue(t *testing.T) {
	web, _ := limitWebConfig(t, false)
	s, addr := serveLimited(t, Listeners{MaxConns: 2, Web: web}, nil, nil)
	if code, err := scrapeOnce(addr, nil, 5*time.Second); err != nil || code != 200 {
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
		io.WriteString(limitDial(t, "tcp", addr, nil), wrong)
	}
	if !eventually(func() bool { return waitingChecks()-base == 2 }) {
		t.Fatalf("%d checks waiting, want 2", waitingChecks()-base)
	}
	if code, err := scrapeOnce(addr, nil, 3*time.Second); err != nil || code != 200 {
		t.Fatalf("scrape with a remembered password while wrong ones wait: %d, %v; want 200", code, err)
	}
	// A flood of wrong passwords: each newcomer closes a waiting one,
	// whose check gives up; at most the slots' worth keep waiting.
	for range 30 {
		io.WriteString(limitDial(t, "tcp", addr, nil), wrong)
		time.Sleep(2 * time.Millisecond)
	}
	if !eventually(func() bool { return waitingChecks()-base <= 2 }) {
		t.Errorf("%d checks waiting for a listener of 2 connections", waitingChecks()-base)
	}
	release()
}

// TestHTTP2Slots: net/http speaks HTTP/2 over TLS to a client that
// offers it, and an HTTP/2 connection carries up to 250 requests at
// once: 200 wrong-password requests on one connection all waited for
// their check at once, on a listener of 2 connections (a request's
// headers, up to the header limit each, held meanwhile). The metrics
// listeners then spoke HTTP/1.1 only. Since node_exporter's web
// configuration (http2: true by default) is read whole, HTTP/2 is served
// again over TLS, with one stream at a time per connection
// (http2Limits): the same 200 requests still find at most 2 checks
// waiting (TestHTTP2StreamFlood: a client that ignores the limit).
// Unencrypted HTTP/2 (prior knowledge) is not served.
func TestHTTP2Slots(t *testing.T) {
	web, tc := limitWebConfig(t, true)
	_, addr := serveLimited(t, Listeners{MaxConns: 2, Web: web}, nil, nil)
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
	if resp.Proto != "HTTP/2.0" || resp.StatusCode != 200 {
		t.Errorf("scrape offering h2: %s %d, want HTTP/2.0 200", resp.Proto, resp.StatusCode)
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
	_, plain := serveLimited(t, Listeners{MaxConns: 2}, nil, nil)
	c := limitDial(t, "tcp", plain, nil)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	b, _ := io.ReadAll(c)
	if len(b) > 0 && !strings.HasPrefix(string(b), "HTTP/1.1 ") {
		t.Errorf("answer to an HTTP/2 preface: %q", b)
	}
}

// TestHeaderMemory: the header limit bounds the bytes, not the
// memory: 36 KiB of headers with short names ("0:" to "1fff:") took
// 508 KiB of heap per connection while the headers were still coming
// (net/http's map of them), 32 MiB for 64 connections, and the agent from
// 27 to 90 MiB of RSS (the unit's MemoryMax is 128M). The limit is now
// 4 KiB (8 KiB on the wire: net/http allows 4,096 bytes more), about
// 130 KiB a connection at worst. A scrape's headers (under 1 KiB) and
// 3 KiB more still pass.
func TestHeaderMemory(t *testing.T) {
	_, addr := serveLimited(t, Listeners{MaxConns: 64}, nil, nil)
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
		c := limitDial(t, "tcp", addr, nil)
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
		c := limitDial(t, "tcp", addr, nil)
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

// TestTLSHandshakeMemory: a ClientHello of 64 KiB (the most a
// TLS handshake message may be) sent in 16 KiB records, all but its last
// byte: held while the handshake waits, like headers, it costs about
// 110 KiB a connection, no more than headers at their limit.
func TestTLSHandshakeMemory(t *testing.T) {
	web, _ := limitWebConfig(t, true)
	_, addr := serveLimited(t, Listeners{MaxConns: 64, Web: web}, nil, nil)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse
	const n = 32
	size := 65532
	for range n {
		c := limitDial(t, "tcp", addr, nil)
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

// TestSlowloris: connections that dribble their headers (a byte
// every 20 ms, well within the 10 s header timeout) hold no slot against
// a newcomer: they have not asked anything yet.
func TestSlowloris(t *testing.T) {
	_, addr := serveLimited(t, Listeners{MaxConns: 2}, nil, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var slow []net.Conn
	for range 2 {
		c := limitDial(t, "tcp", addr, nil)
		slow = append(slow, c)
		wg.Go(func() {
			line := "GET /metrics HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-A: b\r\n", 1000)
			for i := range len(line) {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				if _, err := io.WriteString(c, line[i:i+1]); err != nil {
					return
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	code, err := scrapeOnce(addr, nil, 3*time.Second)
	close(stop)
	wg.Wait()
	if err != nil || code != 200 {
		t.Fatalf("scrape: %d, %v; want 200", code, err)
	}
	if !closedByServer(slow[0]) {
		t.Error("the slower-to-ask connection was not closed to make room")
	}
}

// TestTLSHandshakeStalled: connections that stop in the middle
// of the TLS handshake (half a ClientHello, or nothing) hold no slot
// against a newcomer, and closing them does not wait for them (the 5 s
// of tls.Conn.Close's alert).
func TestTLSHandshakeStalled(t *testing.T) {
	web, tc := limitWebConfig(t, true)
	_, addr := serveLimited(t, Listeners{MaxConns: 2, Web: web}, nil, nil)
	// A ClientHello's record header and the start of its body.
	hello := []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}
	var stalled []net.Conn
	for range 3 {
		c := limitDial(t, "tcp", addr, nil)
		c.Write(hello)
		stalled = append(stalled, c)
	}
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if code, err := scrapeOnce(addr, tc, 4*time.Second); err != nil || code != 200 {
		t.Fatalf("scrape: %d, %v; want 200", code, err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("scrape took %v: closing a half-shaken connection waited", d)
	}
	for i, c := range stalled[:2] {
		if !closedByServer(c) {
			t.Errorf("stalled handshake %d still open", i)
		}
	}
}

// TestSlotLeaks: connections ended every way a client (or the
// server) can end them, 10 rounds, then the slots are all free again and
// the limit is still the limit (a slot freed twice would raise it).
func TestSlotLeaks(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("handler panics")
		}
		io.WriteString(w, "figures\n")
	})
	for _, tlsOn := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "tls"}[tlsOn], func(t *testing.T) {
			p := Listeners{MaxConns: 3}
			var tc *tls.Config
			if tlsOn {
				p.Web, tc = limitWebConfig(t, true)
			}
			s, addr := serveLimited(t, p, h, func(s *Server) { s.srv.ErrorLog = log0() })
			ll := s.ln.(*limitListener)
			ask := "GET /metrics HTTP/1.1\r\nHost: x\r\n" + basicHeader("prometheus", "s3cret") + "\r\n"
			endings := map[string]func(){
				"silent": func() { limitDial(t, "tcp", addr, nil).Close() },
				"half-headers": func() {
					c := limitDial(t, "tcp", addr, tc)
					io.WriteString(c, "GET /metr")
					c.Close()
				},
				"asked-unread": func() {
					c := limitDial(t, "tcp", addr, tc)
					io.WriteString(c, ask)
					c.Close()
				},
				"reset": func() {
					c := limitDial(t, "tcp", addr, nil)
					c.(*net.TCPConn).SetLinger(0)
					io.WriteString(c, ask)
					c.Close()
				},
				"too-large": func() {
					c := limitDial(t, "tcp", addr, tc)
					io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nX: "+strings.Repeat("a", 40<<10)+"\r\n\r\n")
					c.Close() // the server answers 431 and waits 0.5 s for us to go
				},
				"malformed": func() {
					c := limitDial(t, "tcp", addr, tc)
					io.WriteString(c, "NOT HTTP\r\n\r\n")
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					io.Copy(io.Discard, c)
					c.Close()
				},
				"body": func() {
					c := limitDial(t, "tcp", addr, tc)
					io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabc")
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					io.Copy(io.Discard, c)
					c.Close()
				},
				"panic": func() {
					c := limitDial(t, "tcp", addr, tc)
					io.WriteString(c, strings.Replace(ask, "/metrics", "/panic", 1))
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					io.Copy(io.Discard, c)
					c.Close()
				},
				"answered": func() {
					c := limitDial(t, "tcp", addr, tc)
					io.WriteString(c, ask)
					resp, err := http.ReadResponse(bufio.NewReader(c), nil)
					if err == nil {
						resp.Body.Close()
					}
					c.Close()
				},
				"plain-to-tls": func() {
					if !tlsOn {
						return
					}
					c := limitDial(t, "tcp", addr, nil)
					io.WriteString(c, ask)
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					io.Copy(io.Discard, c)
					c.Close()
				},
				"bad-handshake": func() {
					if !tlsOn {
						return
					}
					c := limitDial(t, "tcp", addr, nil)
					tls.Client(c, &tls.Config{ServerName: "127.0.0.1"}).Handshake() // untrusted: aborts
					c.Close()
				},
			}
			for range 10 {
				for _, end := range endings {
					end()
				}
				// A newcomer closing held connections, too.
				var held []net.Conn
				for range 5 {
					held = append(held, limitDial(t, "tcp", addr, tc))
				}
				for _, c := range held {
					c.Close()
				}
			}
			if !eventually(func() bool { return len(ll.slots) == 0 }) {
				t.Fatalf("%d slots taken with no connection open", len(ll.slots))
			}
			var conns []net.Conn
			for range 8 {
				c := limitDial(t, "tcp", addr, tc)
				c.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(c, ask)
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				c.SetDeadline(time.Time{})
				conns = append(conns, c)
			}
			if open := countOpen(conns); open != 3 {
				t.Errorf("%d connections held after the churn, want 3", open)
			}
		})
	}
}

// TestEvictedRequestRetried: a kept-alive connection closed to
// make room just as its next request leaves the client: net/http's
// client (Prometheus') sends the request again on a new connection, and
// every scrape is answered while a flood of idle connections runs.
func TestEvictedRequestRetried(t *testing.T) {
	_, addr := serveLimited(t, Listeners{MaxConns: 8}, nil, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				continue
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				resp.Body.Close()
			}
		}
	})
	defer wg.Wait()
	defer close(stop)
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	for i := range 100 {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatalf("scrape %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		time.Sleep(time.Duration(i%7) * time.Millisecond)
	}
}

// TestShutdownWhileAcceptWaits: the agent stops while a
// newcomer waits for a slot (every slot serving): Serve returns, the
// newcomer is closed, and no Accept is left behind.
func TestShutdownWhileAcceptWaits(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		io.WriteString(w, "figures\n")
	})
	servers, err := Listeners{TCP: "127.0.0.1:0", MaxConns: 1}.Listen(h, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	addr := servers[0].ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, servers) }()
	busy := limitDial(t, "tcp", addr, nil)
	io.WriteString(busy, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	waiting := limitDial(t, "tcp", addr, nil)
	time.Sleep(100 * time.Millisecond)
	cancel()
	time.Sleep(100 * time.Millisecond)
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	if !closedByServer(waiting) {
		t.Error("the newcomer left open")
	}
	if !eventually(func() bool {
		buf := make([]byte, 8<<20)
		return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "(*limitListener).Accept")
	}) {
		t.Error("an Accept is still running after Serve returned")
	}
}

// TestManySlots: the limit at its largest, 4,096 silent
// connections (makeRoom looks through all of them for each newcomer):
// a scrape is answered and the oldest is the one closed.
func TestManySlots(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur < 2*maxMaxConnections+256 {
		t.Skipf("needs %d descriptors (RLIMIT_NOFILE %d)", 2*maxMaxConnections+256, rl.Cur)
	}
	s, addr := serveLimited(t, Listeners{MaxConns: maxMaxConnections}, nil, nil)
	ll := s.ln.(*limitListener)
	var conns []net.Conn
	for range maxMaxConnections {
		conns = append(conns, limitDial(t, "tcp", addr, nil))
	}
	if !eventually(func() bool { return len(ll.slots) == maxMaxConnections }) {
		t.Fatalf("%d slots taken, want %d", len(ll.slots), maxMaxConnections)
	}
	if code, err := scrapeOnce(addr, nil, 5*time.Second); err != nil || code != 200 {
		t.Fatalf("scrape: %d, %v", code, err)
	}
	if !closedByServer(conns[0]) {
		t.Error("the oldest silent connection was not the one closed")
	}
}

// log0 is a server error log that drops what it is given (the panics
// and TLS errors TestSlotLeaks provokes on purpose).
func log0() *log.Logger { return log.New(io.Discard, "", 0) }
