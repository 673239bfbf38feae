//go:build !notui

package main

// The fourth review (docs/safe.md): the live view against its terminal.
// The real binary (its signal handling is cli.Main's, which the test
// binary's TestMain does not have) runs on a pseudo-terminal of the
// test's, made its controlling terminal, on a fake /proc tree.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memwho/memwho/internal/proc/proctest"
)

var (
	realBinOnce sync.Once
	realBin     string
	realBinErr  error
)

// realMemwho builds memwho once for the tests that need its own main.
func realMemwho(t *testing.T) string {
	t.Helper()
	realBinOnce.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			realBinErr = err
			return
		}
		dir, err := os.MkdirTemp("", "memwho-review4-")
		if err != nil {
			realBinErr = err
			return
		}
		realBin = filepath.Join(dir, "memwho")
		build := exec.Command(gobin, "build", "-o", realBin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			realBinErr = &exec.ExitError{Stderr: out}
		}
	})
	if realBinErr != nil {
		t.Skipf("cannot build memwho: %v", realBinErr)
	}
	return realBin
}

// ptyPair is a new pseudo-terminal of 100×30.
func ptyPair(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 30, Col: 100}); err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// ptyWatch is memwho watch running on a pseudo-terminal.
type ptyWatch struct {
	t             *testing.T
	cmd           *exec.Cmd
	master, slave *os.File
	before        unix.Termios

	mu      sync.Mutex
	out     bytes.Buffer
	reading bool // the master side is read (else the terminal takes no output)
	exited  chan struct{}
	err     error
}

type ptyOpts struct {
	stdin    *os.File // default: the terminal
	noCtty   bool     // a new session without a controlling terminal
	noReader bool     // nobody reads the master side
	args     []string
}

