package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/testload"
)

// pacedJSON is the part of a report's JSON a paced read shows.
type pacedJSON struct {
	Groups []struct {
		RAM      int64  `json:"ram_bytes"`
		Private  int64  `json:"private_bytes"`
		Bound    int64  `json:"ram_bound_bytes"`
		Accuracy string `json:"accuracy"`
	} `json:"groups"`
}

// TestPrivilegedInstallPacedNoFrames: a member of the group reads root's
// large processes page by page (the scan keeps CAP_DAC_READ_SEARCH, which
// pagemap, mode 0400, needs): the kernel shows the install no frame numbers
// (they need CAP_SYS_ADMIN), so memwho never looks frames up in
// /proc/kpagecount, which CAP_DAC_READ_SEARCH would let it open: the
// pages the processes share are estimates within a bound, where root's
// own report, looking them up, is exact. What the member learns is the
// private memory smaps_rollup gave it before, and a bound no tighter
// than smaps_rollup's shared memory.
func TestPrivilegedInstallPacedNoFrames(t *testing.T) {
	e := installPrivileged(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := testload.Start(ctx, 2, testload.Spec{Private: 80 << 20, FileShared: 16 << 20, OwnText: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	pid := strconv.Itoa(g.PIDs[0])
	parse := func(who, out string) pacedJSON {
		t.Helper()
		var r pacedJSON
		if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Groups) != 1 {
			t.Fatalf("%s: JSON %v: %s", who, err, out)
		}
		return r
	}

	var rootOut, rootErr bytes.Buffer
	if code := run(context.Background(), []string{"--fresh", "--by", "pid", "-p", pid, "--json"}, &rootOut, &rootErr); code != 0 {
		t.Fatalf("as root: exit %d: %s", code, rootErr.String())
	}
	root := parse("root", rootOut.String()).Groups[0]
	if root.Accuracy != "exact" || root.Bound != 0 {
		t.Fatalf("as root, frames looked up: %+v, want exact (stderr %q)", root, rootErr.String())
	}

	stdout, stderr, code := e.run(t, "--fresh", "--by", "pid", "-p", pid, "--json")
	if code != 0 {
		t.Fatalf("as the member: exit %d: %s", code, stderr)
	}
	m := parse("member", stdout).Groups[0]
	if m.Accuracy != "estimate" || m.Bound == 0 || !strings.Contains(stderr, "page by page") {
		t.Fatalf("as the member: %+v, stderr %q: want an estimate read page by page, with a bound", m, stderr)
	}
	if d := m.Private - root.Private; d > pssSlack || -d > pssSlack {
		t.Errorf("member's private %d, root's %d", m.Private, root.Private)
	}
	if m.RAM < root.RAM-pssSlack || m.RAM > root.RAM+m.Bound+pssSlack {
		t.Errorf("member's RAM %d (bound %d), root's %d", m.RAM, m.Bound, root.RAM)
	}
	// 16 MiB shared by two: at most its half may be unknown.
	if m.Bound > 16<<20 {
		t.Errorf("bound %d beyond the shared memory", m.Bound)
	}
}
