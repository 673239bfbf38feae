package engine

import (
	"context"
	"github.com/memwho/memwho/internal/proc/fstest"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/testload"
)

func startLoad(t testing.TB, n int, spec testload.Spec) *testload.Group {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := testload.Start(ctx, n, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop() })
	return g
}

// TestLiveExit: a process that exits disappears at the next tick, and the
// descriptor held for it is released.
func TestLiveExit(t *testing.T) {
	g := startLoad(t, 3, testload.Spec{Private: 1 << 20})
	e := newEngine(t, Options{FS: fstest.Open(t, "/proc"), PIDs: g.PIDs})
	var snap sample.Snapshot
	if err := e.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Procs) != 3 {
		t.Fatalf("procs = %d, want 3", len(snap.Procs))
	}
	for _, p := range snap.Procs {
		if p.Private < 1<<20 || p.Accuracy != sample.Exact {
			t.Errorf("pid %d: Private %d accuracy %v, want >= 1 MiB exact", p.PID, p.Private, p.Accuracy)
		}
	}
	if h := e.held.Load(); h != 3 {
		t.Errorf("held = %d, want 3", h)
	}
	g.Stop()
	if err := e.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Procs) != 0 || snap.Gone != 3 {
		t.Errorf("after exit: procs %d gone %d, want 0 and 3", len(snap.Procs), snap.Gone)
	}
	if h := e.held.Load(); h != 0 {
		t.Errorf("held after exit = %d, want 0", h)
	}
}

// TestLiveMatchesScanner compares a first tick with a report's scan of
// the same live children, and a steady tick with both.
func TestLiveMatchesScanner(t *testing.T) {
	g := startLoad(t, 4, testload.Spec{Private: 2 << 20, FileShared: 1 << 20})
	pids := g.PIDs
	e := newEngine(t, Options{FS: fstest.Open(t, "/proc"), PIDs: pids, NeedUID: true})
	var got sample.Snapshot
	for tick := range 3 {
		if err := e.Scan(&got); err != nil {
			t.Fatal(err)
		}
		want := scanner(t, Options{FS: fstest.Open(t, "/proc"), PIDs: pids, NeedStartTime: true, NeedUID: true})
		if len(got.Procs) != len(want.Procs) {
			t.Fatalf("tick %d: procs %d, want %d", tick, len(got.Procs), len(want.Procs))
		}
		for i := range want.Procs {
			g, w := got.Procs[i], want.Procs[i]
			// Idle children's figures move by a page or two of runtime
			// housekeeping between two reads; names and identity must
			// be equal.
			if g.PID != w.PID || g.StartTime != w.StartTime || g.Name != w.Name || g.PPID != w.PPID {
				t.Errorf("tick %d: got %+v, want %+v", tick, g, w)
			}
			if diff(g.RAM, w.RAM) > 64<<10 {
				t.Errorf("tick %d pid %d: RAM %d, scanner %d", tick, g.PID, g.RAM, w.RAM)
			}
		}
	}
}

func diff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}