func startPtyWatch(t *testing.T, o ptyOpts) *ptyWatch {
	t.Helper()
	bin := realMemwho(t)
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	master, slave := ptyPair(t)
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	w := &ptyWatch{t: t, master: master, slave: slave, before: *before, exited: make(chan struct{}), reading: !o.noReader}
	args := append([]string{"watch", "--proc", root, "--interval", "100ms"}, o.args...)
	w.cmd = exec.Command(bin, args...)
	w.cmd.Env = []string{"PATH=/usr/bin:/bin", "TERM=xterm-256color", "NO_COLOR=1", "HOME=/nonexistent"}
	w.cmd.Stdin, w.cmd.Stdout, w.cmd.Stderr = slave, slave, slave
	if o.stdin != nil {
		w.cmd.Stdin = o.stdin
	}
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: !o.noCtty}
	if o.noCtty {
		w.cmd.SysProcAttr.Setctty = false
	} else if o.stdin != nil {
		// Setctty takes the controlling terminal from Ctty, a
		// descriptor of the child: 1, its standard output.
		w.cmd.SysProcAttr.Ctty = 1
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		w.err = w.cmd.Wait()
		close(w.exited)
	}()
	t.Cleanup(func() {
		w.cmd.Process.Kill()
		<-w.exited
	})
	go func() {
		buf := make([]byte, 4096)
		for {
			w.mu.Lock()
			r := w.reading
			w.mu.Unlock()
			if !r {
				time.Sleep(10 * time.Millisecond)
				select {
				case <-w.exited:
					return
				default:
				}
				continue
			}
			n, err := master.Read(buf)
			w.mu.Lock()
			w.out.Write(buf[:n])
			w.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return w
}

func (w *ptyWatch) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

// waitOutput waits until what memwho wrote holds s, from byte from.
func (w *ptyWatch) waitOutput(from int, s string) int {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := w.output()
		if i := strings.Index(out[min(from, len(out)):], s); i >= 0 {
			return from + i + len(s)
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("the output never held %q after byte %d:\n%q", s, from, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (w *ptyWatch) setReading(r bool) {
	w.mu.Lock()
	w.reading = r
	w.mu.Unlock()
}

// wait waits for memwho to exit and returns its exit code (-1 for a
// signal).
func (w *ptyWatch) wait(within time.Duration) int {
	w.t.Helper()
	select {
	case <-w.exited:
	case <-time.After(within):
		st, _ := os.ReadFile("/proc/" + strconv.Itoa(w.cmd.Process.Pid) + "/stat")
		w.t.Fatalf("memwho still running after %v (stat %s)", within, st)
	}
	if w.cmd.ProcessState == nil {
		return -2
	}
	return w.cmd.ProcessState.ExitCode()
}

// checkRestored checks the terminal's settings are as before and, when
// the output was read, that what memwho set was reset.
func (w *ptyWatch) checkRestored(what string, screen bool) {
	w.t.Helper()
	after, err := unix.IoctlGetTermios(int(w.slave.Fd()), unix.TCGETS)
	if err != nil {
		w.t.Fatal(err)
	}
	if *after != w.before {
		w.t.Errorf("%s: terminal settings not restored: lflag %#x iflag %#x oflag %#x, want %#x %#x %#x", what, after.Lflag, after.Iflag, after.Oflag, w.before.Lflag, w.before.Iflag, w.before.Oflag)
	}
	if !screen {
		return
	}
	time.Sleep(50 * time.Millisecond) // the reader's last read
	out := w.output()
	for _, m := range [][2]string{{"\x1b[?1049h", "\x1b[?1049l"}, {"\x1b[?25l", "\x1b[?25h"}, {"\x1b[?7l", "\x1b[?7h"}, {"\x1b[?2004h", "\x1b[?2004l"}, {"\x1b[22;2t", "\x1b[23;2t"}} {
		if set, reset := strings.LastIndex(out, m[0]), strings.LastIndex(out, m[1]); set >= 0 && reset < set {
			w.t.Errorf("%s: %q set and never reset", what, m[0])
		}
	}
}

func TestWatchReview4Signals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run("review4: "+sig.String()+" before the first frame", func(t *testing.T) {
			w := startPtyWatch(t, ptyOpts{})
			// At once: anywhere from before Open to the first frame.
			w.cmd.Process.Signal(sig)
			code := w.wait(10 * time.Second)
			t.Logf("exit %d, output %q", code, w.output())
			if code != 0 && !(code == -1 && w.output() == "") {
				t.Errorf("exit %d", code)
			}
			w.checkRestored(sig.String(), true)
		})
		t.Run("review4: "+sig.String()+" while running", func(t *testing.T) {
			w := startPtyWatch(t, ptyOpts{})
			w.waitOutput(0, "total")
			w.cmd.Process.Signal(sig)
			if code := w.wait(10 * time.Second); code != 0 {
				t.Errorf("exit %d, want 0", code)
			}
			w.checkRestored(sig.String(), true)
		})
		t.Run("review4: "+sig.String()+" while the terminal takes no output", func(t *testing.T) {
			w := startPtyWatch(t, ptyOpts{})
			w.waitOutput(0, "total")
			w.setReading(false)
			time.Sleep(50 * time.Millisecond)
			// Resizes redraw in full until the pty's buffer is full
			// and a write blocks.
			pid := strconv.Itoa(w.cmd.Process.Pid)
			blocked := false
			for i := 0; i < 2000 && !blocked; i++ {
				unix.IoctlSetWinsize(int(w.slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(30 + i%2), Col: 100})
				time.Sleep(2 * time.Millisecond)
				if i%20 == 19 {
					blocked = threadIn(pid, "n_tty_write", "tty_write", "wait_woken")
				}
			}
			if !blocked {
				tasks, _ := filepath.Glob("/proc/" + pid + "/task/*/wchan")
				for _, f := range tasks {
					b, _ := os.ReadFile(f)
					t.Logf("%s: %s", f, b)
				}
				t.Fatal("memwho's write never blocked")
			}
			w.cmd.Process.Signal(sig)
			code := w.wait(10 * time.Second)
			t.Logf("exit %d", code)
			if code != 0 {
				t.Errorf("exit %d, want 0", code)
			}
			w.checkRestored(sig.String(), false)
		})
	}
}

// threadIn reports whether a thread of pid waits in one of the kernel
// functions (its wchan).
func threadIn(pid string, fns ...string) bool {
	tasks, _ := filepath.Glob("/proc/" + pid + "/task/*/wchan")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, fn := range fns {
			if string(b) == fn {
				return true
			}
		}
	}
	return false
}
