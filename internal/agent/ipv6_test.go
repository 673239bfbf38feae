package agent

import (
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/snapshot/snapserve"
)

// TestIPPeer: an IPv4 peer is its address in its /24 and /16, however
// written, but loopback its address in 127.0.0.0/8; an IPv6 peer its
// address in its /64, /56, /48 and /32.
func TestIPPeer(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1":                 "127.0.0.0/8 > 127.0.0.1",
		"::ffff:127.0.0.1":          "127.0.0.0/8 > 127.0.0.1",
		"127.1.2.3":                 "127.0.0.0/8 > 127.1.2.3",
		"192.0.2.7":                 "192.0.0.0/16 > 192.0.2.0/24 > 192.0.2.7",
		"2001:db8:1:2:3:4:5:6":      "2001:db8::/32 > 2001:db8:1::/48 > 2001:db8:1::/56 > 2001:db8:1:2::/64 > 2001:db8:1:2:3:4:5:6",
		"2001:db8:1:2:ffff:ffff::1": "2001:db8::/32 > 2001:db8:1::/48 > 2001:db8:1::/56 > 2001:db8:1:2::/64 > 2001:db8:1:2:ffff:ffff:0:1",
		"2001:db8:1:3::1":           "2001:db8::/32 > 2001:db8:1::/48 > 2001:db8:1::/56 > 2001:db8:1:3::/64 > 2001:db8:1:3::1",
		"2001:db8:1:1ff::1":         "2001:db8::/32 > 2001:db8:1::/48 > 2001:db8:1:100::/56 > 2001:db8:1:1ff::/64 > 2001:db8:1:1ff::1",
		"::1":                       "::/32 > ::/48 > ::/56 > ::/64 > ::1",
		"fe80::1":                   "fe80::/32 > fe80::/48 > fe80::/56 > fe80::/64 > fe80::1",
	} {
		if got := ipPeer(net.ParseIP(in)).String(); got != want {
			t.Errorf("ipPeer(%s) = %q, want %q", in, got, want)
		}
	}
	if got := ipPeer(nil).String(); got != "<nil>" {
		t.Errorf("ipPeer(nil) = %q", got)
	}
}

// netnsEnv marks the test binary re-run inside a network namespace.
const netnsEnv = "MEMWHO_TEST_NETNS"

// TestMaxConnectionsHogIPv6: an IPv6 client that takes a new address of
// its /64 for every connection (the attack the per-address count of
// review 11 left open) is one source: a newcomer from another /64 still
// closes one of its connections. Run as root in a network namespace of
// its own, where fd00:6d77::/48 is routed to lo, so that any address in
// it can be bound.
func TestMaxConnectionsHogIPv6(t *testing.T) {
	if !inNetns(t) {
		return
	}
	var dialled atomic.Int32
	hog := spreadClient(func(i int32) string { return fmt.Sprintf("fd00:6d77::%x", i) }, &dialled)
	wantHogCut(t, "[fd00:6d77:0:2::1]:0", hog, "fd00:6d77:0:1::1", "a newcomer from another /64")
	if n := dialled.Load(); n != 4 {
		t.Errorf("the hog dialled %d times, want 4 (one address each)", n)
	}
}

// TestSnapshotConns: Files counts the snapshot server's clients as many
// as it serves.
func TestSnapshotConns(t *testing.T) {
	if snapshotConns != snapserve.DefaultMaxConns {
		t.Errorf("snapshotConns %d, snapserve.DefaultMaxConns %d", snapshotConns, snapserve.DefaultMaxConns)
	}
}

