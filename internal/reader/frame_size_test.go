package reader

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
)

// TestFrameOfManyLongNames: a snapshot the engine can produce on a host
// where one user runs 16,000 processes, each in a cgroup of its own with
// a 4 KB path (a systemd host delegates a cgroup v2 subtree to every
// user), is larger than snapshot.MaxSize (64 MiB): the reader's frame of
// it is refused, and every member's live watch (which reads cgroups)
// fails, where the walk in memwho itself had no such limit. Distinct
// 255-byte names alone take about 83,000 processes (more than this
// machine's pid_max of 32768). Not fixed: the limit is the snapshot
// format's (its length field, the agent's socket), shared with the agent.
func TestFrameOfManyLongNames(t *testing.T) {
	t.Skip("known: a snapshot past snapshot.MaxSize (16,000 processes with 4 KB cgroup paths) fails the reader's frame; docs/safe.md, \"The reader, attacked independently\"")
	const n = 16000
	var s sample.Snapshot
	for i := range n {
		name := fmt.Sprintf("%06d", i) + strings.Repeat("x", 249)
		p := sample.Process{PID: i + 1, Name: name, Comm: name[:15], Exe: name, Script: name, RAM: 100, Private: 50, Shared: 50}
		p.Cgroup = "/user.slice/" + fmt.Sprintf("%06d", i) + strings.Repeat("c", 4000)
		p.SystemdCgroup = p.Cgroup
		s.Procs = append(s.Procs, p)
	}
	buf := appendSnapshot(nil, 1, nil, &s)
	t.Logf("frame of %d bytes (snapshot.MaxSize %d)", len(buf), snapshot.MaxSize)
	var got sample.Snapshot
	if _, err := parseSnapshot(buf[frameHeader:], &got, nil); err != nil {
		t.Fatalf("the reader's frame of %d processes: %v", n, err)
	}
}

// TestFramesIntoOneSnapshot: watch decodes every frame of its reader into
// the same snapshot. A frame with a process read page by page (a bound)
// followed by one without any (that process gone, or read whole) made
// the second's first process carry the bound, and the frame was refused
// as malformed: the member's watch ended (issue 27, the independent
// attack; snapshot TestDecodeReusedLeavesNothingBehind).
func TestFramesIntoOneSnapshot(t *testing.T) {
	paced := sample.Snapshot{Procs: []sample.Process{{PID: 10, RAM: 8 << 20, Private: 4 << 20, Shared: 4 << 20,
		Accuracy: sample.Estimate, Cause: sample.CausePaced, Bound: 1 << 20}}}
	whole := sample.Snapshot{Procs: []sample.Process{{PID: 11, RAM: 4096, Private: 4096}}}
	var snap sample.Snapshot
	var deferred []Deferred
	var err error
	for i, s := range []*sample.Snapshot{&paced, &whole, &paced} {
		buf := appendSnapshot(nil, int64(i), nil, s)
		if deferred, err = parseSnapshot(buf[frameHeader:], &snap, deferred); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if snap.Procs[0] != s.Procs[0] {
			t.Errorf("frame %d decoded as %+v, want %+v", i, snap.Procs[0], s.Procs[0])
		}
	}
}
