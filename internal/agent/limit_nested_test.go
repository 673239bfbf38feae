package agent

// Attacks on the per-source rule as nested groups, level by level
// (tabled in docs/safe.md):
// ties between groups, the rule's cost per newcomer at the largest
// limit, address forms and names, families mixed on one listener.

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// heldConn is a served connection for the rule's unit tests: its peer,
// and a name for what holds it.
type heldConn struct {
	peer peer
	name string
}

// heldIP is a served connection from ip, named by it.
func heldIP(ip string) heldConn {
	p := ipPeer(net.ParseIP(ip))
	return heldConn{p, p.path[p.n-1]}
}

// ruleCut fills a listener with held, each a served connection, oldest
// first, and returns the name of the connection a newcomer from p
// closes ("" for none) and, when none, whether the newcomer would be
// closed at once (blocksOthers).
func ruleCut(t *testing.T, held []heldConn, p peer) (cut string, blocks bool) {
	t.Helper()
	l := newLimitListener(nil, len(held))
	names := make(map[net.Conn]string)
	since := time.Now()
	for _, h := range held {
		c, other := net.Pipe()
		t.Cleanup(func() { c.Close(); other.Close() })
		l.byPeer[h.peer]++
		since = since.Add(time.Millisecond)
		l.served[c] = servedConn{since: since, peer: h.peer}
		names[c] = h.name
	}
	if c := l.hogsConn(p); c != nil {
		return names[c], false
	}
	blocks = l.blocksOthers(p)
	// makeRoom answers the same from hogsConn's counts, as Accept asks.
	if made, b := l.makeRoom(p); made || b != blocks {
		t.Errorf("makeRoom = %v, %v after hogsConn found nothing; blocksOthers %v", made, b, blocks)
	}
	return "", blocks
}

// TestTiesCutTheNewest: a client spreads one connection per
// address over the group of a scraper whose scrape is in progress, then
// a newcomer of its own from another group makes room. The group holds
// the most, and within it every address holds one: which address gives
// up a connection was the least name (top), so the client chose it by
// its addresses (any of fd00::6.. sorts after fd00::5), and a local
// scraper on 127.0.0.1, whose name sorts before every other loopback
// address, was cut whenever a local user held the other slots one per
// address and dialled once from ::1: every scrape, deterministically
// (before d776516 a tie fell by map order). Among groups holding as
// many, the connection served the longest is cut now: a scrape in
// progress is newer than connections held to the write timeout.
func TestTiesCutTheNewest(t *testing.T) {
	ips := func(ips ...string) []heldConn {
		var held []heldConn
		for _, ip := range ips {
			held = append(held, heldIP(ip))
		}
		return held
	}
	for _, tc := range []struct {
		name     string
		held     []heldConn // oldest first
		newcomer string
		want     string
	}{
		{"loopback, the scrape from 127.0.0.1", ips("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.1"), "::1", "127.0.0.2"},
		{"a /64 neighbour, its addresses after the scraper's", ips("fd00::6", "fd00::7", "fd00::8", "fd00::5"), "fd00:0:0:1::1", "fd00::6"},
		{"a /24 neighbour", ips("10.1.2.4", "10.1.2.30", "10.1.2.200", "10.1.2.3"), "10.2.0.1", "10.1.2.4"},
		{"/24s tied, the scraper's named first", ips("10.1.2.1", "10.1.2.2", "10.1.1.9", "10.1.1.1"), "10.2.0.1", "10.1.2.1"},
		{"/64s tied under a hog /48", ips("fd00:0:0:2::1", "fd00:0:0:2::2", "fd00:0:0:1::9", "fd00:0:0:1::1"), "fd01::1", "fd00:0:0:2::1"},
		// What counts still goes first: an address holding two more
		// gives one up, however new, before older ones holding one.
		{"an address holding two more, however new", ips("fd00::6", "fd00::7", "fd00::5", "fd00::5", "fd00::5"), "fd00:0:0:1::1", "fd00::5"},
		{"the /64 holding two more, however new", ips("fd00:0:0:2::1", "fd00:0:0:1::1", "fd00:0:0:1::2", "fd00:0:0:1::3"), "fd01::1", "fd00:0:0:1::1"},
		// One more is no more a hog (cut): age decides. Before, the
		// address or /64 holding one more gave one up, so a client
		// spread one per /64 over the /56 of two scrapers sharing a /64
		// (an HA pair on one subnet) made their /64 the biggest, and a
		// newcomer from elsewhere cut a scrape (TestLimitBounds had
		// it as left open).
		{"an address holding one more, however new", ips("fd00::6", "fd00::7", "fd00::5", "fd00::5"), "fd00:0:0:1::1", "fd00::6"},
		// The same between groups at the level where the hog is found:
		// a client's newcomer from a new /32, which may close one of
		// any /32 holding two, closed one of the /32 whose name sorts
		// first, of the client's choosing: a scraper pair's.
		{"widest groups tied, the scrapers' named first", ips("2001:db9::1", "2001:db9::2", "2001:dba::1", "2001:dba::2", "2001:db8::1", "2001:db8::2"), "2001:dbb::1", "2001:db9::1"},
		{"a scraper pair's /64 in a spread /56", ips("fd00:0:0:1::1", "fd00:0:0:2::1", "fd00:0:0:3::1", "fd00:0:0:9::1", "fd00:0:0:9::2"), "fd01::1", "fd00:0:0:1::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if cut, _ := ruleCut(t, tc.held, ipPeer(net.ParseIP(tc.newcomer))); cut != tc.want {
				t.Errorf("cut %q, want %q", cut, tc.want)
			}
		})
	}
}

