package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	if os.Getenv(netnsEnv) == "" {
		if os.Geteuid() != 0 {
			t.Skip("skipping: needs root for a network namespace with an IPv6 prefix routed to lo")
		}
		for _, tool := range []string{"unshare", "ip"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("skipping: %s not installed (util-linux, iproute2)", tool)
			}
		}
		cmd := exec.Command("unshare", "--net", "--", os.Args[0], "-test.run", "^TestMaxConnectionsHogIPv6$", "-test.count", "1", "-test.v", "-test.timeout", "60s")
		cmd.Env = append(os.Environ(), netnsEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("in a network namespace: %v\n%s", err, out)
		}
		return
	}
	for _, args := range [][]string{{"link", "set", "lo", "up"}, {"-6", "route", "add", "local", "fd00:6d77::/48", "dev", "lo"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %q: %v\n%s", args, err, out)
		}
	}
	// A local route makes the prefix this host's; binding an address of
	// it that no interface holds takes ip_nonlocal_bind (this namespace's).
	if err := os.WriteFile("/proc/sys/net/ipv6/ip_nonlocal_bind", []byte("1\n"), 0); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	var started sync.WaitGroup
	started.Add(4)
	addr, _ := listenLimited(t, Listeners{TCP: "[fd00:6d77:0:2::1]:0", MaxConns: 4}, r11Slow(release, &started))
	var next atomic.Int32
	hog := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			local := net.ParseIP(fmt.Sprintf("fd00:6d77::%x", next.Add(1)))
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: local}, Timeout: 5 * time.Second}
			return d.DialContext(ctx, network, a)
		},
	}}
	hogs := r11Hold(t, hog, "http://"+addr, 4, &started)
	resp, err := fromIP("fd00:6d77:0:1::1").Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("a newcomer from another /64: %v", err)
	}
	resp.Body.Close()
	r11WantCut(t, hogs)
	if n := next.Load(); n != 4 {
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
