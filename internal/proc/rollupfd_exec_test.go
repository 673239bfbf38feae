package proc

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// keptFD opens pid's smaps_rollup and keeps the descriptor, as the
// engine does for a process that changed.
func keptFD(t *testing.T, r *Reader, pid int) int {
	t.Helper()
	r.Select(pid)
	if err := r.Hold("smaps_rollup\x00"); err != nil {
		t.Fatal(err)
	}
	fd := r.TakeHeld()
	if fd < 0 {
		t.Fatal("TakeHeld = -1")
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return fd
}

// TestKeptFDSetuidExec: another user's process, whose
// smaps_rollup descriptor a privileged watch keeps, execs a setuid-root
// program. The descriptor must not show the root process's memory: the
// old address space is gone, and the read fails.
func TestKeptFDSetuidExec(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a setuid-root program and run as another user")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	// nobody has to reach the program: t.TempDir and its parent are 0700.
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	suid := filepath.Join(dir, "suidsleep")
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(suid, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Chmod(suid, 0o4755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "echo r; read x; exec "+suid+" 600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	bufio.NewReader(out).ReadString('\n')
	pid := cmd.Process.Pid
	fs := openLive(t)
	r := fs.NewReader()
	defer r.Close()
	fd := keptFD(t, r, pid)
	var ru Rollup
	if err := r.RollupFD(fd, &ru); err != nil || ru.Rss == 0 {
		t.Fatalf("before the exec: %v %+v", err, ru)
	}
	in.Write([]byte("x\n"))
	waitComm(t, pid, "suidsleep")
	st, err := os.ReadFile("/proc/" + itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if !containsLine(string(st), "Uid:\t65534\t0\t") {
		t.Skipf("the exec did not gain root (nosuid mount?): %s", st)
	}
	for range 3 {
		if err := r.RollupFD(fd, &ru); err != ErrNoMM && err != ErrGone {
			t.Fatalf("kept descriptor after a setuid exec: err = %v, figures %+v; want it refused", err, ru)
		}
	}
}

func containsLine(s, prefix string) bool {
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		if len(s[:i]) >= len(prefix) && s[:len(prefix)] == prefix {
			return true
		}
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return false
}

// TestKeptFDNotDumpable: a process that makes itself
// non-dumpable without an exec keeps its address space, and the kept
// descriptor goes on reading it (docs/safe.md says so): the same totals
// of the same process, which the open was allowed to read.
func TestKeptFDNotDumpable(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	cmd := exec.Command(py, "-c", `import ctypes,sys
print("r", flush=True)
sys.stdin.readline()
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
print("d", flush=True)
sys.stdin.readline()`)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	br := bufio.NewReader(out)
	br.ReadString('\n')
	pid := cmd.Process.Pid
	fs := openLive(t)
	r := fs.NewReader()
	defer r.Close()
	fd := keptFD(t, r, pid)
	var before, after, byPath Rollup
	if err := r.RollupFD(fd, &before); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, "\n")
	if l, _ := br.ReadString('\n'); l != "d\n" {
		t.Skipf("prctl: %q", l)
	}
	if err := r.RollupFD(fd, &after); err != nil {
		t.Fatalf("kept descriptor after PR_SET_DUMPABLE 0: %v", err)
	}
	r.Select(pid)
	switch err := r.SmapsRollup(&byPath); {
	case err == ErrDenied:
		// Without CAP_SYS_PTRACE a non-dumpable process, even one's
		// own, is root's to read by path: the kept descriptor goes on
		// showing the totals its owner saw before, give or take the
		// pages the prctl and the print touched, and nothing more.
		if d := int64(after.Rss) - int64(before.Rss); after.Rss == 0 || d < -256<<10 || d > 256<<10 {
			t.Errorf("kept descriptor Rss %d after PR_SET_DUMPABLE 0, %d before: not the same process's totals", after.Rss, before.Rss)
		}
		return
	case err != nil:
		t.Fatal(err)
	}
	if after.Rss == 0 || after.Rss != byPath.Rss {
		t.Errorf("kept descriptor Rss %d, by path %d: not the same process's totals", after.Rss, byPath.Rss)
	}
}