// TestHogsConnLevels: the per-source rule on held connections alone (no
// sockets, so it runs without root): which address a newcomer's
// connection is taken from, level by level.
func TestHogsConnLevels(t *testing.T) {
	for _, tc := range []struct {
		name     string
		held     []string // one served connection per entry, oldest first
		newcomer string
		want     string // the address cut, "" for none
	}{
		{"one address holds the most", []string{"192.0.2.1", "192.0.2.1", "192.0.2.1", "198.51.100.1"}, "203.0.113.1", "192.0.2.1"},
		{"one more than the newcomer's keeps it", []string{"192.0.2.1", "192.0.2.1", "198.51.100.1"}, "198.51.100.1", ""},
		{"two more than a neighbour's newcomer", []string{"192.0.2.1", "192.0.2.1", "198.51.100.1", "198.51.100.1"}, "198.51.100.2", "198.51.100.1"},
		{"spread over a /24", []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "198.51.100.1"}, "198.51.100.1", "192.0.2.1"},
		{"spread over a /16's /24s", []string{"10.1.1.1", "10.1.2.1", "10.1.3.1", "10.2.0.1"}, "10.2.0.1", "10.1.1.1"},
		{"spread over /16s", []string{"10.1.0.1", "10.2.0.1", "10.3.0.1", "10.4.0.1"}, "10.5.0.1", ""},
		{"loopback addresses are one group", []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "192.0.2.1"}, "192.0.2.1", "127.0.0.2"},
		{"within loopback, by address", []string{"127.0.0.2", "127.0.0.2", "127.0.0.2", "127.0.0.1"}, "127.0.0.1", "127.0.0.2"},
		{"spread over a /64", []string{"2001:db8:0:1::1", "2001:db8:0:1::2", "2001:db8:0:1::3", "2001:db8:0:2::1"}, "2001:db8:0:2::1", "2001:db8:0:1::1"},
		{"spread over a /56's /64s", []string{"2001:db8:0:101::1", "2001:db8:0:102::1", "2001:db8:0:103::1", "2001:db8::1"}, "2001:db8::2", "2001:db8:0:101::1"},
		{"spread over a /48's /56s", []string{"2001:db8:0:100::1", "2001:db8:0:200::1", "2001:db8:0:300::1", "2001:db8:1::1"}, "2001:db8:1::1", "2001:db8:0:100::1"},
		{"spread over a /32's /48s", []string{"2001:db8:1::1", "2001:db8:2::1", "2001:db8:3::1", "2001:db9::1"}, "2001:db9::1", "2001:db8:1::1"},
		{"spread over /32s", []string{"2001:db8::1", "2001:db9::1", "2001:dba::1", "2001:dbb::1"}, "2001:dbc::1", ""},
		{"the neighbour's scrape is not cut", []string{"2001:db8::5", "2001:db8::a", "2001:db8::a", "2001:db8::a"}, "2001:db9::1", "2001:db8::a"},
		{"the biggest sub-group at each level", []string{"2001:db8:0:1::1", "2001:db8:0:1::2", "2001:db8:0:1::2", "2001:db8:0:1::2", "2001:db8:0:101::1"}, "2001:db9::1", "2001:db8:0:1::2"},
		{"one more is alike: the longest-served", []string{"2001:db8:0:1::1", "2001:db8:0:1::2", "2001:db8:0:1::2", "2001:db8:0:101::1"}, "2001:db9::1", "2001:db8:0:1::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimitListener(nil, len(tc.held))
			names := make(map[net.Conn]string)
			since := time.Now()
			for _, a := range tc.held {
				c, other := net.Pipe()
				defer c.Close()
				defer other.Close()
				p := ipPeer(net.ParseIP(a))
				l.byPeer[p]++
				since = since.Add(time.Millisecond)
				l.served[c] = servedConn{since: since, peer: p}
				names[c] = a
			}
			got := ""
			if c := l.hogsConn(ipPeer(net.ParseIP(tc.newcomer))); c != nil {
				got = names[c]
			}
			if got != tc.want {
				t.Errorf("cut %q, want %q", got, tc.want)
			}
		})
	}
}

// BenchmarkHogsConn: the rule's cost for one newcomer when every slot is
// served, at the default limit and the largest, each slot held from an
// address of its own in one /48 (the spread the rule walks deepest for).
func BenchmarkHogsConn(b *testing.B) {
	for _, n := range []int{DefaultMaxConnections, maxMaxConnections} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			l := fullListener(b, n, func(i int) string { return fmt.Sprintf("2001:db8:0:%x::%x", i/16, i%16+1) })
			newcomer := ipPeer(net.ParseIP("2001:db9::1"))
			b.ReportAllocs()
			for b.Loop() {
				if l.hogsConn(newcomer) == nil {
					b.Fatal("no hog found")
				}
			}
		})
	}
}

// BenchmarkMakeRoomRefused: a newcomer for which no room is made, from
// the group holding every slot (each from an address of its own in one
// /64, the newcomer from another), as a flood of them costs Accept: one pass over the held peers
// answers both whether one may be cut and whether the newcomer blocks
// others (it was two, hogsConn's and blocksOthers').
func BenchmarkMakeRoomRefused(b *testing.B) {
	for _, n := range []int{DefaultMaxConnections, maxMaxConnections} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			l := fullListener(b, n, func(i int) string { return fmt.Sprintf("2001:db8::%x", i+1) })
			newcomer := ipPeer(net.ParseIP("2001:db8::ffff:1"))
			b.ReportAllocs()
			for b.Loop() {
				if made, blocks := l.makeRoom(newcomer); made || !blocks {
					b.Fatalf("makeRoom = %v, %v; want nothing made, blocking", made, blocks)
				}
			}
		})
	}
}
