package engine

import (
	"context"
	"github.com/memwho/memwho/internal/proc/fstest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/proc"
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

// TestLiveKeptRollup: the smaps_rollup descriptors kept between walks
// (keepRollup) give the figures a read by path gives; a process that
// exec'd is read afresh under its new name, neither gone nor a kernel
// thread; an unchanged process gives its descriptor back at its forced
// walk; and an exited one releases it.
func TestLiveKeptRollup(t *testing.T) {
	g := startLoad(t, 2, testload.Spec{Private: 1 << 20})
	cmd := exec.Command("sh", "-c", "read x; exec sleep 600")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sh := cmd.Process.Pid
	waitComm(t, sh, "sh")
	pids := append([]int{sh}, g.PIDs...)
	const k = 4
	e := newEngine(t, Options{FS: fstest.Open(t, "/proc"), PIDs: pids, FullEvery: k, WalkBudget: -1})
	var snap sample.Snapshot
	if err := e.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	if n := e.kept.Load(); n != 3 {
		t.Fatalf("kept after the first tick = %d, want 3 (one per new process)", n)
	}
	if e.keepMax > maxKept || e.keepMax > e.maxHeld-int64(len(pids)) {
		t.Errorf("keepMax %d: over maxKept %d or over MaxHeld %d less one statm descriptor per process", e.keepMax, maxKept, e.maxHeld)
	}

	// Walk every process again through its kept descriptor.
	e.Scan(&snap)
	for i := range e.recs {
		if rc := &e.recs[i]; rc.pid != 0 {
			rc.act, rc.moved = actChanged, true
		}
	}
	e.walks = append(e.walks[:0], e.work...)
	e.parallel(e.walks, func(w *worker, rc *record) { e.rewalk(w, rc, time.Now()) })
	want := scanner(t, Options{FS: fstest.Open(t, "/proc"), PIDs: pids})
	for _, i := range e.work {
		rc := &e.recs[i]
		w := find(want, rc.pid)
		if w == nil || rc.st != stExact || !rc.walked || rc.rfd < 0 {
			t.Fatalf("pid %d: state %d walked %v kept %d, report %+v", rc.pid, rc.st, rc.walked, rc.rfd, w)
		}
		if d := int64(rc.p.RAM) - int64(w.RAM); d > 64<<10 || d < -64<<10 {
			t.Errorf("pid %d: RAM through the kept descriptor %d, report %d", rc.pid, rc.p.RAM, w.RAM)
		}
	}

	// A walk through a kept descriptor allocates nothing.
	rc0 := &e.recs[e.byPID[g.PIDs[1]]]
	if n := testing.AllocsPerRun(20, func() {
		if _, ok := e.readKept(e.workers[0], rc0, false); !ok {
			t.Fatal("the kept descriptor no longer reads")
		}
	}); n != 0 {
		t.Errorf("a walk through the kept descriptor allocates %v times, want 0", n)
	}

	// statm without an address space (an exiting process, or a leader
	// that exited while its threads run on): the descriptor is not
	// used, and given back.
	rc := &e.recs[e.byPID[g.PIDs[0]]]
	saved := rc.now
	rc.now = proc.Statm{OK: true}
	if st, ok := e.readKept(e.workers[0], rc, false); ok || rc.rfd >= 0 {
		t.Errorf("readKept with a zero statm: state %d ok %v kept %d, want declined and closed", st, ok, rc.rfd)
	}
	rc.now = saved
	e.workers[0].r.Close()

	// exec: the descriptor no longer reads; the process is read by path.
	in.Write([]byte("go\n"))
	waitComm(t, sh, "sleep")
	if err := e.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	p := find(&snap, sh)
	if p == nil || p.Name != "sleep" || snap.Gone != 0 || snap.Kernel != 0 || p.Accuracy != sample.Exact {
		t.Fatalf("after exec: %+v (gone %d kernel %d), want sleep, exact", p, snap.Gone, snap.Kernel)
	}
	want = scanner(t, Options{FS: fstest.Open(t, "/proc"), PIDs: []int{sh}})
	if d := int64(p.RAM) - int64(want.Procs[0].RAM); d > 64<<10 || d < -64<<10 {
		t.Errorf("after exec: RAM %d, report %d", p.RAM, want.Procs[0].RAM)
	}
	if n := e.kept.Load(); n != 2 {
		t.Errorf("kept after the exec = %d, want 2 (the load child given back above keeps none until its next change)", n)
	}

	// Unchanged for k ticks (sleep; the load's Go children may touch a
	// page now and then): each forced walk gives its descriptor back.
	for range 2 * k {
		e.Scan(&snap)
	}
	for _, i := range e.work {
		rc := &e.recs[i]
		if rc.rfd >= 0 && (rc.pid == sh || e.tick >= rc.changed+k) {
			t.Errorf("pid %d keeps its descriptor, last changed at tick %d of %d", rc.pid, rc.changed, e.tick)
		}
	}

	cmd.Process.Kill()
	cmd.Wait()
	g.Stop()
	e.Scan(&snap)
	if n, h := e.kept.Load(), e.held.Load(); n != 0 || h != 0 {
		t.Errorf("after exit: kept %d held %d, want 0", n, h)
	}
}

// waitComm waits until pid's task name is name: it has exec'd.
func waitComm(t *testing.T, pid int, name string) {
	t.Helper()
	for range 500 {
		comm, _ := os.ReadFile("/proc/" + itoa(pid) + "/comm")
		if strings.TrimSpace(string(comm)) == name {
			time.Sleep(20 * time.Millisecond)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pid %d did not become %s", pid, name)
}