// TestLoopbackScrapeNotCut: TestTiesCutTheNewest's
// first case over real connections, as a local user would: one request
// held from each of 127.0.0.2 to 127.0.0.4, a scrape in progress from
// 127.0.0.1, then a request from ::1 on the dual-stack listener. The
// scrape must not be cut; one of the user's connections is.
func TestLoopbackScrapeNotCut(t *testing.T) {
	if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		ln.Close()
	}
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	var started sync.WaitGroup
	addr, _ := listenLimited(t, Listeners{TCP: "[::]:0", MaxConns: 4}, slowHandler(release, &started))
	_, port, _ := net.SplitHostPort(addr)
	base := "http://" + net.JoinHostPort("127.0.0.1", port)
	hogs := make(chan error, 3)
	for i := 2; i <= 4; i++ {
		started.Add(1)
		held := holdSlots(t, fromIP(fmt.Sprintf("127.0.0.%d", i)), base, 1, &started)
		go func() { hogs <- <-held }()
	}
	time.Sleep(5 * time.Millisecond) // the scrape is served after them
	started.Add(1)
	scrape := holdSlots(t, fromIP("127.0.0.1"), base, 1, &started)
	wantAnswered(t, fromIP("::1"), "http://"+net.JoinHostPort("::1", port)+"/metrics", "a request from ::1")
	wantCut(t, hogs)
	select {
	case err := <-scrape:
		t.Fatalf("the scrape from 127.0.0.1 ended before it was let: %v", err)
	default:
	}
	free()
	select {
	case err := <-scrape:
		if err != nil {
			t.Errorf("the scrape from 127.0.0.1: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Error("the scrape from 127.0.0.1 was not answered")
	}
}

// fullListener is a listener of n slots, each served from an address of its
// own, addr(i), the longest-served first.
func fullListener(tb testing.TB, n int, addr func(i int) string) *limitListener {
	l := newLimitListener(nil, n)
	since := time.Now()
	for i := range n {
		c, other := net.Pipe()
		tb.Cleanup(func() { c.Close(); other.Close() })
		p := ipPeer(net.ParseIP(addr(i)))
		l.byPeer[p]++
		l.served[c] = servedConn{since: since.Add(time.Duration(i)), peer: p}
	}
	return l
}

// TestNewcomerFloodAllocates: the rule runs for every newcomer
// while every slot is served (hogsConn, then blocksOthers when it finds
// nothing), under the listener's mutex. A client allowed to ask that
// holds all 4,096 slots of the largest limit and then opens connections
// without end (each closed at once: its own group holds the slots) makes
// it run as often as it connects. Not quadratic: one newcomer costs
// passes over the held peers, linear in the limit. But with maps built
// per level for each newcomer (d776516) it was 1.1 ms and 436 KiB of
// garbage per newcomer at 4,096 slots (the per-source rule before it:
// 0.05 ms, nothing). bd05630 keeps the scratch on the listener: nothing
// is allocated per newcomer, found or not, nor for a cut; the time (two
// passes, hogsConn's and blocksOthers', 0.5 ms at 4,096 slots spread
// over a /64) is left to BenchmarkHogsConn and docs/safe.md.
func TestNewcomerFloodAllocates(t *testing.T) {
	spreads := map[string]func(i int) string{
		"a /64's addresses":     func(i int) string { return fmt.Sprintf("2001:db8::%x", i+1) },
		"a /32 per slot":        func(i int) string { return fmt.Sprintf("2001:%x::1", i+1) },
		"a /24 each in 16 /16s": func(i int) string { return fmt.Sprintf("10.%d.%d.1", i/256, i%256) },
	}
	for name, addr := range spreads {
		t.Run(name, func(t *testing.T) {
			l := fullListener(t, maxMaxConnections, addr)
			own := ipPeer(net.ParseIP(addr(maxMaxConnections + 7)))
			other := ipPeer(net.ParseIP("203.0.113.1"))
			found := false
			flood := testing.AllocsPerRun(20, func() {
				l.mu.Lock()
				l.hogsConn(own)
				l.mu.Unlock()
				l.blocksOthers(own)
			})
			cut := testing.AllocsPerRun(20, func() {
				l.mu.Lock()
				found = l.hogsConn(other) != nil
				l.mu.Unlock()
			})
			if want := name != "a /32 per slot"; found != want {
				t.Errorf("a newcomer from elsewhere found a hog: %v, want %v", found, want)
			}
			if flood != 0 || cut != 0 {
				t.Errorf("%v allocations per newcomer of the hog's group, %v per cut; want none", flood, cut)
			}
		})
	}
}

// zoned is p as sourceOf names a link-local peer on link zone.
func zoned(p peer, zone string) peer {
	for i := range p.path[:p.n] {
		p.path[i] += "%" + zone
	}
	return p
}

// TestGroupNamesCollide: the rule compares groups by name alone,
// level by level (tally, and the cut), trusting that equal names at a
// level are one group, with equal groups above it. Tried on addresses
// that might print alike or share masks across families: IPv4, IPv4-
// mapped and -compatible, SIIT, NAT64 (well-known and local-use), 6to4,
// Teredo, loopback of both families, link-local on two links (the zone
// appended at every level) and fe80::/10 outside fe80::/64, the
// unspecified and multicast forms, unix peers' users, and random
// addresses. No name is found at two levels, nor under two paths.
func TestGroupNamesCollide(t *testing.T) {
	var peers []peer
	for _, s := range []string{
		"0.0.0.0", "0.0.0.1", "1.0.0.0", "10.0.0.1", "127.0.0.1", "127.255.255.255", "128.0.0.1",
		"::ffff:10.0.0.1", "::ffff:127.0.0.1", "::a00:1", "::ffff:0:a00:1", "::", "::1", "::2",
		"64:ff9b::a00:1", "64:ff9b:1::a00:1", "64:ff9b:1:ffff::a00:1", "2002:a00:1::1", "2002:a00:2::1",
		"2001::1", "2001:0:a00:1::1", "2001:0:a00:1:8000:63bf:3fff:fdd2", "fe80::1", "fe81::1", "febf:ffff::1",
		"fec0::1", "fc00::1", "fd00::1", "ff02::1", "ff05::1:3", "100::1", "2001:db8::", "2001:db8::/32",
	} {
		ip := net.ParseIP(s)
		if ip == nil {
			continue
		}
		p := ipPeer(ip)
		peers = append(peers, p, zoned(p, "eth0"), zoned(p, "eth1"), zoned(p, "5"))
	}
	for uid := range 3 {
		peers = append(peers, newPeer("uid "+strconv.Itoa(uid)))
	}
	rng := rand.New(rand.NewPCG(13, 13))
	for range 20000 {
		ip := make(net.IP, 16)
		for i := range ip {
			ip[i] = byte(rng.IntN(4)) // few values: many shared prefixes
		}
		if rng.IntN(3) == 0 {
			copy(ip, net.ParseIP("::ffff:0.0.0.0")[:12])
		}
		peers = append(peers, ipPeer(ip))
	}
	level := make(map[string]int)
	above := make(map[string]string)
	for _, p := range peers {
		for k := range p.n {
			name := p.path[k]
			if lvl, ok := level[name]; ok && lvl != k {
				t.Errorf("%q at levels %d and %d (%v)", name, lvl, k, p)
			}
			level[name] = k
			path := newPeer(p.path[:k]...).String()
			if a, ok := above[name]; ok && a != path {
				t.Errorf("%q under %q and under %q", name, a, path)
			}
			above[name] = path
		}
	}
}

// TestMixedFamilies: one listener's peers of every kind at once
// (a dual-stack --listen: IPv4, IPv4 loopback, IPv6; the socket: users,
// here on the same listener as a harder case), whose widest groups are of
// unlike sizes (a /16, 127.0.0.0/8, a /32, a user): the rule compares
// them by count alone, as sources, and blocksOthers closes a newcomer at
// once only when its source holds a slot and some source holds two.
func TestMixedFamilies(t *testing.T) {
	uid := func(n int) heldConn { s := "uid " + strconv.Itoa(n); return heldConn{newPeer(s), s} }
	for _, tc := range []struct {
		name     string
		held     []heldConn
		newcomer peer
		cut      string
		blocks   bool
	}{
		{"one of each, a newcomer from a new /32", []heldConn{heldIP("10.0.0.1"), heldIP("127.0.0.1"), heldIP("2001:db8::1"), uid(0)}, ipPeer(net.ParseIP("2001:db9::1")), "", false},
		{"one of each, a newcomer from a held /16", []heldConn{heldIP("10.0.0.1"), heldIP("127.0.0.1"), heldIP("2001:db8::1"), uid(0)}, ipPeer(net.ParseIP("10.0.9.9")), "", false},
		{"loopback holds two, a newcomer from ::1", []heldConn{heldIP("127.0.0.1"), heldIP("127.0.0.2"), heldIP("10.0.0.1")}, ipPeer(net.ParseIP("::1")), "127.0.0.1", false},
		{"a /32 holds two, a newcomer from a held /16", []heldConn{heldIP("2001:db8::1"), heldIP("2001:db8:1::1"), heldIP("10.0.0.1")}, ipPeer(net.ParseIP("10.0.9.9")), "", true},
		{"a /32 holds three, a newcomer from a held /16", []heldConn{heldIP("2001:db8::1"), heldIP("2001:db8:1::1"), heldIP("2001:db8:1::1"), heldIP("10.0.0.1")}, ipPeer(net.ParseIP("10.0.9.9")), "2001:db8::1", false},
		{"a user holds three, a newcomer from another", []heldConn{uid(1000), uid(1000), uid(1000), uid(0)}, newPeer("uid 0"), "uid 1000", false},
		{"a user holds three, its own newcomer", []heldConn{uid(1000), uid(1000), uid(1000), uid(0)}, newPeer("uid 1000"), "", true},
		{"a user and a /16, a newcomer from the user", []heldConn{uid(1000), heldIP("10.0.0.1"), heldIP("10.0.0.1")}, newPeer("uid 1000"), "", true},
		{"mapped and plain IPv4 are one address", []heldConn{heldIP("::ffff:10.0.0.1"), heldIP("10.0.0.1"), heldIP("10.0.0.1")}, ipPeer(net.ParseIP("10.0.0.2")), "10.0.0.1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut, blocks := ruleCut(t, tc.held, tc.newcomer)
			if cut != tc.cut || blocks != tc.blocks {
				t.Errorf("cut %q, blocks others %v; want %q, %v", cut, blocks, tc.cut, tc.blocks)
			}
		})
	}
}

