package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/proc/proctest"
	"golang.org/x/sys/unix"
)

// Attacks tabled in docs/safe.md: scrolling and the hang-up, in
// the real binary on a pseudo-terminal. MEMWHO_WATCHTEST_BINARY, when set, is the
// binary to try instead of one built from this tree (to run these
// against an older build).

func watchBinary(t *testing.T) string {
	if bin := os.Getenv("MEMWHO_WATCHTEST_BINARY"); bin != "" {
		return bin
	}
	return realMemwho(t)
}

// watchCmd is memwho watch on the fake /proc with args, started through
// bash with SIGHUP ignored when nohup.
func watchCmd(t *testing.T, bin string, nohup bool, args ...string) *exec.Cmd {
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	args = append([]string{"watch", "--proc", root, "--interval", "100ms"}, args...)
	var c *exec.Cmd
	if nohup {
		c = exec.Command("bash", append([]string{"-c", `trap '' HUP; exec "$0" "$@"`, bin}, args...)...)
	} else {
		c = exec.Command(bin, args...)
	}
	c.Env = []string{"PATH=/usr/bin:/bin", "TERM=xterm-256color", "NO_COLOR=1", "HOME=/nonexistent"}
	return c
}

// sigIgnored reports whether pid ignores sig (/proc/PID/status).
func sigIgnored(t *testing.T, pid int, sig syscall.Signal) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return mask&(1<<(sig-1)) != 0
		}
	}
	t.Fatal("no SigIgn in status")
	return false
}

