package agent

// Attacks on the sources of the per-source rule (an IPv6 peer is its
// /64; tabled in docs/safe.md), over real connections; those that need
// addresses of their own run in a network namespace (inNetns).

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/engine"
)

// inNetns runs the test t again, alone, in a network namespace of its
// own and returns false; run there (netnsEnv set), it routes fd00::/16
// and 10.0.0.0/8 to lo, lets any address of them be bound, and returns
// true: the test goes on. It skips without root, unshare or ip.
func inNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv(netnsEnv) == "" {
		if os.Geteuid() != 0 {
			t.Skip("skipping: needs root for a network namespace with an IPv6 prefix routed to lo")
		}
		for _, tool := range []string{"unshare", "ip"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("skipping: %s not installed (util-linux, iproute2)", tool)
			}
		}
		cmd := exec.Command("unshare", "--net", "--", os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.count", "1", "-test.v", "-test.timeout", "60s")
		cmd.Env = append(os.Environ(), netnsEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("in a network namespace: %v\n%s", err, out)
		}
		return false
	}
	for _, args := range [][]string{{"link", "set", "lo", "up"}, {"-6", "route", "add", "local", "fd00::/16", "dev", "lo"}, {"route", "add", "local", "10.0.0.0/8", "dev", "lo"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %q: %v\n%s", args, err, out)
		}
	}
	for _, v := range []string{"ipv6", "ipv4"} {
		if err := os.WriteFile("/proc/sys/net/"+v+"/ip_nonlocal_bind", []byte("1\n"), 0); err != nil {
			t.Fatal(err)
		}
	}
	return true
}

// spreadClient is an HTTP client that dials each connection from the next
// address addr(1), addr(2), ...; dialled counts them.
func spreadClient(addr func(i int32) string, dialled *atomic.Int32) *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			local := net.ParseIP(addr(dialled.Add(1)))
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: local}, Timeout: 5 * time.Second}
			return d.DialContext(ctx, network, a)
		},
	}}
}

// wantHogCut serves 4 slots at listen, all held by requests from hog
// that never end, then asks from newcomer: it must be answered and one of
// hog's connections cut.
func wantHogCut(t *testing.T, listen string, hog *http.Client, newcomer, what string) {
	t.Helper()
	release := make(chan struct{})
	defer close(release)
	var started sync.WaitGroup
	started.Add(4)
	addr, _ := listenLimited(t, Listeners{TCP: listen, MaxConns: 4}, slowHandler(release, &started))
	hogs := holdSlots(t, hog, "http://"+addr, 4, &started)
	wantAnswered(t, fromIP(newcomer), "http://"+addr+"/metrics", what)
	wantCut(t, hogs)
}

