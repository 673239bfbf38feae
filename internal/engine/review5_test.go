package engine

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/sample"
)

// cloneVMExec is a process that touches 64 MiB, shares its address
// space with a child (clone with CLONE_VM, without CLONE_THREAD: what a
// vfork child or a posix_spawn does for a moment), prints "r", and execs
// argv[1] when told to (itself without arguments: it then just waits).
// The child keeps the old address space alive after
// the exec.
const cloneVMExec = `#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static char stack[65536];
static int child(void *a) { for (;;) pause(); return 0; }
int main(int argc, char **argv) {
	if (argc < 2) for (;;) pause();
	size_t n = 64 << 20;
	char *p = malloc(n);
	memset(p, 1, n);
	if (clone(child, stack + sizeof stack, CLONE_VM | SIGCHLD, 0) < 0) return 1;
	char c;
	write(1, "r\n", 2);
	if (read(0, &c, 1) != 1) return 1;
	execv(argv[1], argv + 1);
	return 2;
}
`

// TestReview5KeptRollupSharedMM (review5): a process whose smaps_rollup
// descriptor was kept execs while another task still shares its old
// address space. The descriptor is bound to that address space, not to
// the process, and still reads: the exec'd process must be shown with
// its new memory, not the old 64 MiB (which the sharing task still uses,
// and which would then be counted twice). The same path would show a
// setuid program's figures from its caller's old address space.
func TestReview5KeptRollupSharedMM(t *testing.T) {
	bin := buildCloneVM(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip(err)
	}
	// An exec that statm sees (the text size changes): read by path at
	// once.
	t.Run("other program", func(t *testing.T) { sharedMMExec(t, bin, sleep, "sleep", 0) })
	// The same program again: statm's text does not move, only a
	// forced walk reads by path again, within FullEvery ticks.
	t.Run("same program", func(t *testing.T) { sharedMMExec(t, bin, bin, "", 4) })
}

func buildCloneVM(t *testing.T) string {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "vm.c")
	bin := filepath.Join(dir, "vm")
	if err := os.WriteFile(src, []byte(cloneVMExec), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-O", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("cc: %v %s", err, out)
	}
	return bin
}

// sharedMMExec runs bin, which execs prog (name: its task name, "" for
// bin itself) while its clone keeps the old address space, and wants the
// exec'd process's own figures within late ticks.
func sharedMMExec(t *testing.T, bin, prog, name string, late int) {
	args := []string{prog}
	if name != "" {
		args = append(args, "600")
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	const k = 4
	e := newEngine(t, Options{FS: fstest.Open(t, "/proc"), PIDs: []int{pid}, FullEvery: k, WalkBudget: -1})
	var snap sample.Snapshot
	if err := e.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	if rc := &e.recs[e.byPID[pid]]; rc.rfd < 0 {
		t.Fatal("no descriptor kept for the new process")
	}
	if p := find(&snap, pid); p == nil || p.RAM < 60<<20 {
		t.Fatalf("before the exec: %+v, want 64 MiB", p)
	}
	in.Write([]byte("x"))
	if name != "" {
		waitComm(t, pid, name)
	} else {
		for i := 0; ; i++ {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if strings.Count(string(b), "\x00") == 1 {
				break
			}
			if i == 500 {
				t.Fatal("no exec")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for tick := range late + k + 1 {
		if err := e.Scan(&snap); err != nil {
			t.Fatal(err)
		}
		p := find(&snap, pid)
		if p == nil {
			t.Fatalf("tick %d after the exec: gone", tick)
		}
		if tick >= late && p.RAM > 16<<20 {
			t.Errorf("tick %d after the exec: shown with %d bytes of RAM: the old address space, read through the kept descriptor", tick, p.RAM)
		}
	}
}
