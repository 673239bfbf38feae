package proc

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLiveRollupFD: a smaps_rollup descriptor kept with TakeHeld reads
// the process's current figures again at every RollupFD, the same as a
// read by path, and stops reading once the process has exec'd (a new
// address space: the descriptor must not follow it) or exited.
func TestLiveRollupFD(t *testing.T) {
	fs := openLive(t)
	r := fs.NewReader()
	defer r.Close()

	// smaps is printed a mapping at a time: not kept.
	pid := startSleeper(t)
	r.Select(pid)
	if err := r.Hold("smaps\x00"); err != nil {
		t.Fatal(err)
	}
	if fd := r.TakeHeld(); fd != -1 {
		syscall.Close(fd)
		t.Errorf("TakeHeld after Hold(smaps) = %d, want -1", fd)
	}
	r.Close()

	// A shell that execs sleep when told to.
	cmd := exec.Command("sh", "-c", "read x; exec sleep 600")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid = cmd.Process.Pid
	waitComm(t, pid, "sh")
	r.Select(pid)
	if err := r.Hold("smaps_rollup\x00"); err != nil {
		t.Fatal(err)
	}
	fd := r.TakeHeld()
	if fd < 0 {
		t.Fatal("TakeHeld after Hold(smaps_rollup) = -1")
	}
	defer syscall.Close(fd)
	var kept, byPath Rollup
	for i := range 3 {
		if err := r.RollupFD(fd, &kept); err != nil {
			t.Fatalf("read %d through the kept descriptor: %v", i, err)
		}
		r.Select(pid)
		if err := r.SmapsRollup(&byPath); err != nil {
			t.Fatal(err)
		}
		if kept.Rss == 0 || kept.Rss != byPath.Rss || kept.Anonymous != byPath.Anonymous {
			t.Errorf("read %d: kept descriptor Rss %d Anonymous %d, by path %d %d", i, kept.Rss, kept.Anonymous, byPath.Rss, byPath.Anonymous)
		}
	}
	if n := testing.AllocsPerRun(20, func() { r.RollupFD(fd, &kept) }); n != 0 {
		t.Errorf("RollupFD allocs = %v, want 0", n)
	}

	// exec: same PID, same process, a new address space.
	in.Write([]byte("go\n"))
	waitComm(t, pid, "sleep")
	if err := r.RollupFD(fd, &kept); err != ErrNoMM && err != ErrGone {
		t.Errorf("kept descriptor after exec: err = %v, figures %+v; want ErrNoMM", err, kept)
	}
	r.Select(pid)
	if err := r.SmapsRollup(&byPath); err != nil {
		t.Errorf("by path after exec: %v", err)
	}

	// exit
	r.Select(pid)
	if err := r.Hold("smaps_rollup\x00"); err != nil {
		t.Fatal(err)
	}
	fd2 := r.TakeHeld()
	defer syscall.Close(fd2)
	if err := r.RollupFD(fd2, &kept); err != nil {
		t.Fatalf("a new kept descriptor after exec: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if err := r.RollupFD(fd2, &kept); err != ErrNoMM && err != ErrGone {
		t.Errorf("kept descriptor after exit: err = %v, want ErrNoMM", err)
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