// wantScrapeNotCut serves 4 slots at listen, holds a scrape in progress
// from scraper and three connections from hog (spreadClient: hog(i) is
// connection i's address; before the scrape when hogFirst, else after),
// then asks from newcomer: it must be answered, one of hog's connections
// cut, and the scrape not.
func wantScrapeNotCut(t *testing.T, listen, scraper string, hog func(i int32) string, hogFirst bool, newcomer string) {
	t.Helper()
	release := make(chan struct{})
	defer close(release)
	var started sync.WaitGroup
	addr, _ := listenLimited(t, Listeners{TCP: listen, MaxConns: 4}, slowHandler(release, &started))
	var (
		dialled     atomic.Int32
		scrape, cut <-chan error
	)
	holdHog := func() {
		started.Add(3)
		cut = holdSlots(t, spreadClient(hog, &dialled), "http://"+addr, 3, &started)
	}
	if hogFirst {
		holdHog()
		time.Sleep(5 * time.Millisecond) // the scrape is served after them
	}
	started.Add(1)
	scrape = holdSlots(t, fromIP(scraper), "http://"+addr, 1, &started)
	if !hogFirst {
		holdHog()
	}
	wantAnswered(t, fromIP(newcomer), "http://"+addr+"/metrics", "a newcomer from "+newcomer)
	wantCut(t, cut)
	select {
	case err := <-scrape:
		t.Fatalf("the scrape from %s ended (%v), cut for the client", scraper, err)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestSameSlash64Neighbour: a client in the same /64 as a
// scraper, from one address of its own, holds every slot with requests
// it never lets end. Counted by address (before the /64 rule) the
// scraper's newcomer closed one of them; counted by /64 alone, both were
// one source holding every slot, so hogsConn found nothing and
// blocksOthers closed the scrape at once, every time: a neighbour
// (another container on the node, whose pods commonly share a /64)
// locked the scraper out. Within a source, addresses are now told apart.
func TestSameSlash64Neighbour(t *testing.T) {
	if !inNetns(t) {
		return
	}
	wantHogCut(t, "[fd00:6d77:0:9::1]:0", fromIP("fd00:6d77:0:1::a"), "fd00:6d77:0:1::5", "a scrape from the hog's /64")
}

// TestNeighbourScrapeNotCut: a scrape in progress from
// fd00:6d77:0:1::5, then a client from another address of that /64
// on every other slot, then a newcomer from another /64. The /64 holds
// every slot: one of its connections is closed, and it was the
// longest-served, the scrape's. It is now one of the address holding
// the most.
func TestNeighbourScrapeNotCut(t *testing.T) {
	if !inNetns(t) {
		return
	}
	wantScrapeNotCut(t, "[fd00:6d77:0:9::1]:0", "fd00:6d77:0:1::5", func(int32) string { return "fd00:6d77:0:1::a" }, false, "fd00:6d77:0:2::1")
}

// TestAcrossSlash64s: a client that holds every slot one
// connection per /64 (a /48 holds 65,536 of them), per /56 or per /48
// was as many sources holding one each while sources were /64s, and a
// scrape waited for one of them to end (the subtest "1 per /64" failed
// before groups wider than a /64). Now the spread is one group at the
// level above it, which holds every slot, and the scrape closes one of
// its connections. What the rule still cannot find is a spread over
// /32s, which the last case shows: the scrape waits, as docs/agent.md
// says.
func TestAcrossSlash64s(t *testing.T) {
	if !inNetns(t) {
		return
	}
	for _, tc := range []struct {
		name  string
		hog   func(i int32) string // connection i's address
		found bool
	}{
		{"1 per /64", func(i int32) string { return fmt.Sprintf("fd00:6d77:0:%x::%x", 0x100+i, i) }, true},
		{"2 per /64", func(i int32) string { return fmt.Sprintf("fd00:6d77:0:%x::%x", 0x100+(i+1)/2, i) }, true},
		{"1 per /56", func(i int32) string { return fmt.Sprintf("fd00:6d77:0:%x::1", 0x100*i) }, true},
		{"1 per /48", func(i int32) string { return fmt.Sprintf("fd00:6d77:%x::1", i) }, true},
		{"1 per /32", func(i int32) string { return fmt.Sprintf("fd00:%x::1", i) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			var started sync.WaitGroup
			started.Add(4)
			addr, _ := listenLimited(t, Listeners{TCP: "[fd00:6d77:ffff::1]:0", MaxConns: 4}, slowHandler(release, &started))
			var dialled atomic.Int32
			hogs := holdSlots(t, spreadClient(tc.hog, &dialled), "http://"+addr, 4, &started)
			defer close(release)
			scrape := fromIP("fd00:6d76::1")
			scrape.Timeout = time.Second
			resp, err := scrape.Get("http://" + addr + "/metrics")
			if !tc.found {
				if err == nil {
					resp.Body.Close()
					t.Fatal("answered while four /32s held a slot each: the docs say it waits")
				}
				return
			}
			if err != nil {
				t.Fatalf("a scrape from another /32: %v", err)
			}
			resp.Body.Close()
			wantCut(t, hogs)
		})
	}
}

// TestSpreadNeighbour: a client spread over the /64s of one /56
// holds every slot but one, which a scraper in the same /48 (another
// /56) holds with a scrape in progress. A newcomer of the scraper's
// closes one of the spread's connections, found at the /56 level, and
// the scrape in progress is not cut; so does a newcomer from elsewhere.
func TestSpreadNeighbour(t *testing.T) {
	if !inNetns(t) {
		return
	}
	spread := func(i int32) string { return fmt.Sprintf("fd00:6d77:0:%x::1", 0x100+i) }
	for _, newcomer := range []string{"fd00:6d77:0:2::9", "fd00:6d78::1"} {
		t.Run(newcomer, func(t *testing.T) {
			wantScrapeNotCut(t, "[fd00:6d77:ffff::1]:0", "fd00:6d77:0:1::5", spread, false, newcomer)
		})
	}
}

// TestIPv4Spread: an IPv4 client holding three slots from three
// addresses of one /24 (a tenant's range), or of three /24s of one /16,
// beside a scrape in progress from another /24. Counted by address (before
// IPv4 groups) each held one, as the scrape did, and a newcomer waited;
// now the spread is one group at the /24 or /16 level and the newcomer
// closes one of its connections, not the scrape. The scrape began after
// the spread's requests, as one does that comes while they hold the
// slots: per /24 of a /16, its /24 and the spread's each hold one, and
// such a tie goes to the longest-served (cut). With the scrape the
// older, as this test first had it, it passed only because "10.1.11.0/24"
// sorts before "10.1.3.0/24" (the tie went to the least name; review 13).
func TestIPv4Spread(t *testing.T) {
	if !inNetns(t) {
		return
	}
	for _, tc := range []struct {
		name     string
		hog      func(i int32) string
		newcomer string
	}{
		{"per address of a /24", func(i int32) string { return fmt.Sprintf("10.1.2.%d", i) }, "10.1.3.6"},
		{"per /24 of a /16", func(i int32) string { return fmt.Sprintf("10.1.%d.1", 10+i) }, "10.2.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantScrapeNotCut(t, "10.9.9.9:0", "10.1.3.5", tc.hog, true, tc.newcomer)
		})
	}
}

// TestLoopbackAddresses: a local user (any user may bind any
// address of 127.0.0.0/8) holds every slot of a dual-stack --listen, one
// connection from each of four loopback addresses. Each address was a
// source holding one: the rule never found it, and a scrape from
// elsewhere (here ::1) waited until the write timeout. IPv4 loopback is
// one source now.
func TestLoopbackAddresses(t *testing.T) {
	if ln, err := net.Listen("tcp", "[::]:0"); err != nil {
		t.Skipf("no dual-stack listener: %v", err)
	} else {
		ln.Close()
	}
	release := make(chan struct{})
	defer close(release)
	var started sync.WaitGroup
	started.Add(4)
	addr, _ := listenLimited(t, Listeners{TCP: "[::]:0", MaxConns: 4}, slowHandler(release, &started))
	_, port, _ := net.SplitHostPort(addr)
	var dialled atomic.Int32
	hog := spreadClient(func(i int32) string { return fmt.Sprintf("127.0.0.%d", 10+i) }, &dialled)
	hogs := holdSlots(t, hog, "http://"+net.JoinHostPort("127.0.0.1", port), 4, &started)
	wantAnswered(t, fromIP("::1"), "http://"+net.JoinHostPort("::1", port)+"/metrics", "a scrape from ::1 against four loopback addresses")
	wantCut(t, hogs)
	if n := dialled.Load(); n != 4 {
		t.Errorf("the hog dialled %d times, want 4", n)
	}
}

// TestLinkLocalZones: link-local peers on two links, with the
// same address (fe80::c, each link's own), the agent's listener on both.
// Without the link in the source, both were fe80::/64 and one address:
// the client on one link holding every slot, a scrape from the other
// was its own newcomer, closed at once (blocksOthers). Each link is a
// source of its own now.
func TestLinkLocalZones(t *testing.T) {
	if !inNetns(t) {
		return
	}
	for _, args := range [][]string{
		{"link", "add", "v0", "type", "veth", "peer", "name", "v1"},
		{"link", "add", "w0", "type", "veth", "peer", "name", "w1"},
		{"link", "set", "v0", "up"}, {"link", "set", "v1", "up"},
		{"link", "set", "w0", "up"}, {"link", "set", "w1", "up"},
		{"addr", "add", "fe80::a/64", "dev", "v0", "nodad"}, {"addr", "add", "fe80::c/64", "dev", "v1", "nodad"},
		{"addr", "add", "fe80::a/64", "dev", "w0", "nodad"}, {"addr", "add", "fe80::c/64", "dev", "w1", "nodad"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Skipf("ip %q: %v\n%s", args, err, out)
		}
	}
	// from is a client on link zone, from its fe80::c.
	from := func(zone string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("fe80::c"), Zone: zone}, Timeout: 5 * time.Second}
		return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	}
	release := make(chan struct{})
	defer close(release)
	var started sync.WaitGroup
	started.Add(4)
	addr, _ := listenLimited(t, Listeners{TCP: "[::]:0", MaxConns: 4}, slowHandler(release, &started))
	_, port, _ := net.SplitHostPort(addr)
	base := func(zone string) string { return "http://[fe80::a%25" + zone + "]:" + port } // %25: % in a URL
	for _, zone := range []string{"v1", "w1"} {
		c := from(zone)
		wantAnswered(t, c, base(zone)+"/metrics", "from fe80::c%"+zone)
		c.CloseIdleConnections()
	}
	hogs := holdSlots(t, from("w1"), base("w1"), 4, &started)
	wantAnswered(t, from("v1"), base("v1")+"/metrics", "a scrape from fe80::c on another link")
	wantCut(t, hogs)
}

