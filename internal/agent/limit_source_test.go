package agent

// Attacks on the rule that lets a newcomer close a served connection of
// the source holding the most slots (hogsConn; tabled in docs/safe.md),
// over real connections.

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// slowHandler is a handler whose /slow requests stay served until release
// is closed or their connection goes, counting those begun on started.
func slowHandler(release chan struct{}, started *sync.WaitGroup) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started.Done()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, "figures\n")
	})
}

// holdSlots starts n requests for base+"/slow" with client and waits
// until they are all served; their errors arrive on the channel
// returned.
func holdSlots(t *testing.T, client *http.Client, base string, n int, started *sync.WaitGroup) <-chan error {
	t.Helper()
	errs := make(chan error, 2*n)
	hold := func() {
		resp, err := client.Get(base + "/slow")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		errs <- err
	}
	for range n {
		go hold()
	}
	// A request can end before it is served: the connection of an
	// earlier request from the same source, closed by the client but
	// not yet by the server, still counts, and the rule makes room by
	// cutting the newest of that source, a hold (seen on a fresh
	// machine). Another takes its place. Waiting on started alone
	// hung until the test binary's timeout.
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	for again := 0; ; again++ {
		select {
		case <-all:
			return errs
		case err := <-errs:
			if again == n {
				t.Fatalf("held requests kept ending before all %d were served: %v", n, err)
			}
			go hold()
		case <-time.After(30 * time.Second):
			t.Fatalf("%d held requests not all served within 30 s", n)
		}
	}
}

// wantCut fails t unless one of the hog's held requests ends with an
// error (its connection closed to make room) within 5 s.
func wantCut(t *testing.T, hogs <-chan error) {
	t.Helper()
	select {
	case err := <-hogs:
		if err == nil {
			t.Error("a hog's request ended without error: none was closed to make room")
		}
	case <-time.After(5 * time.Second):
		t.Error("none of the hog's connections was closed")
	}
}

// wantAnswered asks url with c, giving up after 3 s (before a held
// request's 20 s client timeout could free a slot), and fails the test,
// naming what asked, unless it is answered; the body is closed.
func wantAnswered(t *testing.T, c *http.Client, url, what string) *http.Response {
	t.Helper()
	c.Timeout = 3 * time.Second
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	resp.Body.Close()
	return resp
}

// dialFrom opens a TCP connection from ip to addr, closed at the test's end.
func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestHogQueuesAhead: the hog holds every slot with served
// requests, then opens one connection more. No room can be made for it
// (it is the hog), and Accept waited for a slot with it, so a scrape
// from another address, queued behind it in the kernel's backlog, was
// never even accepted: the rule never ran for it, and one connection
// more than the limit was enough to lock every other source out until
// the write timeout. It is closed at once now (blocksOthers).
func TestHogQueuesAhead(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var started sync.WaitGroup
	started.Add(4)
	addr, _ := listenLimited(t, Listeners{MaxConns: 4}, slowHandler(release, &started))
	hogs := holdSlots(t, fromIP("127.0.0.1"), "http://"+addr, 4, &started)
	extra := dialFrom(t, "127.0.0.1", addr)
	io.WriteString(extra, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	if !closedByServer(extra) {
		t.Error("the hog's connection beyond the limit was kept waiting")
	}
	select {
	case err := <-hogs:
		t.Fatalf("a hog's request ended (%v) for its own newcomer", err)
	default:
	}
	wantAnswered(t, fromIP("127.0.0.2"), "http://"+addr+"/metrics", "a scrape from another address behind the hog's extra connection")
	wantCut(t, hogs)
}

// TestMappedAddress: on a dual-stack listener (--listen
// [::]:PORT) an IPv4 client may arrive as 127.0.0.1 or as
// ::ffff:127.0.0.1; counted as two sources, one client could hold
// slots under both names and look half its size. Both are one source.
func TestMappedAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "[::]:0")
	if err != nil {
		t.Skipf("no dual-stack listener: %v", err)
	}
	ll := newLimitListener(ln, 4)
	defer ll.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, host := range []string{"127.0.0.1", "::ffff:127.0.0.1"} {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 5*time.Second)
		if err != nil {
			t.Skipf("dial %s: %v", host, err)
		}
		defer c.Close()
		s, err := ll.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
	}
	ll.mu.Lock()
	defer ll.mu.Unlock()
	if n := ll.byPeer[newPeer("127.0.0.0/8", "127.0.0.1")]; n != 2 || len(ll.byPeer) != 1 {
		t.Errorf("peers %v, want 127.0.0.1 holding 2", ll.byPeer)
	}
}

