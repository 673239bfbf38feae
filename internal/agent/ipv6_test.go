package agent

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memwho/memwho/internal/snapshot/snapserve"
)

// TestIPSource: an IPv4 peer is its address, however written, but
// loopback one source; an IPv6 peer is its /64.
func TestIPSource(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1":                 "127.0.0.0/8",
		"::ffff:127.0.0.1":          "127.0.0.0/8",
		"127.1.2.3":                 "127.0.0.0/8",
		"192.0.2.7":                 "192.0.2.7",
		"2001:db8:1:2:3:4:5:6":      "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff:ffff::1": "2001:db8:1:2::/64",
		"2001:db8:1:3::1":           "2001:db8:1:3::/64",
		"::1":                       "::/64",
		"fe80::1":                   "fe80::/64",
	} {
		if got := ipSource(net.ParseIP(in)); got != want {
			t.Errorf("ipSource(%s) = %q, want %q", in, got, want)
		}
	}
	if got := ipSource(nil); got != "<nil>" {
		t.Errorf("ipSource(nil) = %q", got)
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
	if !r12Netns(t) {
		return
	}
	release := make(chan struct{})
	defer close(release)
	var started sync.WaitGroup
	started.Add(4)
	addr, _ := listenLimited(t, Listeners{TCP: "[fd00:6d77:0:2::1]:0", MaxConns: 4}, r11Slow(release, &started))
	var dialled atomic.Int32
	hog := r12Spread(func(i int32) string { return fmt.Sprintf("fd00:6d77::%x", i) }, &dialled)
	hogs := r11Hold(t, hog, "http://"+addr, 4, &started)
	r11Answered(t, fromIP("fd00:6d77:0:1::1"), "http://"+addr+"/metrics", "a newcomer from another /64")
	r11WantCut(t, hogs)
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
