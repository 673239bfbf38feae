package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/testload"
)

// systemSwap scans the whole host and returns --system's swap lines from
// the report's JSON: swap used, swap the processes' SwapPss holds, and
// the remainder no process holds, in bytes.
func systemSwap(t *testing.T) (used, procs, rest int64) {
	t.Helper()
	s, err := engine.New(engine.Options{FS: fstest.Open(t, "/proc"), OneShot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var snap sample.Snapshot
	if err := s.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	var users sample.Namer
	groups := sample.GroupProcs(snap.Procs, sample.ByProgram, &users)
	var b bytes.Buffer
	if err := report.JSON(&b, groups, sample.Total(groups), &snap, report.Options{System: true}); err != nil {
		t.Fatal(err)
	}
	var r struct {
		System struct {
			SwapUsed int64 `json:"swap_used_bytes"`
			Procs    int64 `json:"process_swap_bytes"`
			Rest     int64 `json:"swap_not_in_process_bytes"`
		} `json:"system"`
	}
	if err := json.Unmarshal(b.Bytes(), &r); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	return r.System.SwapUsed, r.System.Procs, r.System.Rest
}

// TestIntegrationShmemSwap: 64 MiB of shmem a real process wrote, pushed
// to swap, is swap no process's SwapPss holds (SwapPss counts only swap
// entries in page tables). --system shows it as "swap not in any
// process", and the lines still add up to swap used.
func TestIntegrationShmemSwap(t *testing.T) {
	const size = 64 * miB
	testload.EnsureSwap(t, 512*miB)
	cg := testload.NewMemCgroup(t)
	_, _, before := systemSwap(t)
	ctx := context.Background()
	g, err := testload.Start(ctx, 1, testload.Spec{Shmem: size, Cgroup: cg.Path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop() })
	cg.PushToSwap(t, size, g.PIDs[0])
	p := scanPIDs(t, engine.Options{}, g.PIDs[0])[g.PIDs[0]]
	used, procs, after := systemSwap(t)
	t.Logf("child Swap (SwapPss) %s; host swap used %s, by processes %s, not in any process %s (before: %s)",
		kb(int64(p.Swap)), kb(used), kb(procs), kb(after), kb(before))
	if p.Swap > size/8 {
		t.Errorf("the child's SwapPss is %s: swapped shmem should not be in it", kb(int64(p.Swap)))
	}
	if used != procs+after {
		t.Errorf("swap used %d != by processes %d + not in any process %d", used, procs, after)
	}
	if grew := after - before; grew < size*9/10 {
		t.Errorf("swap not in any process grew by %s, want about %s", kb(grew), kb(size))
	}
}
