package sample

import (
	"github.com/memwho/memwho/internal/proc/fstest"
	"testing"

	"github.com/memwho/memwho/internal/proc/proctest"
)

func scanFixture(t *testing.T, name string, opt Options) *Snapshot {
	t.Helper()
	opt.FS = fstest.Open(t, proctest.Root(t, "../proc/testdata/"+name+".txtar"))
	s, err := NewScanner(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var snap Snapshot
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
				if p.Accuracy == Estimate {
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

// TestScanReuse scans twice with one Scanner: the second scan must give
// the same result from reused buffers and allocate nothing per process.
func TestScanReuse(t *testing.T) {
	root := proctest.Root(t, "../proc/testdata/basic.txtar")
	s, err := NewScanner(Options{FS: fstest.Open(t, root)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var a, b Snapshot
	s.Scan(&a)
	first := append([]Process(nil), a.Procs...)
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