// TestAddressForms: IPv6 addresses that carry another network's
// address (IPv4-compatible, SIIT, NAT64's 64:ff9b::/96, 6to4's 2002::/16,
// Teredo's 2001::/32) are in their /64 and wider groups like any other,
// with each address told apart within it: every IPv4 client behind one
// NAT64 prefix is one group, as behind one NAT address, but one of them
// does not lock out the others (hogsConn); a 6to4 host's /48 is one group
// of 65,536 /64s, as any routed /48 (TestAcrossSlash64s).
func TestAddressForms(t *testing.T) {
	for in, want := range map[string]string{
		"::c000:207":                           "::/64 > ::c000:207",
		"::ffff:0:c000:207":                    "::/64 > ::ffff:0:c000:207",
		"::1":                                  "::/64 > ::1",
		"64:ff9b::c000:207":                    "64:ff9b::/64 > 64:ff9b::c000:207",
		"64:ff9b::c633:6401":                   "64:ff9b::/64 > 64:ff9b::c633:6401",
		"2002:c000:207:1::1":                   "2002:c000:207:1::/64 > 2002:c000:207:1::1",
		"2001:0:4136:e378:8000:63bf:3fff:fdd2": "2001:0:4136:e378::/64 > 2001:0:4136:e378:8000:63bf:3fff:fdd2",
		"::ffff:10.1.2.3":                      "10.1.2.0/24 > 10.1.2.3",
		"::ffff:127.255.255.254":               "127.0.0.0/8 > 127.255.255.254",
		"fe80::1":                              "fe80::/64 > fe80::1",
	} {
		p := ipPeer(net.ParseIP(in))
		if got := strings.Join(p.path[max(p.n-2, 0):p.n], " > "); got != want {
			t.Errorf("ipPeer(%s) ends %q, want %q", in, got, want)
		}
	}
	// 6to4: one IPv4 host's /48, whatever /64 it dials from.
	a, b := ipPeer(net.ParseIP("2002:c000:207:1::1")), ipPeer(net.ParseIP("2002:c000:207:ffff::1"))
	if a.path[1] != "2002:c000:207::/48" || a.path[1] != b.path[1] || a.path[3] == b.path[3] {
		t.Errorf("6to4 peers %v and %v: want one /48, two /64s", a, b)
	}
}