// tlsClientFrom is a client from ip over TLS (tc) that sends the password.
func tlsClientFrom(ip string, tc *tls.Config) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 20 * time.Second, Transport: &authTransport{
		&http.Transport{DialContext: d.DialContext, TLSClientConfig: tc},
	}}
}

type authTransport struct{ rt http.RoundTripper }

func (a *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth("prometheus", "s3cret")
	return a.rt.RoundTrip(r)
}

// TestHogTLS: the rule under TLS and basic auth, where the
// server names a connection by its *tls.Conn (served is keyed by it) and
// the source is found beneath it. A password holder from one address
// on every slot that reads nothing: a scrape from another address is
// answered at once, one of the hog's connections closed beneath TLS
// (no 5 s close_notify to a peer that reads nothing).
func TestHogTLS(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var started sync.WaitGroup
	started.Add(3)
	web, tc := limitWebConfig(t, true)
	_, addr := serveLimited(t, Listeners{MaxConns: 3, Web: web}, slowHandler(release, &started), nil)
	hogs := holdSlots(t, tlsClientFrom("127.0.0.1", tc), "https://"+addr, 3, &started)
	begin := time.Now()
	resp := wantAnswered(t, tlsClientFrom("127.0.0.2", tc), "https://"+addr+"/metrics", "a scrape from another address")
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: %d", resp.StatusCode)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("scrape took %v", d)
	}
	wantCut(t, hogs)
}

// TestCountsAfterChurn: the rule's closes raced with the
// server's own (the hog's requests let end as the newcomer arrives),
// twenty rounds, then every client gone: no slot, no source count, no
// served or waiting entry may be left (a leaked count would make a
// source look like a hog for good, a stale served entry be picked
// again).
func TestCountsAfterChurn(t *testing.T) {
	var (
		mu      sync.Mutex
		release = make(chan struct{})
	)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			mu.Lock()
			ch := release
			mu.Unlock()
			select {
			case <-ch:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, "figures\n")
	})
	s, addr := serveLimited(t, Listeners{MaxConns: 3}, h, nil)
	ll := s.ln.(*limitListener)
	hog, other := fromIP("127.0.0.1"), fromIP("127.0.0.2")
	// A fresh connection per request: net/http's client sends a GET
	// again when its kept-alive connection was closed, which would carry
	// a /slow cut in one round into the next.
	hog.Transport.(*http.Transport).DisableKeepAlives = true
	get := func(c *http.Client, path string, wg *sync.WaitGroup) {
		defer wg.Done()
		if resp, err := c.Get("http://" + addr + path); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	// state describes the listener's books, for a failure message.
	state := func() string {
		ll.mu.Lock()
		defer ll.mu.Unlock()
		return fmt.Sprintf("%d slots, peers %v, %d served, %d waiting", len(ll.slots), ll.byPeer, len(ll.served), len(ll.waiting))
	}
	for round := range 20 {
		// Each round starts with every slot free: the last round's
		// connections closed, and the server done with them. Were the
		// other client's kept-alive connection still served (its idle
		// state not yet reported, on a busy machine), the hog's third
		// request would find every slot taken and be closed
		// (blocksOthers), as designed, and the round would not start.
		other.CloseIdleConnections()
		if !eventually(func() bool {
			ll.mu.Lock()
			defer ll.mu.Unlock()
			return len(ll.byPeer) == 0 && len(ll.served) == 0
		}) {
			t.Fatalf("round %d: the last round's connections left: %s", round, state())
		}
		var wg sync.WaitGroup
		wg.Add(5)
		for range 3 {
			go get(hog, "/slow", &wg)
		}
		if !eventually(func() bool {
			ll.mu.Lock()
			defer ll.mu.Unlock()
			return len(ll.served) == 3
		}) {
			t.Fatalf("round %d: the hog's requests not all served: %s", round, state())
		}
		go get(other, "/metrics", &wg)
		go get(hog, "/metrics", &wg)
		if round%2 == 0 {
			time.Sleep(time.Duration(round) * 100 * time.Microsecond)
		}
		mu.Lock()
		close(release)
		release = make(chan struct{})
		mu.Unlock()
		wg.Wait()
	}
	hog.CloseIdleConnections()
	other.CloseIdleConnections()
	if !eventually(func() bool {
		ll.mu.Lock()
		defer ll.mu.Unlock()
		return len(ll.slots) == 0 && len(ll.byPeer) == 0 && len(ll.served) == 0 && len(ll.waiting) == 0
	}) {
		t.Fatalf("left: %s", state())
	}
}
