package engine

import (
	"github.com/memwho/memwho/internal/proc/fstest"
	"strconv"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/testload"
)

// TestLiveLeaderExited: a process whose main thread exited while another
// runs on is sampled through that thread, on the first tick and the
// steady ticks after it, with held descriptors and without, in exact and
// --fast mode; and it keeps the leader's start time.
func TestLiveLeaderExited(t *testing.T) {
	const size = 16 << 20
	g := startLoad(t, 1, testload.Spec{Private: size, LeaderExit: true})
	pid := g.PIDs[0]
	tid, err := testload.WaitLeaderExited(pid, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start, err := testload.StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"held", Options{}},
		{"by path", Options{MaxHeld: -1}},
		{"every tick", Options{FullEvery: 1}},
		{"fast", Options{Fast: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opt.PIDs = []int{pid}
			tc.opt.FS = fstest.Open(t, "/proc")
			e := newEngine(t, tc.opt)
			for tick := 1; tick <= 3; tick++ {
				var snap sample.Snapshot
				if err := e.Scan(&snap); err != nil {
					t.Fatal(err)
				}
				if len(snap.Procs) != 1 {
					t.Fatalf("tick %d: %d processes (kernel %d, gone %d), want the leader-exited one", tick, len(snap.Procs), snap.Kernel, snap.Gone)
				}
				p := snap.Procs[0]
				file, key := "smaps_rollup", "Pss"
				if tc.opt.Fast {
					file, key = "status", "VmRSS"
				}
				want, err := testload.ProcKB(pid, "task/"+strconv.Itoa(tid)+"/"+file)
				if err != nil {
					t.Fatal(err)
				}
				if d := int64(p.RAM) - want[key]; d < -64<<10 || d > 64<<10 {
					t.Errorf("tick %d: RAM %d, task %s %s %d", tick, p.RAM, file, key, want[key])
				}
				if p.Private < size {
					t.Errorf("tick %d: Private %d, want at least %d", tick, p.Private, size)
				}
				if d := e.Details()[0]; d.StartTime != start {
					t.Errorf("tick %d: StartTime %d, want the leader's %d", tick, d.StartTime, start)
				}
			}
		})
	}
}
