package engine

import (
	"github.com/memwho/memwho/internal/proc/fstest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/memwho/memwho/internal/sample"
)

var fixtures = []string{"basic", "no-smaps-rollup", "kernel-thread", "zombie", "names", "truncated", "hugetlb", "swap", "cgroup-v1", "cgroup-v2"}

func newEngine(t *testing.T, opt Options) *Engine {
	t.Helper()
	e, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// scanner scans once as a report does (OneShot).
func scanner(t *testing.T, opt Options) *sample.Snapshot {
	t.Helper()
	opt.OneShot = true
	s, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var snap sample.Snapshot
	if err := s.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	return &snap
}

// TestMatchesScanner checks that a first tick gives, on every captured
// tree, exactly what a report's scan (OneShot) gives: same processes, figures,
// names and counters.
func TestMatchesScanner(t *testing.T) {
	for _, fx := range fixtures {
		for _, tc := range []struct {
			name string
			opt  Options
		}{
			{"default", Options{}},
			{"uid-cgroup", Options{NeedUID: true, NeedCgroup: true}},
			{"fast", Options{Fast: true}},
			{"unheld", Options{MaxHeld: -1}},
			{"one-worker", Options{Workers: 1}},
		} {
			t.Run(fx+"/"+tc.name, func(t *testing.T) {
				root := proctest.Root(t, "../proc/testdata/"+fx+".txtar")
				opt := tc.opt
				opt.FS = fstest.Open(t, root)
				e := newEngine(t, opt)
				var got sample.Snapshot
				if err := e.Scan(&got); err != nil {
					t.Fatal(err)
				}
				// What the report shows; the engine also fills start
				// times and parents, which a scan that asks for them
				// gives (it drops a process whose stat is unparsable,
				// which the engine and the report keep).
				want := scanner(t, Options{FS: fstest.Open(t, root), NeedUID: opt.NeedUID,
					NeedCgroup: opt.NeedCgroup, Fast: opt.Fast})
				withStart := scanner(t, Options{FS: fstest.Open(t, root), NeedStartTime: true, NeedUID: opt.NeedUID,
					NeedCgroup: opt.NeedCgroup, Fast: opt.Fast})
				if opt.MaxHeld < 0 {
					// Without a held descriptor only the start time
					// identifies a process: stat is needed.
					want = withStart
				}
				for i := range want.Procs {
					w := &want.Procs[i]
					if p := find(withStart, w.PID); p != nil {
						w.StartTime, w.PPID = p.StartTime, p.PPID
					}
				}
				compareSnaps(t, &got, want, opt)
				if d := e.Details(); len(d) != len(got.Procs) {
					t.Fatalf("details %d, procs %d", len(d), len(got.Procs))
				}
			})
		}
	}
}

func compareSnaps(t *testing.T, got, want *sample.Snapshot, opt Options) {
	t.Helper()
	if len(got.Procs) != len(want.Procs) {
		t.Fatalf("procs = %d, want %d\ngot  %+v\nwant %+v", len(got.Procs), len(want.Procs), got.Procs, want.Procs)
	}
	for i := range want.Procs {
		g, w := got.Procs[i], want.Procs[i]
		if !opt.NeedUID && !w.UIDKnown {
			// The engine reads status, and with it the uid, where a
			// report reads only comm.
			g.UID, g.UIDKnown = w.UID, w.UIDKnown
		}
		if w.StartTime == 0 {
			// stat unparsable: the engine takes the parent from
			// status, the report did not look.
			w.PPID = g.PPID
		}
		if g != w {
			t.Errorf("proc %d:\ngot  %+v\nwant %+v", w.PID, g, w)
		}
	}
	if got.Gone != want.Gone || got.Denied != want.Denied || got.Kernel != want.Kernel ||
		got.Broken != want.Broken || got.Malformed != want.Malformed {
		t.Errorf("counters gone/denied/kernel/broken/malformed = %d/%d/%d/%d/%d, want %d/%d/%d/%d/%d",
			got.Gone, got.Denied, got.Kernel, got.Broken, got.Malformed,
			want.Gone, want.Denied, want.Kernel, want.Broken, want.Malformed)
	}
	if got.MeminfoOK != want.MeminfoOK || got.Meminfo != want.Meminfo {
		t.Errorf("meminfo = %v %+v, want %v %+v", got.MeminfoOK, got.Meminfo, want.MeminfoOK, want.Meminfo)
	}
}

// TestUnchangedKeepsFigures: a process whose statm did not move is not
// walked again, so a changed smaps_rollup alone is not seen until its
// forced walk; a changed statm makes the engine walk it at once.
func TestUnchangedKeepsFigures(t *testing.T) {
	root := proctest.Root(t, "../proc/testdata/basic.txtar")
	e := newEngine(t, Options{FS: fstest.Open(t, root), FullEvery: 1000, MaxHeld: -1, WalkBudget: -1})
	var snap sample.Snapshot
	if err := e.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	pid := snap.Procs[1].PID
	ram := snap.Procs[1].RAM
	dir := filepath.Join(root, itoa(pid))
	rollup := readFile(t, filepath.Join(dir, "smaps_rollup"))
	bumped := bumpPss(t, rollup)
	writeFile(t, filepath.Join(dir, "smaps_rollup"), bumped)

	if err := e.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Walks() != 0 || st.Checked != len(snap.Procs) {
		t.Errorf("tick 2: walks = %d (%+v), want 0", st.Walks(), st)
	}
	if got := find(&snap, pid).RAM; got != ram {
		t.Errorf("tick 2: RAM = %d, want the stale %d", got, ram)
	}

	statm := readFile(t, filepath.Join(dir, "statm"))
	f := strings.Fields(statm)
	f[1] = f[1] + "1" // resident moved
	writeFile(t, filepath.Join(dir, "statm"), strings.Join(f, " ")+"\n")
	if err := e.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Changed != 1 {
		t.Errorf("tick 3: changed = %d, want 1 (%+v)", st.Changed, st)
	}
	if got := find(&snap, pid).RAM; got != ram+1024 {
		t.Errorf("tick 3: RAM = %d, want %d", got, ram+1024)
	}
	for i, d := range e.Details() {
		if want := snap.Procs[i].PID == pid; d.Walked != want {
			t.Errorf("pid %d: Walked = %v, want %v", d.PID, d.Walked, want)
		}
	}
}

// TestBudget: a process whose walk costs more than its budget allows is
// not walked again, however its statm moves, and says so.
func TestBudget(t *testing.T) {
	root := proctest.Root(t, "../proc/testdata/basic.txtar")
	// A budget so small that any walk postpones the next one for hours.
	e := newEngine(t, Options{FS: fstest.Open(t, root), FullEvery: 1, WalkBudget: 1e-12})
	var snap sample.Snapshot
	if err := e.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	pid := snap.Procs[0].PID
	statm := filepath.Join(root, itoa(pid), "statm")
	f := strings.Fields(readFile(t, statm))
	f[1] += "1"
	writeFile(t, statm, strings.Join(f, " ")+"\n")
	if err := e.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if st.Walks() != 0 || st.Deferred != len(snap.Procs) {
		t.Errorf("walks %d deferred %d, want 0 and %d", st.Walks(), st.Deferred, len(snap.Procs))
	}
	for _, d := range e.Details() {
		if !d.Deferred || d.Walked || d.WalkCost <= 0 || d.SampledAt.After(st.Start) {
			t.Errorf("pid %d: %+v, want deferred with its cost and first sample time", d.PID, d)
		}
	}
	// ForceFull ignores the budget.
	e.ForceFull()
	e.Scan(&snap)
	if st := e.Stats(); st.Forced != len(snap.Procs) {
		t.Errorf("after ForceFull: forced %d, want %d", st.Forced, len(snap.Procs))
	}
}

// TestForcedWalk: every process is walked again within FullEvery ticks.
func TestForcedWalk(t *testing.T) {
	root := proctest.Root(t, "../proc/testdata/basic.txtar")
	const k = 4
	e := newEngine(t, Options{FS: fstest.Open(t, root), FullEvery: k, WalkBudget: -1})
	var snap sample.Snapshot
	last := map[int]int{}
	for tick := 1; tick <= 3*k; tick++ {
		if err := e.Scan(&snap); err != nil {
			t.Fatal(err)
		}
		for _, d := range e.Details() {
			if d.Walked {
				if l, ok := last[d.PID]; ok && tick-l > k {
					t.Errorf("pid %d walked at ticks %d and %d: more than %d apart", d.PID, l, tick, k)
				}
				last[d.PID] = tick
			}
		}
	}
	for pid, l := range last {
		if 3*k-l >= k {
			t.Errorf("pid %d last walked at tick %d of %d", pid, l, 3*k)
		}
	}
}

// TestPIDReuse: a process replaced by another under the same PID (here:
// a new start time) is read afresh, never given the old figures.
func TestPIDReuse(t *testing.T) {
	root := proctest.Root(t, "../proc/testdata/basic.txtar")
	e := newEngine(t, Options{FS: fstest.Open(t, root), FullEvery: 1000, MaxHeld: -1})
	var snap sample.Snapshot
	e.Scan(&snap)
	a, b := snap.Procs[0], snap.Procs[1]
	// Move b's files into a's directory, as if a exited and b's twin
	// took its PID.
	da, db := filepath.Join(root, itoa(a.PID)), filepath.Join(root, itoa(b.PID))
	os.RemoveAll(da)
	if err := os.CopyFS(da, os.DirFS(db)); err != nil {
		t.Fatal(err)
	}
	// The fixture's processes all started in the same clock tick; give
	// the newcomer a later one.
	stat := readFile(t, filepath.Join(da, "stat"))
	i := strings.LastIndexByte(stat, ')')
	f := strings.Fields(stat[i+1:])
	f[19] = itoa(atoi(f[19]) + 100)
	writeFile(t, filepath.Join(da, "stat"), stat[:i+1]+" "+strings.Join(f, " ")+"\n")
	e.Scan(&snap)
	got := find(&snap, a.PID)
	if got == nil || got.RAM != b.RAM || got.StartTime != b.StartTime+100 {
		t.Fatalf("reused pid %d: got %+v, want b's figures %+v", a.PID, got, b)
	}
	if st := e.Stats(); st.New != 1 {
		t.Errorf("new = %d, want 1", st.New)
	}
}

func find(s *sample.Snapshot, pid int) *sample.Process {
	for i := range s.Procs {
		if s.Procs[i].PID == pid {
			return &s.Procs[i]
		}
	}
	return nil
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// bumpPss adds 1 kB to the Pss line of a smaps_rollup text.
func bumpPss(t *testing.T, s string) string {
	t.Helper()
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "Pss:") {
			f := strings.Fields(l)
			n := atoi(f[1]) + 1
			lines[i] = "Pss:  " + itoa(n) + " kB"
			return strings.Join(lines, "\n")
		}
	}
	t.Fatal("no Pss line")
	return ""
}