func TestWatchScrollAndHangup(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	bin := watchBinary(t)

	// Under nohup the live view leaves SIGHUP ignored: two SIGHUPs
	// after the first frame leave it running (they ended it, while one
	// before the first frame did not); q ends it, restored. A real
	// hang-up (the master closed) ends it by EIO, status 0.
	t.Run("nohup: SIGHUP ignored while running, q", func(t *testing.T) {
		w := startPtyCmd(t, watchCmd(t, bin, true), ptyOpts{bin: bin})
		w.waitOutput(0, "total")
		if !sigIgnored(t, w.cmd.Process.Pid, syscall.SIGHUP) {
			t.Error("SIGHUP not ignored while the view runs")
		}
		w.cmd.Process.Signal(syscall.SIGHUP)
		w.cmd.Process.Signal(syscall.SIGHUP)
		select {
		case <-w.exited:
			t.Fatalf("an ignored SIGHUP ended the view: %v", w.err)
		case <-time.After(500 * time.Millisecond):
		}
		w.master.Write([]byte("q"))
		if code := w.wait(10 * time.Second); code != 0 {
			t.Errorf("q: exit %d", code)
		}
		w.checkRestored("q after ignored SIGHUPs", true)
	})
	t.Run("nohup: the terminal hangs up", func(t *testing.T) {
		w := startPtyCmd(t, watchCmd(t, bin, true), ptyOpts{bin: bin})
		w.waitOutput(0, "total")
		w.master.Close()
		if code := w.wait(10 * time.Second); code != 0 {
			t.Errorf("hung up under nohup: exit %d", code)
		}
	})

	// SIGHUP, SIGHUP, SIGTERM at once: at the start (anywhere before
	// the first frame) and while running. Exit 0, restored; at the
	// start, killed by the default action before the handlers, with
	// nothing written.
	for _, when := range []string{"at the start", "while running"} {
		t.Run("SIGHUP, SIGHUP, SIGTERM "+when, func(t *testing.T) {
			w := startPtyCmd(t, watchCmd(t, bin, false), ptyOpts{bin: bin})
			if when == "while running" {
				w.waitOutput(0, "total")
			}
			for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGHUP, syscall.SIGTERM} {
				w.cmd.Process.Signal(sig)
			}
			code := w.wait(10 * time.Second)
			if code != 0 && !(code == -1 && when == "at the start" && w.output() == "") {
				t.Errorf("exit %d, output %q", code, w.output())
			}
			w.checkRestored(when, true)
		})
	}

	// A hang-up while memwho waits for the agent (after
	// InterruptibleView, before the view or the plain output): it
	// ends there, nothing drawn, status 0. Caught and dropped before
	// f8bd37f: the view ran on.
	for _, plain := range []bool{false, true} {
		name := "SIGHUP while asking the agent, live view"
		if plain {
			name = "SIGHUP while asking the agent, --plain"
		}
		t.Run(name, func(t *testing.T) {
			sock, accepted := silentAgent(t, t.TempDir(), 4)
			args := []string{"watch", "--agent-socket", sock, "--interval", "100ms"}
			if plain {
				args = append(args, "--plain")
			}
			c := exec.Command(bin, args...)
			c.Env = []string{"PATH=/usr/bin:/bin", "TERM=xterm-256color", "NO_COLOR=1", "HOME=/nonexistent"}
			w := startPtyCmd(t, c, ptyOpts{bin: bin})
			waitAsked(t, w.cmd, accepted)
			w.cmd.Process.Signal(syscall.SIGHUP)
			if code := w.wait(10 * time.Second); code != 0 {
				t.Errorf("exit %d, output %q", code, w.output())
			}
			if out := w.output(); strings.Contains(out, "RAM used") || strings.Contains(out, "total") {
				t.Errorf("drew after the hang-up: %q", out)
			}
			w.checkRestored(name, true)
		})
	}

	// watch --plain on the terminal that hangs up (its master closed)
	// while it scans and writes, every millisecond: status 0. The
	// write's EIO could come before the SIGHUP: exit 1, "write output:
	// input/output error" (3 of 312 runs; 0 of 16 on the small fake
	// /proc, whose scan is short).
	t.Run("--plain on the terminal that hangs up", func(t *testing.T) {
		for i := range 40 {
			// The host's /proc: a scan long enough to be under way.
			c := exec.Command(bin, "watch", "--fresh", "--plain", "--interval", "0.001")
			c.Env = []string{"PATH=/usr/bin:/bin", "TERM=xterm-256color", "NO_COLOR=1", "HOME=/nonexistent"}
			w := startPtyCmd(t, c, ptyOpts{bin: bin})
			w.waitOutput(0, "total")
			time.Sleep(time.Duration(i%12*3) * time.Millisecond)
			w.master.Close()
			if code := w.wait(10 * time.Second); code != 0 {
				t.Errorf("run %d: exit %d, output ends %q", i, code, w.output()[max(len(w.output())-200, 0):])
			}
		}
	})

	// watch --plain > file: SIGHUP then SIGTERM at once, exit 0 and
	// whole snapshots kept; under nohup two SIGHUPs change nothing,
	// SIGTERM ends it.
	for _, nohup := range []bool{false, true} {
		t.Run("--plain > file, nohup "+strconv.FormatBool(nohup), func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "out")
			f, err := os.Create(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			c := watchCmd(t, bin, nohup, "--plain")
			c.Stdout, c.Stderr = f, f
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { c.Wait(); close(exited) }()
			defer func() { c.Process.Kill(); <-exited }()
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if b, _ := os.ReadFile(file); strings.Contains(string(b), "total") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no snapshot in 10 s")
				}
			}
			c.Process.Signal(syscall.SIGHUP)
			if nohup {
				c.Process.Signal(syscall.SIGHUP)
				select {
				case <-exited:
					t.Fatal("an ignored SIGHUP ended it")
				case <-time.After(500 * time.Millisecond):
				}
			}
			c.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				t.Fatal("still running 10 s after the signals")
			}
			if code := c.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit %d", code)
			}
			b, _ := os.ReadFile(file)
			out := string(b)
			if n := strings.Count(out, "total"); n == 0 || !strings.HasSuffix(out, "\n") {
				t.Errorf("%d snapshots, a cut one at the end?\n%s", n, out)
			}
		})
	}

	// Scrolling in the real binary, one row high: a flood of PgDn in
	// one write, modified keys (xterm, rxvt), then q right after rxvt's
	// Shift+PgUp, which ate it before.
	t.Run("page keys, modified keys, then q after rxvt's Shift+PgUp", func(t *testing.T) {
		w := startPtyCmd(t, watchCmd(t, bin, false, "--sort", "name"), ptyOpts{bin: bin})
		at := w.waitOutput(0, "total")
		unix.IoctlSetWinsize(int(w.slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 6, Col: 80})
		at = w.waitOutput(at, "total (1 hidden)")
		w.master.Write([]byte(strings.Repeat("\x1b[6~", 200)))
		at = w.waitOutput(at, "total (↑1)")
		w.master.Write([]byte("\x1b[5;5~\x1b[1;2H\x1b[200~\x1b[5~\x1b[H\x1b[201~\x1bO\x1b[5^"))
		time.Sleep(100 * time.Millisecond)
		if strings.Contains(w.output()[at:], "hidden") {
			t.Errorf("a modified or pasted key scrolled: %q", w.output()[at:])
		}
		w.master.Write([]byte("\x1b[5$"))
		time.Sleep(50 * time.Millisecond)
		w.master.Write([]byte("q"))
		if code := w.wait(10 * time.Second); code != 0 {
			t.Errorf("exit %d", code)
		}
		w.checkRestored("q", true)
	})
}
