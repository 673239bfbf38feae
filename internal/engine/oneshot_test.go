package engine

import (
	"testing"

	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/memwho/memwho/internal/sample"
)

// scanFixture scans a captured tree once, as a report does.
func scanFixture(t *testing.T, name string, opt Options) *sample.Snapshot {
	t.Helper()
	opt.FS = fstest.Open(t, proctest.Root(t, "../proc/testdata/"+name+".txtar"))
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

func TestScanFixtures(t *testing.T) {
	for _, tc := range []struct {
		fixture               string
		opt                   Options
		procs, kernel, broken int
		ram                   uint64
		estimates             int
	}{
		{fixture: "basic", procs: 4, ram: 13747 << 10},
		{fixture: "basic", opt: Options{Workers: 1}, procs: 4, ram: 13747 << 10},
		{fixture: "basic", opt: Options{NeedUID: true, NeedCgroup: true, NeedStartTime: true}, procs: 4, ram: 13747 << 10},
		{fixture: "basic", opt: Options{NoNames: true, NeedUID: true}, procs: 4, ram: 13747 << 10},
		{fixture: "cgroup-v1", opt: Options{NoNames: true, NeedCgroup: true, NeedStartTime: true}, procs: 2, ram: (368 + 2416) << 10},
		{fixture: "basic", opt: Options{Fast: true}, procs: 4, ram: (3056 + 8892 + 4800 + 4792) << 10, estimates: 4},
		{fixture: "basic", opt: Options{PIDs: []int{6570, 999999}}, procs: 1, ram: 667 << 10},
		{fixture: "no-smaps-rollup", procs: 4, ram: (655 + 8454 + 2310 + 2310) << 10},
		{fixture: "kernel-thread", kernel: 3},
		{fixture: "kernel-thread", opt: Options{Fast: true}, kernel: 3},
		{fixture: "zombie", procs: 1, kernel: 1, ram: 684 << 10},
		{fixture: "truncated", procs: 1, broken: 1, ram: 368 << 10},
		{fixture: "hugetlb", procs: 1, ram: (684 + 4096) << 10},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			snap := scanFixture(t, tc.fixture, tc.opt)
			if got := len(snap.Procs); got != tc.procs {
				t.Errorf("procs = %d, want %d", got, tc.procs)
			}
			if snap.Kernel != tc.kernel || snap.Broken != tc.broken {
				t.Errorf("kernel, broken = %d, %d, want %d, %d", snap.Kernel, snap.Broken, tc.kernel, tc.broken)
			}
			var ram uint64
			est := 0
			for _, p := range snap.Procs {
				ram += p.RAM
				if p.Accuracy == sample.Estimate {
					est++
				}
				if p.Private+p.Shared != p.RAM {
					t.Errorf("pid %d: Private %d + Shared %d != RAM %d", p.PID, p.Private, p.Shared, p.RAM)
				}
				if (p.Name == "") != tc.opt.NoNames {
					t.Errorf("pid %d: Name %q with NoNames %v", p.PID, p.Name, tc.opt.NoNames)
				}
				if tc.opt.NeedCgroup && p.Cgroup == "" {
					t.Errorf("pid %d: no cgroup", p.PID)
				}
			}
			if ram != tc.ram {
				t.Errorf("RAM sum = %d, want %d", ram, tc.ram)
			}
			if est != tc.estimates {
				t.Errorf("estimates = %d, want %d", est, tc.estimates)
			}
			if tc.opt.NeedStartTime {
				for _, p := range snap.Procs {
					if p.StartTime == 0 || p.PPID == 0 {
						t.Errorf("pid %d: StartTime %d PPID %d not filled", p.PID, p.StartTime, p.PPID)
					}
				}
			}
			if !snap.MeminfoOK && tc.fixture == "basic" {
				t.Error("meminfo not read")
			}
		})
	}
}

