package engine_test

// Corner cases of issue 11 on real processes: a process whose main thread
// has exited while others run on. The fake-/proc versions are in
// scan_test.go.

import (
	"github.com/memwho/memwho/internal/proc/fstest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/testload"
)

// TestIntegrationLeaderExited: a child touches 32 MiB, then its main
// thread exits alone. /proc/PID is a zombie with no memory; the scan must
// still list the process, exact, with the figures of a live thread's
// smaps_rollup, in every mode that reads figures.
func TestIntegrationLeaderExited(t *testing.T) {
	const size = 32 * miB
	g := startLoad(t, 1, testload.Spec{Private: size, LeaderExit: true})
	pid := g.PIDs[0]
	tid, err := testload.WaitLeaderExited(pid, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	for _, tc := range []struct {
		name  string
		opt   engine.Options
		exact bool
	}{
		{"default", engine.Options{}, true},
		{"start times", engine.Options{NeedStartTime: true, NeedUID: true}, true},
		{"by cgroup", engine.Options{NoNames: true, NeedCgroup: true}, true},
		{"fast", engine.Options{Fast: true}, false},
		{"fast with start times", engine.Options{Fast: true, NeedStartTime: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := scanPIDs(t, tc.opt, pid)[pid]
			// Ground truth, read independently of memwho's parsers
			// through the thread memwho may have picked or another.
			var want map[string]int64
			if tc.exact {
				want, err = testload.ProcKB(pid, "task/"+strconv.Itoa(tid)+"/smaps_rollup")
			} else {
				want, err = testload.ProcKB(pid, "task/"+strconv.Itoa(tid)+"/status")
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.exact {
				if p.Accuracy != sample.Exact {
					t.Errorf("accuracy %v, want exact", p.Accuracy)
				}
				if got, w := int64(p.RAM), want["Pss"]+want["Private_Hugetlb"]; !within(got, w, 0, 64*kiB) {
					t.Errorf("RAM = %s, task smaps_rollup Pss = %s", kb(got), kb(w))
				}
			} else if got, w := int64(p.RAM), want["VmRSS"]; !within(got, w, 0, 64*kiB) {
				t.Errorf("RAM = %s, task status VmRSS = %s", kb(got), kb(w))
			}
			if int64(p.Private) < size {
				t.Errorf("Private = %s, want at least the %s the child wrote", kb(int64(p.Private)), kb(size))
			}
			if !tc.opt.NoNames && !tc.opt.Fast && p.Name != filepath.Base(exe) {
				t.Errorf("Name = %q, want %q", p.Name, filepath.Base(exe))
			}
			if tc.opt.NeedStartTime {
				st, err := testload.StartTime(pid)
				if err != nil || p.StartTime != st {
					t.Errorf("StartTime = %d, want the leader's %d (%v)", p.StartTime, st, err)
				}
			}
			if tc.opt.NeedCgroup && p.Cgroup == "" {
				t.Errorf("Cgroup empty")
			}
		})
	}

	// A scan of the whole host lists it too, rather than counting it
	// among kernel threads and zombies.
	s, err := engine.New(engine.Options{FS: fstest.Open(t, "/proc"), OneShot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var snap sample.Snapshot
	if err := s.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range snap.Procs {
		found = found || p.PID == pid
	}
	if !found {
		t.Errorf("pid %d missing from a scan of every process", pid)
	}
}