func itoa(n int) string { return strconv.Itoa(n) }

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// TestTickAllocs: a tick of an unchanged tree allocates a few times for
// its goroutines, never per process.
func TestTickAllocs(t *testing.T) {
	root := proctest.Root(t, "../proc/testdata/basic.txtar")
	e := newEngine(t, Options{FS: fstest.Open(t, root), FullEvery: 1 << 30, Workers: 2})
	var snap sample.Snapshot
	for range 3 {
		e.Scan(&snap)
	}
	n := testing.AllocsPerRun(50, func() { e.Scan(&snap) })
	// Two parallel phases of two workers: closures and goroutines.
	t.Logf("%.1f allocations per tick", n)
	if n > 8 {
		t.Errorf("a steady tick allocates %.1f times, want at most 8", n)
	}
}

// TestUnheldKernelSteady: without descriptors, kernel threads and zombies
// are told apart from a PID's next process by their start time, so a
// second tick finds them known, not new (nor gone).
func TestUnheldKernelSteady(t *testing.T) {
	for _, fx := range []string{"kernel-thread", "zombie", "leader-exited"} {
		for _, fast := range []bool{false, true} {
			root := proctest.Root(t, "../proc/testdata/"+fx+".txtar")
			e := newEngine(t, Options{FS: fstest.Open(t, root), MaxHeld: -1, FullEvery: 1000, Fast: fast})
			var snap sample.Snapshot
			e.Scan(&snap)
			kernel, procs := snap.Kernel, len(snap.Procs)
			e.Scan(&snap)
			if st := e.Stats(); len(e.walks) != 0 || snap.Gone != 0 || snap.Kernel != kernel || len(snap.Procs) != procs {
				t.Errorf("%s fast=%v: tick 2 read %d again (%+v), gone %d kernel %d procs %d, want 0 0 %d %d",
					fx, fast, len(e.walks), st, snap.Gone, snap.Kernel, len(snap.Procs), kernel, procs)
			}
		}
	}
}