// TestScanReuse scans twice with one OneShot sampler: the second scan must give
// the same result from reused buffers and allocate nothing per process.
func TestScanReuse(t *testing.T) {
	root := proctest.Root(t, "../proc/testdata/basic.txtar")
	s, err := New(Options{FS: fstest.Open(t, root), OneShot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var a, b sample.Snapshot
	s.Scan(&a)
	first := append([]sample.Process(nil), a.Procs...)
	s.Scan(&b)
	for i := range first {
		if first[i] != b.Procs[i] {
			t.Errorf("scan 2 proc %d = %+v, scan 1 %+v", i, b.Procs[i], first[i])
		}
	}
	// Steady state: a few allocations per scan (goroutines, names of the
	// "SCRIPT [EXE]" kind), none per process read.
	allocs := testing.AllocsPerRun(20, func() { s.Scan(&b) })
	if allocs > 12 {
		t.Errorf("Scan allocs = %v, want at most 12 for 4 processes", allocs)
	}
}

// TestScanCorners: the fake-/proc cases of issue 11 (corners.txtar,
// leader-exited.txtar), in every scanning mode that reads figures.
func TestScanCorners(t *testing.T) {
	const pss, rss = 8456 << 10, 8892 << 10 // of 6571 in basic.txtar
	for _, opt := range []Options{{}, {NeedStartTime: true, NeedUID: true}, {NeedCgroup: true}} {
		snap := scanFixture(t, "corners", opt)
		byPID := map[int]sample.Process{}
		for _, p := range snap.Procs {
			byPID[p.PID] = p
		}
		for _, tc := range []struct {
			pid  int
			name string
			ram  uint64
			acc  sample.Accuracy
		}{
			// Cut at a line boundary: malformed, the status estimate.
			{7101, "helper", rss, sample.Estimate},
			// memfd exe: argv[0], never "memfd:...".
			{7102, "myserver-daemon", pss, sample.Exact},
			// The same program with and without a readable exe link.
			{7103, "app.py [python3.11]", pss, sample.Exact},
			{7104, "app.py [python3.11]", pss, sample.Exact},
		} {
			p, ok := byPID[tc.pid]
			if !ok {
				t.Errorf("%+v: pid %d missing", opt, tc.pid)
				continue
			}
			if p.Name != tc.name || p.RAM != tc.ram || p.Accuracy != tc.acc {
				t.Errorf("%+v: pid %d = %q %d %v, want %q %d %v", opt, tc.pid, p.Name, p.RAM, p.Accuracy, tc.name, tc.ram, tc.acc)
			}
		}
		if p := byPID[7101]; p.Cause != sample.CauseMalformed || snap.Malformed != 1 {
			t.Errorf("%+v: 7101 cause %v, snapshot malformed %d; want malformed, 1", opt, p.Cause, snap.Malformed)
		}
		// Exited mid-read: gone, not a row.
		if _, ok := byPID[7105]; ok || snap.Gone != 1 {
			t.Errorf("%+v: 7105 listed %v, gone %d; want absent, 1", opt, ok, snap.Gone)
		}
		// No MemAvailable: the kernel's estimate from the zone
		// watermarks, never 0.
		m := snap.Meminfo
		if !snap.MeminfoOK || m.Available != sample.AvailableEstimated || m.MemAvailable == 0 || m.MemAvailable > m.MemTotal {
			t.Errorf("%+v: meminfo ok %v, MemAvailable %d of %d (%v), want an estimate", opt, snap.MeminfoOK, m.MemAvailable, m.MemTotal, m.Available)
		}
		if m.SwapCached != 10<<20 {
			t.Errorf("SwapCached = %d, want 10 MiB", m.SwapCached)
		}
	}
}

func TestScanLeaderExited(t *testing.T) {
	for _, opt := range []Options{{}, {NeedStartTime: true}, {Fast: true}, {NoNames: true, NeedCgroup: true}} {
		snap := scanFixture(t, "leader-exited", opt)
		if len(snap.Procs) != 1 || snap.Kernel != 0 {
			t.Fatalf("%+v: %d processes, %d kernel; want the leader-exited process listed", opt, len(snap.Procs), snap.Kernel)
		}
		p := snap.Procs[0]
		want := uint64(35268 << 10) // task/5354/smaps_rollup Pss
		if opt.Fast {
			want = 35276 << 10 // task/5354/status VmRSS
		}
		if p.PID != 5352 || p.RAM != want {
			t.Errorf("%+v: pid %d RAM %d, want 5352 %d", opt, p.PID, p.RAM, want)
		}
		if !opt.NoNames && p.Name != "lx" {
			t.Errorf("%+v: name %q, want lx", opt, p.Name)
		}
		if opt.NeedStartTime && p.StartTime != 126271 {
			t.Errorf("StartTime = %d, want the leader's 126271", p.StartTime)
		}
	}
}
