package main

// Attacks tabled in docs/safe.md: the live view against its terminal.
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
	"github.com/memwho/memwho/internal/term/termtest"
)

// realMemwho builds memwho (for the tests that need its own main) into
// a directory removed when t ends: call it from the top-level test.
func realMemwho(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build memwho: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "memwho")
	build := exec.Command(gobin, "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
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
	bin      string   // memwho (realMemwho)
	stdin    *os.File // default: the terminal
	noCtty   bool     // a new session without a controlling terminal
	noReader bool     // nobody reads the master side
	args     []string
}

func startPtyWatch(t *testing.T, o ptyOpts) *ptyWatch {
	t.Helper()
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	c := exec.Command(o.bin, append([]string{"watch", "--proc", root, "--interval", "100ms"}, o.args...)...)
	c.Env = []string{"PATH=/usr/bin:/bin", "TERM=xterm-256color", "NO_COLOR=1", "HOME=/nonexistent"}
	return startPtyCmd(t, c, o)
}

// startPtyCmd starts c (memwho watch, perhaps through setpriv) on a new
// pseudo-terminal, as the leader of a new session.
func startPtyCmd(t *testing.T, c *exec.Cmd, o ptyOpts) *ptyWatch {
	t.Helper()
	master, slave := termtest.OpenPTY(t, 100, 30)
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	w := &ptyWatch{t: t, cmd: c, master: master, slave: slave, before: *before, exited: make(chan struct{}), reading: !o.noReader}
	w.cmd.Stdin, w.cmd.Stdout, w.cmd.Stderr = slave, slave, slave
	if o.stdin != nil {
		w.cmd.Stdin = o.stdin
	}
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: !o.noCtty}
	if !o.noCtty && o.stdin != nil {
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

func TestWatchSignals(t *testing.T) {
	bin := realMemwho(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String()+" before the first frame", func(t *testing.T) {
			w := startPtyWatch(t, ptyOpts{bin: bin})
			// At once: anywhere from before Open to the first frame.
			w.cmd.Process.Signal(sig)
			code := w.wait(10 * time.Second)
			t.Logf("exit %d, output %q", code, w.output())
			if code != 0 && !(code == -1 && w.output() == "") {
				t.Errorf("exit %d", code)
			}
			w.checkRestored(sig.String(), true)
		})
		t.Run(sig.String()+" while running", func(t *testing.T) {
			w := startPtyWatch(t, ptyOpts{bin: bin})
			w.waitOutput(0, "total")
			w.cmd.Process.Signal(sig)
			if code := w.wait(10 * time.Second); code != 0 {
				t.Errorf("exit %d, want 0", code)
			}
			w.checkRestored(sig.String(), true)
		})
		t.Run(sig.String()+" while the terminal takes no output", func(t *testing.T) {
			w := startPtyWatch(t, ptyOpts{bin: bin})
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

// fdFlags is the open flags of descriptor fd of pid ("self" for this
// process); false when it is not open.
func fdFlags(pid, fd string) (uint64, bool) {
	info, err := os.ReadFile("/proc/" + pid + "/fdinfo/" + fd)
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(info)) {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, _ := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return flags, true
		}
	}
	return 0, false
}

// processStopped reports whether pid is stopped (state T).
func processStopped(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] == "T"
}

// cpuTicks is the user and system time of pid, in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	u, _ := strconv.Atoi(f[11]) // field 14, utime
	s, _ := strconv.Atoi(f[12]) // field 15, stime
	return u + s
}