// TestListenersFileLimit: the largest listeners (--max-connections 4096
// on both, the snapshot and debug sockets) under limits around what they
// need, an unlimited limit, and the default when MaxConns is unset.
func TestListenersFileLimit(t *testing.T) {
	p := Listeners{Socket: "m.sock", TCP: "127.0.0.1:0", Snapshot: "s.sock", Debug: "d.sock", MaxConns: maxMaxConnections}
	files := 2*(1+4096+1) + 1 + 8 + 1 + 8 + 1
	if got := p.Files(); got != files {
		t.Fatalf("Files() = %d, want %d", got, files)
	}
	for limit, ok := range map[uint64]bool{0: false, 16: false, uint64(files) + 18: false, uint64(files) + 19: true, math.MaxUint64: true} {
		if err := checkFileLimit(p, 3, limit); (err == nil) != ok {
			t.Errorf("limit %d: %v, want accepted %v", limit, err, ok)
		}
	}
	if got := (Listeners{Socket: "m.sock"}).Files(); got != 1+DefaultMaxConnections+1 {
		t.Errorf("Files() with MaxConns unset = %d, want %d", got, 1+DefaultMaxConnections+1)
	}
}

// TestDebugSocketBounded: the debug socket (pprof, for the owner or
// --debug-socket-group) holds at most debugConns connections, as the
// twelfth review found it held any number: a group member opening
// thousands could take the walk's descriptors. Silent connections give
// way to newer ones, and a profile request is still answered.
func TestDebugSocketBounded(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	sock := filepath.Join(dir, "d.sock")
	serveLimited(t, Listeners{Debug: sock, DebugGID: -1}, nil, nil)
	var conns []net.Conn
	for range 3 * debugConns {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	// The request is accepted after every connection dialled before it
	// (one backlog, in order): once it is answered, each of them has
	// been accepted and the room made for it.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	resp, err := c.Get("http://localhost/debug/pprof/cmdline")
	if err != nil {
		t.Fatalf("a profile request behind %d silent connections: %v", len(conns), err)
	}
	resp.Body.Close()
	if open := countOpen(conns); open > debugConns {
		t.Errorf("%d silent connections held open, want at most %d (the request holds one slot)", open, debugConns)
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
}

// TestInheritedDescriptors: descriptors the agent holds before it listens
// (inherited from a shell or a supervisor) count against the open-file
// limit: before, the check counted the listeners alone, and 40 inherited
// descriptors came out of the walk's share unseen.
func TestInheritedDescriptors(t *testing.T) {
	openFiles := func() int {
		n, err := engine.OpenBelow(math.MaxUint64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := openFiles()
	if before < 3 {
		t.Fatalf("engine.OpenBelow = %d, want at least the standard three", before)
	}
	var held []*os.File
	for range 40 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, f)
	}
	defer func() {
		for _, f := range held {
			f.Close()
		}
	}()
	if got := openFiles(); got != before+40 {
		t.Errorf("engine.OpenBelow = %d with 40 more open, want %d", got, before+40)
	}
	p := Listeners{Socket: "m.sock"}
	limit := uint64(p.Files() + 3 + 16)
	if err := checkFileLimit(p, 3, limit); err != nil {
		t.Errorf("the standard three at limit %d: %v", limit, err)
	}
	err := checkFileLimit(p, 43, limit)
	if err == nil || !strings.Contains(err.Error(), "43 are open already") {
		t.Errorf("43 open at limit %d: %v, want refused naming them", limit, err)
	}
}
