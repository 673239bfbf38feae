package engine

import (
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/sample"
)

// TestKernelThreadOpens: a kernel thread whose smaps_rollup the kernel
// refuses at the open (ESRCH, Linux 6.x) is settled by that open, in
// the report's one-shot scan and in the incremental engine's first
// read: not asked again through its held directory (three syscalls per
// kernel thread: 221 openat2 per report became 106 on a host of 74
// processes, 58 of them kernel threads). It is
// listed as no process, as before.
func TestKernelThreadOpens(t *testing.T) {
	const kthreadd = 2
	if _, err := syscall.Open("/proc/2/smaps_rollup", syscall.O_RDONLY, 0); err != syscall.ESRCH {
		t.Skipf("skipping: opening PID 2's smaps_rollup gives %v, not ESRCH (no kernel thread 2 here, or an older kernel)", err)
	}
	pid := strconv.Itoa(kthreadd)
	for _, oneShot := range []bool{true, false} {
		t.Run("oneshot="+strconv.FormatBool(oneShot), func(t *testing.T) {
			e := newEngine(t, Options{FS: fstest.Open(t, "/proc"), PIDs: []int{kthreadd}, OneShot: oneShot})
			var (
				mu    sync.Mutex
				opens []string
			)
			restore := proc.SetFault(func(op, path string) syscall.Errno {
				if op == "open" {
					mu.Lock()
					opens = append(opens, path)
					mu.Unlock()
				}
				return 0
			})
			var snap sample.Snapshot
			err := e.Scan(&snap)
			restore()
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Procs) != 0 || snap.Gone != 0 || snap.Broken != 0 {
				t.Errorf("kernel thread 2: %d listed, %d gone, %d skipped; want none", len(snap.Procs), snap.Gone, snap.Broken)
			}
			for _, p := range opens {
				if p == pid || p == pid+"/" {
					t.Errorf("its directory was opened after smaps_rollup said ESRCH (opens: %q)", opens)
				}
			}
			n := 0
			for _, p := range opens {
				if p == pid+"/smaps_rollup" {
					n++
				}
			}
			if n != 1 {
				t.Errorf("smaps_rollup opened %d times, want once (opens: %q)", n, opens)
			}
		})
	}
}
