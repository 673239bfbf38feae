package snapshot_test

import (
	"testing"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
)

// TestDecodeReusedLeavesNothingBehind: a snapshot decoded into one that
// held another (watch reads every frame of its reader, or every answer
// of an agent, into the same snapshot) keeps nothing of it. The optional
// columns (the split of RAM, private huge pages, the paced bounds, the
// systemd cgroup) are written only when some process has them: a
// decoder that skipped an absent column left the previous snapshot's
// values on whichever process now stood at that index. A process read
// page by page one tick and gone the next made the next tick's exact
// process carry its bound, which Decode then refused as malformed: the
// live watch of every member ended (issue 27, the independent attack).
func TestDecodeReusedLeavesNothingBehind(t *testing.T) {
	first := sample.Snapshot{Procs: []sample.Process{
		{PID: 10, Name: "big", RAM: 8 << 20, Private: 4 << 20, Shared: 4 << 20, PssAnon: 8 << 20,
			Accuracy: sample.Estimate, Cause: sample.CausePaced, Bound: 1 << 20, SwapBound: 4096, Swap: 8192,
			PrivateHugetlb: 2 << 20, SystemdCgroup: "/user.slice/x.scope"},
	}}
	next := sample.Snapshot{Procs: []sample.Process{
		{PID: 11, Name: "small", RAM: 4096, Private: 4096},
	}}
	var s sample.Snapshot
	if err := snapshot.Decode(snapshot.Encode(nil, &first), &s); err != nil {
		t.Fatal(err)
	}
	if err := snapshot.Decode(snapshot.Encode(nil, &next), &s); err != nil {
		t.Fatalf("the next snapshot into the same one: %v", err)
	}
	var fresh sample.Snapshot
	if err := snapshot.Decode(snapshot.Encode(nil, &next), &fresh); err != nil {
		t.Fatal(err)
	}
	if s.Procs[0] != fresh.Procs[0] {
		t.Errorf("decoded into a used snapshot: %+v\nfresh: %+v", s.Procs[0], fresh.Procs[0])
	}
}