// TestLimitEmptyAndZero: the rule's edge cases, which must not panic
// nor close a connection no group holds: an empty listener, a peer with
// no name (never from sourceOf, but peer{} is the zero value), a served
// entry with no peer (serving found no limitConn beneath), most of
// nothing.
func TestLimitEmptyAndZero(t *testing.T) {
	if n := most(nil); n != 0 {
		t.Errorf("most(nil) = %d", n)
	}
	for _, p := range []peer{{}, newPeer("uid 0"), ipPeer(net.ParseIP("::1")), ipPeer(nil)} {
		if cut, blocks := ruleCut(t, nil, p); cut != "" || blocks {
			t.Errorf("empty listener, newcomer %v: cut %q, blocks %v", p, cut, blocks)
		}
	}
	// A served entry with the zero peer, beside a hog: the hog's is cut.
	held := []heldConn{{peer{}, "nobody"}, heldIP("10.0.0.1"), heldIP("10.0.0.1"), heldIP("10.0.0.1")}
	if cut, _ := ruleCut(t, held, ipPeer(net.ParseIP("10.1.0.1"))); cut != "10.0.0.1" {
		t.Errorf("cut %q, want 10.0.0.1", cut)
	}
}

// TestLinkLocalOutsideSlash64: a peer on a link can take any
// address of fe80::/10, not only of fe80::/64, and each /32 of it
// (fe81::/32, febf:ffff::/32) is a widest group of its own: one per
// slot would escape the rule the way a /32 per slot does. Tried from
// another network namespace over a veth pair: the kernel answers only
// fe80::/64, the one link-local route it installs, so such a peer never
// gets a connection (the SYN-ACK has no route). Held by the kernel; a
// host routing all of fe80::/10 to a link would need the link as one
// group.
func TestLinkLocalOutsideSlash64(t *testing.T) {
	if !inNetns(t) {
		return
	}
	peerNS := exec.Command("unshare", "--net", "sleep", "30")
	if err := peerNS.Start(); err != nil {
		t.Skipf("unshare: %v", err)
	}
	defer func() { peerNS.Process.Kill(); peerNS.Wait() }()
	pid := strconv.Itoa(peerNS.Process.Pid)
	for _, args := range [][]string{
		{"link", "add", "v0", "type", "veth", "peer", "name", "v1"},
		{"link", "set", "v1", "netns", pid},
		{"link", "set", "v0", "up"},
		{"addr", "add", "fe80::a/64", "dev", "v0", "nodad"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %q: %v\n%s", args, err, out)
		}
	}
	for _, args := range [][]string{
		{"link", "set", "v1", "up"},
		{"addr", "add", "fe80::c/64", "dev", "v1", "nodad"},
		{"addr", "add", "fe81::1/64", "dev", "v1", "nodad"},
		{"addr", "add", "febf:ffff::1/64", "dev", "v1", "nodad"},
	} {
		if out, err := exec.Command("nsenter", append([]string{"-t", pid, "-n", "ip"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("in the peer's namespace, ip %q: %v\n%s", args, err, out)
		}
	}
	ln, err := net.Listen("tcp", "[::]:0")
	if err != nil {
		t.Fatal(err)
	}
	ll := newLimitListener(ln, 4)
	defer ll.Close()
	peers := make(chan peer, 4)
	go func() {
		for {
			c, err := ll.Accept()
			if err != nil {
				return
			}
			peers <- c.(*limitConn).peer
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	// dial connects from src, in the peer's namespace, to the agent's
	// fe80::a over the veth pair.
	dial := func(src string) error {
		errc := make(chan error, 1)
		go func() {
			runtime.LockOSThread() // left locked: the thread ends with the goroutine
			fd, err := unix.Open("/proc/"+pid+"/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err == nil {
				err = unix.Setns(fd, unix.CLONE_NEWNET)
				unix.Close(fd)
			}
			if err != nil {
				errc <- err
				return
			}
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src), Zone: "v1"}, Timeout: 700 * time.Millisecond}
			c, err := d.Dial("tcp", fmt.Sprintf("[fe80::a%%v1]:%d", port))
			if err == nil {
				io.WriteString(c, "x")
				c.Close()
			}
			errc <- err
		}()
		return <-errc
	}
	if err := dial("fe80::c"); err != nil {
		t.Fatalf("from fe80::c: %v", err)
	}
	if p := <-peers; p.source() != "fe80::/32%v0" {
		t.Errorf("fe80::c's source %q, want fe80::/32%%v0", p.source())
	}
	if err := dial("fe81::1"); err == nil {
		t.Errorf("from fe81::1: connected (its source %v): each /32 of fe80::/10 would be a source of its own", (<-peers).source())
	}
}

// TestLimitBounds: what the rule still allows, as measured by the
// review (docs/safe.md, "left open"); a rule that narrows one of these
// changes its want here. It is a trade-off of counting groups: a
// newcomer is compared by its group's count, which a client in that
// group raises. (A group found was cut where it held the most, which a
// client spread beside two scrapers sharing a /64 turned against them;
// sub-groups within one of the most are now alike, and age decides:
// TestTiesCutTheNewest.)
func TestLimitBounds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		held     []string // oldest first
		newcomer string
		cut      string
		blocks   bool
	}{
		// Three addresses in the scraper's /64 holding one each lift
		// the bar for every other group to five: one host elsewhere
		// holds four. At the default 64 slots, 8 addresses and 7 hosts
		// elsewhere (8 + 7×9 ≥ 64) lock the scraper out, where the
		// documented spread takes 64 /32s. The scraper's newcomer is
		// closed at once.
		{"a client in the scraper's /64 raises the bar", []string{"fd00::a", "fd00::b", "fd00::c", "2001:db8::1", "2001:db8::1", "2001:db8::1", "2001:db8::1"}, "fd00::5", "", true},
		{"a client in the scraper's /16 raises the bar", []string{"10.1.1.1", "10.1.2.1", "10.1.3.1", "192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1"}, "10.1.9.5", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var held []heldConn
			for _, ip := range tc.held {
				held = append(held, heldIP(ip))
			}
			cut, blocks := ruleCut(t, held, ipPeer(net.ParseIP(tc.newcomer)))
			if cut != tc.cut || blocks != tc.blocks {
				t.Errorf("cut %q, blocks others %v; want %q, %v", cut, blocks, tc.cut, tc.blocks)
			}
		})
	}
}
