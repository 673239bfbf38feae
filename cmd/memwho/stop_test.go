package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/proc/proctest"
)

// fullPipe returns a pipe whose write end is already full (a reader that
// stopped reading): the first write to it blocks.
func fullPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	syscall.SetNonblock(p[1], true)
	chunk := make([]byte, 4096)
	for {
		if _, err := syscall.Write(p[1], chunk); err != nil {
			break
		}
	}
	syscall.SetNonblock(p[1], false)
	return os.NewFile(uintptr(p[0]), "pipe-r"), os.NewFile(uintptr(p[1]), "pipe-w")
}

// stopWhileBlocked starts c with descriptor fd (1 or 2) on a full pipe,
// waits until it blocks writing there, sends sig and returns how long
// the process took to end after it, and how it ended. Nothing reads the
// pipe until then. A generous bound only keeps a hung run from hanging
// the test: the second StopWithin promises is a figure of the docs
// (docs/safe.md), measured here and logged, not a timed assertion.
func stopWhileBlocked(t *testing.T, c *exec.Cmd, fd int, sig syscall.Signal) (time.Duration, syscall.WaitStatus) {
	t.Helper()
	return stopWhileBlockedHook(t, c, fd, sig, nil)
}

// stopWhileBlockedHook is stopWhileBlocked that calls blocked with the
// process's pid once it blocks, before the signal.
func stopWhileBlockedHook(t *testing.T, c *exec.Cmd, fd int, sig syscall.Signal, blocked func(pid int)) (time.Duration, syscall.WaitStatus) {
	t.Helper()
	r, w := fullPipe(t)
	defer r.Close()
	if fd == 1 {
		c.Stdout = w
	} else {
		c.Stderr = w
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	pid := c.Process.Pid
	exited := make(chan struct{})
	go func() { c.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			c.Process.Kill()
			<-exited
		}
	}()
	want := fmt.Sprintf("%d 0x%x ", syscall.SYS_WRITE, fd)
	deadline := time.Now().Add(2 * time.Minute)
	for !inSyscall(pid, want) {
		select {
		case <-exited:
			t.Fatalf("%v ended before it blocked writing to fd %d: %v", c.Args, fd, c.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v never blocked writing to fd %d", c.Args, fd)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if blocked != nil {
		blocked(pid)
	}
	start := time.Now()
	c.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		t.Fatalf("%v still running 30 s after %v while its write blocks (stat %s)", c.Args, sig, st)
	}
	d := time.Since(start)
	go io.Copy(io.Discard, r)
	return d, c.ProcessState.Sys().(syscall.WaitStatus)
}

// TestEveryCommandStops: every command ends at SIGTERM or SIGINT also
// while a write to a pipe nobody reads blocks it: at once by the
// signal's default action where nothing is to be undone, else within
// cli.StopWithin of it, what it undoes first. watch --plain waited in
// its write until SIGKILL (issue 27, finding 3).
func TestEveryCommandStops(t *testing.T) {
	bin := buildMemwho(t)
	agent := filepath.Join(filepath.Dir(bin), "memwho-agent")
	build := exec.Command("go", "build", "-o", agent, "../memwho-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build memwho-agent: %v\n%s", err, out)
	}
	dir := t.TempDir()
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	// Two snapshot files for diff, a history for export and leaks.
	for _, f := range []string{"a.snap", "b.snap"} {
		if out, err := exec.Command(bin, "snapshot", "--proc", root, "-o", filepath.Join(dir, f)).CombinedOutput(); err != nil {
			t.Fatalf("snapshot: %v\n%s", err, out)
		}
	}
	db := filepath.Join(dir, "h.db")
	if out, err := exec.Command(bin, "record", "--once", "--proc", root, "--db", db).CombinedOutput(); err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		fd   int
	}{
		{[]string{"--proc", root}, 1},
		{[]string{"--proc", root, "--html", filepath.Join(dir, "p.html")}, 1},
		{[]string{"snapshot", "--proc", root}, 1},
		{[]string{"diff", filepath.Join(dir, "a.snap"), filepath.Join(dir, "b.snap")}, 1},
		{[]string{"watch", "--plain", "--proc", root, "--interval", "0.05"}, 1},
		{[]string{"watch", "--plain", "--fresh", "--interval", "0.05"}, 1},
		{[]string{"serve", "--once", "--proc", root}, 1},
		{[]string{"export", "--db", db}, 1},
	} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(fmt.Sprintf("%v %v", tc.args, sig), func(t *testing.T) {
				c := exec.Command(bin, tc.args...)
				c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "NO_COLOR=1"}
				c.Dir = dir
				d, ws := stopWhileBlocked(t, c, tc.fd, sig)
				t.Logf("%v: ended %v after %v", ws, d, sig)
				if d > time.Second {
					// Logged, not failed: a loaded machine delays any
					// process; the watchdog fires at StopWithin.
					t.Logf("took over a second (StopWithin %v)", cli.StopWithin)
				}
				if ents, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(ents) > 0 {
					t.Errorf("temporary files left: %v", ents)
				}
			})
		}
	}
}