func TestWatchTerminal(t *testing.T) {
	bin := realMemwho(t)
	t.Run("the terminal hung up (master closed)", func(t *testing.T) {
		w := startPtyWatch(t, ptyOpts{bin: bin})
		w.waitOutput(0, "total")
		w.master.Close()
		if code := w.wait(10 * time.Second); code != 0 {
			t.Errorf("exit %d after the hang-up, want 0", code)
		}
	})

	t.Run("keys from /dev/tty when standard input is /dev/null", func(t *testing.T) {
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		w := startPtyWatch(t, ptyOpts{bin: bin, stdin: null})
		w.waitOutput(0, "total")
		// /dev/tty is open, close-on-exec, without O_NONBLOCK games;
		// the wake-up pipe is close-on-exec.
		pid := strconv.Itoa(w.cmd.Process.Pid)
		// Descriptors the test process passed on (not close-on-exec
		// in it) are not memwho's.
		inherited := map[string]bool{}
		self, _ := os.ReadDir("/proc/self/fd")
		for _, fd := range self {
			// (The directory's own descriptor is gone when its
			// flags are read.)
			if f, ok := fdFlags("self", fd.Name()); ok && f&unix.O_CLOEXEC == 0 {
				inherited[fd.Name()] = true
			}
		}
		fds, _ := os.ReadDir("/proc/" + pid + "/fd")
		ttys, pipes := 0, 0
		for _, fd := range fds {
			target, _ := os.Readlink("/proc/" + pid + "/fd/" + fd.Name())
			flags, _ := fdFlags(pid, fd.Name())
			t.Logf("fd %s -> %s flags %#o", fd.Name(), target, flags)
			if n, _ := strconv.Atoi(fd.Name()); n <= 2 || inherited[fd.Name()] {
				continue
			}
			if flags&unix.O_CLOEXEC == 0 {
				t.Errorf("fd %s (%s) is not close-on-exec", fd.Name(), target)
			}
			switch {
			case target == "/dev/tty":
				ttys++
			case strings.HasPrefix(target, "pipe:"):
				pipes++
			}
		}
		if ttys != 1 || pipes != 2 {
			t.Errorf("%d terminal and %d pipe descriptors beyond 0-2, want /dev/tty and the wake-up pipe", ttys, pipes)
		}
		from := len(w.output())
		w.master.Write([]byte("?"))
		w.waitOutput(from, "Keys")
		w.master.Write([]byte("xq"))
		if code := w.wait(10 * time.Second); code != 0 {
			t.Errorf("exit %d after q, want 0", code)
		}
		w.checkRestored("/dev/tty", true)
	})

	t.Run("/dev/tty only when standard input is not the terminal", func(t *testing.T) {
		w := startPtyWatch(t, ptyOpts{bin: bin})
		w.waitOutput(0, "total")
		pid := strconv.Itoa(w.cmd.Process.Pid)
		fds, _ := os.ReadDir("/proc/" + pid + "/fd")
		for _, fd := range fds {
			target, _ := os.Readlink("/proc/" + pid + "/fd/" + fd.Name())
			if n, _ := strconv.Atoi(fd.Name()); n > 2 && strings.HasPrefix(target, "/dev/tty") {
				t.Errorf("fd %s -> %s: a device opened though standard input is the terminal", fd.Name(), target)
			}
		}
		w.master.Write([]byte("q"))
		w.wait(10 * time.Second)
	})

	t.Run("no controlling terminal (setsid) and standard input redirected", func(t *testing.T) {
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		w := startPtyWatch(t, ptyOpts{bin: bin, stdin: null, noCtty: true})
		code := w.wait(10 * time.Second)
		time.Sleep(50 * time.Millisecond)
		out := w.output()
		t.Logf("exit %d: %q", code, out)
		if code == 0 {
			t.Error("exit 0 without a terminal to read keys from")
		}
		if strings.Contains(out, "\x1b") {
			t.Errorf("wrote escape sequences though it could not take the terminal: %q", out)
		}
		if lines := strings.Count(strings.TrimRight(out, "\r\n"), "\n"); lines != 0 || !strings.Contains(out, "standard input is not a terminal to read keys from, and open /dev/tty:") || !strings.Contains(out, "(--plain prints snapshots without reading keys)") {
			t.Errorf("want one line naming the terminal and --plain: %q", out)
		}
		w.checkRestored("no ctty", false)
	})

	t.Run("standard output closed", func(t *testing.T) {
		// The Go runtime opens /dev/null on a closed descriptor 0-2
		// (checkfds): no file memwho opens later becomes its output.
		// /dev/null is no terminal: the plain snapshots, to nowhere.
		root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
		c := exec.Command("/bin/sh", "-c", `exec "$0" watch --proc "$1" --count 2 --interval 50ms >&-`, bin, root)
		c.Env = []string{"PATH=/usr/bin:/bin", "TERM=xterm-256color"}
		w := startPtyCmd(t, c, ptyOpts{})
		if code := w.wait(10 * time.Second); code != 0 {
			t.Errorf("exit %d with standard output closed: %q", code, w.output())
		}
		if out := w.output(); strings.Contains(out, "\x1b") {
			t.Errorf("escape sequences on the terminal (standard error) with standard output closed: %q", out)
		}
		w.checkRestored("stdout closed", false)
	})

	t.Run("SIGSTOP and SIGCONT", func(t *testing.T) {
		w := startPtyWatch(t, ptyOpts{bin: bin})
		w.waitOutput(0, "total")
		w.cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(300 * time.Millisecond)
		// What a job-control shell does meanwhile: its own settings.
		unix.IoctlSetTermios(int(w.slave.Fd()), unix.TCSETS, &w.before)
		from := len(w.output())
		w.cmd.Process.Signal(syscall.SIGCONT)
		// The modes again (no second title push) and a whole frame.
		from = w.waitOutput(from, "\x1b[?1049h\x1b[?25l\x1b[?7l\x1b[?2004h")
		w.waitOutput(from, "\x1b[H\x1b[2J")
		if strings.Count(w.output(), "\x1b[22;2t") != 1 {
			t.Errorf("the title pushed %d times, want once", strings.Count(w.output(), "\x1b[22;2t"))
		}
		if raw, _ := unix.IoctlGetTermios(int(w.slave.Fd()), unix.TCGETS); raw.Lflag&(unix.ICANON|unix.ECHO) != 0 {
			t.Errorf("not raw again after SIGCONT: lflag %#x", raw.Lflag)
		}
		from = len(w.output())
		w.master.Write([]byte("?"))
		w.waitOutput(from, "Keys")
		w.master.Write([]byte("xq"))
		if code := w.wait(10 * time.Second); code != 0 {
			t.Errorf("exit %d, want 0", code)
		}
		w.checkRestored("stop", true)
	})

	t.Run("SIGTSTP gives the terminal back, SIGCONT takes it again", func(t *testing.T) {
		w := startPtyWatch(t, ptyOpts{bin: bin})
		w.waitOutput(0, "total")
		from := len(w.output())
		w.cmd.Process.Signal(syscall.SIGTSTP)
		from = w.waitOutput(from, "\x1b[?1049l")
		pid := strconv.Itoa(w.cmd.Process.Pid)
		deadline := time.Now().Add(10 * time.Second)
		for !processStopped(pid) {
			if time.Now().After(deadline) {
				t.Fatal("memwho did not stop after SIGTSTP")
			}
			time.Sleep(10 * time.Millisecond)
		}
		w.checkRestored("stopped by SIGTSTP", true)
		w.cmd.Process.Signal(syscall.SIGCONT)
		from = w.waitOutput(from, "\x1b[?1049h")
		w.waitOutput(from, "total")
		if raw, _ := unix.IoctlGetTermios(int(w.slave.Fd()), unix.TCGETS); raw.Lflag&(unix.ICANON|unix.ECHO) != 0 {
			t.Errorf("not raw again after SIGCONT: lflag %#x", raw.Lflag)
		}
		w.master.Write([]byte("q"))
		if code := w.wait(10 * time.Second); code != 0 {
			t.Errorf("exit %d, want 0", code)
		}
		w.checkRestored("SIGTSTP, SIGCONT, q", true)
	})

	t.Run("a storm of resizes and keys", func(t *testing.T) {
		w := startPtyWatch(t, ptyOpts{bin: bin})
		w.waitOutput(0, "total")
		pid := w.cmd.Process.Pid
		rss := func() int {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
			for line := range strings.Lines(string(b)) {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					n, _ := strconv.Atoi(strings.Fields(v)[0])
					return n
				}
			}
			return 0
		}
		before := rss()
		for i := range 3000 {
			unix.IoctlSetWinsize(int(w.slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(5 + i%60), Col: uint16(10 + i%200)})
			if i%10 == 0 {
				w.master.Write([]byte("gnr\x1b[A\x1b[200~" + strings.Repeat("x", 500) + "\x1b[201~"))
			}
		}
		unix.IoctlSetWinsize(int(w.slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 30, Col: 100})
		time.Sleep(500 * time.Millisecond)
		after := rss()
		t.Logf("peak RSS %d KiB before, %d KiB after 3000 resizes and 300 key bursts", before, after)
		if after > before+16<<10 {
			t.Errorf("peak RSS grew from %d to %d KiB", before, after)
		}
		w.master.Write([]byte("q"))
		if code := w.wait(20 * time.Second); code != 0 {
			t.Errorf("exit %d, want 0", code)
		}
		w.checkRestored("storm", true)
	})

	t.Run("idle view uses no CPU", func(t *testing.T) {
		w := startPtyWatch(t, ptyOpts{bin: bin, args: []string{"--interval", "1h"}})
		w.waitOutput(0, "total")
		time.Sleep(200 * time.Millisecond)
		c0 := cpuTicks(t, w.cmd.Process.Pid)
		time.Sleep(time.Second)
		c1 := cpuTicks(t, w.cmd.Process.Pid)
		if c1-c0 > 10 {
			t.Errorf("%d clock ticks of CPU in a second of idling", c1-c0)
		}
		w.master.Write([]byte("q"))
		w.wait(10 * time.Second)
	})
}
