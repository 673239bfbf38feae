package engine

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/testload"
	"golang.org/x/sys/unix"
)

// TestLowFileLimit: under a low open-file limit, and with every spare
// descriptor taken in the middle of a run, no process memwho could not
// read for want of descriptors counts as gone. Each is read again
// (retried, or read as new at the next tick) or counted in Broken, the
// count a report and watch warn about; once descriptors are free again,
// every process is back with its figures. Below MinFiles, New refuses
// with one error. The limit is set in a child (this test binary again),
// so that the rest of the tests keep theirs.
func TestLowFileLimit(t *testing.T) {
	if os.Getenv("MEMWHO_NOFILE_CHILD") != "" {
		lowFileLimitChild(t)
		return
	}
	g := startLoad(t, 40, testload.Spec{Private: 256 << 10})
	pids := make([]string, len(g.PIDs))
	for i, pid := range g.PIDs {
		pids[i] = strconv.Itoa(pid)
	}
	for _, limit := range []int{MinFiles - 1, MinFiles, MinFiles + 4, 40, 64, 100, 1024} {
		for _, mode := range []string{"tick", "oneshot"} {
			t.Run(mode+"/"+strconv.Itoa(limit), func(t *testing.T) {
				cmd := exec.Command(os.Args[0], "-test.run", "^TestLowFileLimit$", "-test.v")
				cmd.Env = append(os.Environ(),
					"MEMWHO_NOFILE_CHILD="+mode,
					"MEMWHO_NOFILE_LIMIT="+strconv.Itoa(limit),
					"MEMWHO_NOFILE_PIDS="+strings.Join(pids, ","))
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("child: %v\n%s", err, out)
				}
				t.Logf("%s", out)
				if !strings.Contains(string(out), "child ok") {
					t.Fatalf("child did not run its checks:\n%s", out)
				}
			})
		}
	}
}

// lowFileLimitChild is TestLowFileLimit in the child.
func lowFileLimitChild(t *testing.T) {
	limit, _ := strconv.Atoi(os.Getenv("MEMWHO_NOFILE_LIMIT"))
	var pids []int
	for _, s := range strings.Split(os.Getenv("MEMWHO_NOFILE_PIDS"), ",") {
		pids = append(pids, atoi(s))
	}
	rl := unix.Rlimit{Cur: uint64(limit), Max: uint64(limit)}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	opt := Options{FS: fstest.Open(t, "/proc"), PIDs: pids, OneShot: os.Getenv("MEMWHO_NOFILE_CHILD") == "oneshot"}
	e, err := New(opt)
	if limit < MinFiles {
		if err == nil || !strings.Contains(err.Error(), "open-file limit") {
			t.Fatalf("limit %d: New = %v, want the open-file limit refused", limit, err)
		}
		t.Log("child ok")
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	scan := func(what string, starved bool) {
		t.Helper()
		var snap sample.Snapshot
		if err := e.Scan(&snap); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if snap.Gone != 0 {
			t.Errorf("%s: %d of %d processes counted as gone; none exited", what, snap.Gone, len(pids))
		}
		if got := len(snap.Procs) + snap.Broken; got != len(pids) {
			t.Errorf("%s: %d listed + %d skipped, want %d", what, len(snap.Procs), snap.Broken, len(pids))
		}
		if !starved && len(snap.Procs) != len(pids) {
			t.Errorf("%s: %d processes, want all %d (skipped %d, denied %d)", what, len(snap.Procs), len(pids), snap.Broken, snap.Denied)
		}
		for _, p := range snap.Procs {
			if p.Accuracy != sample.Exact || p.Private < 200<<10 {
				t.Errorf("%s: PID %d: %v, private %d B; want exact, ≥ 200 KiB", what, p.PID, p.Accuracy, p.Private)
			}
		}
		t.Logf("%s: %d listed, %d skipped", what, len(snap.Procs), snap.Broken)
	}
	scan("first scan", false)
	scan("second scan", false)

	// Take every free descriptor, then give back 0, 1, 2 and 3 of them:
	// the scan runs short of descriptors at every step of a read.
	var taken []int
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		taken = append(taken, fd)
	}
	for free := range 4 {
		for range min(free, len(taken)) {
			unix.Close(taken[len(taken)-1])
			taken = taken[:len(taken)-1]
		}
		scan("starved, "+strconv.Itoa(free)+" free", true)
	}
	for _, fd := range taken {
		unix.Close(fd)
	}
	scan("descriptors free again", false)
	scan("and the tick after", false)
	t.Log("child ok")
}
