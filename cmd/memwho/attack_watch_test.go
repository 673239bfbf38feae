package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/memwho/memwho/internal/privilege/privtest"
)

// hostileExes are executable names (the basename is what the live view
// shows, in full) of root processes the fourth review starts: escape
// sequences of every kind (no "/": a file name), C1 controls as a byte and in UTF-8, bidi, a
// cluster measured 2 cells wide and drawn 140 (leading jamo), a name
// that would undo the view's modes.
var hostileExes = []string{
	"r4osc\x1b]0;pwned\x07\x1b]52;c;cHduZWQ=\x07\x1b]8;;evil.example\x1b\\\x1b[2J\x9b31m\xc2\x9b\u202eevil",
	"r4jamo" + strings.Repeat("\u1100", 70),
	"r4dcs\x1bP+q544e\x1b\\\x1b[22;0t\x1b[23;0t\x1b[?1049l\x1b[?25h\x1b[?7h" + strings.Repeat("x", 100),
}

// startHostileNamedProcs starts a copy of the test binary under each of
// hostileExes, as root, its task name the first 15 bytes of it.
func (e *privEnv) startHostileNamedProcs(t *testing.T) {
	dir := filepath.Join(e.dir, "watch-exes")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range hostileExes {
		bin := privtest.CopyExecutable(t, dir, name)
		c := exec.Command(bin)
		c.Env = append(os.Environ(), hostileEnv+"="+name[:15])
		stdin, err := c.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			stdin.Close()
			c.Wait()
		})
		if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
			t.Fatalf("hostile process %q: %q, %v", name, line, err)
		}
	}
}

// allowedSeq is every escape sequence the live view writes of its own:
// cursor moves, erases, styles, its modes and title.
var allowedSeq = regexp.MustCompile(`\x1b\[[0-9;]*[HJKmt]|\x1b\[\?(1049|25|7|2004)[hl]|\x1b\]2;memwho watch\x07`)

// checkTerminalStream checks what the view wrote: no escape sequence of
// another's, no C1 control, no bidi control, valid UTF-8.
func checkTerminalStream(t *testing.T, out string) {
	t.Helper()
	rest := allowedSeq.ReplaceAllString(out, "")
	for i, r := range rest {
		if r == 0x1b || r == 0x07 || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || (r == utf8.RuneError) {
			t.Errorf("%U at byte %d of what the view wrote (its own sequences removed): %q", r, i, rest[max(i-40, 0):min(i+40, len(rest))])
			return
		}
	}
	for _, bad := range []string{"pwned", "evil.example"} {
		if n, esc := strings.Count(out, bad), strings.Count(out, `\x1b]0;`+bad)+strings.Count(out, `\x1b]8;;`+bad); n != esc {
			t.Errorf("%q written %d times, %d of them escaped", bad, n, esc)
		}
	}
}

// checkWatchAttacks is the attacks on the live view
// (docs/safe.md): its terminal layer while it holds CAP_SYS_PTRACE.
func (e *privEnv) checkWatchAttacks(t *testing.T) {
	e.startHostileNamedProcs(t)
	watch := func(args ...string) *exec.Cmd {
		c := e.cmd(append([]string{"watch", "--by", "pid", "--interval", "200ms", "--filter", "r4|evil"}, args...)...)
		c.Env = []string{"PATH=/usr/bin:/bin", "TERM=xterm-256color", "HOME=/nonexistent"}
		return c
	}

	t.Run("watch: hostile names in the live view with capabilities", func(t *testing.T) {
		for _, flags := range [][]string{nil, {"--conns"}} {
			w := startPtyCmd(t, watch(flags...), ptyOpts{})
			from := w.waitOutput(0, "total")
			// Frames at several sizes, sorted several ways, the
			// names at the prompt too.
			for i, sz := range [][2]uint16{{60, 9}, {17, 6}, {200, 40}, {100, 30}} {
				unix.IoctlSetWinsize(int(w.slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: sz[0], Row: sz[1]})
				w.master.Write([]byte("nrgG"[i : i+1]))
				time.Sleep(300 * time.Millisecond)
			}
			w.waitOutput(from, "total")
			w.master.Write([]byte("/\x1b[200~" + strings.Join(hostileExes, "") + "\x1b[201~"))
			time.Sleep(300 * time.Millisecond)
			w.master.Write([]byte("\x1b"))
			time.Sleep(100 * time.Millisecond)
			w.master.Write([]byte("q"))
			if code := w.wait(20 * time.Second); code != 0 {
				t.Errorf("watch %v: exit %d\n%q", flags, code, w.output())
			}
			w.checkRestored("watch "+strings.Join(flags, " "), true)
			out := w.output()
			if !strings.Contains(out, `r4jamo`) || !strings.Contains(out, `r4osc\x1b]0;pwned`) {
				t.Errorf("watch %v: the hostile processes are not on the screen:\n%q", flags, out)
			}
			checkTerminalStream(t, out)
		}
	})

	t.Run("watch: SIGTERM while the terminal takes no output, capabilities held", func(t *testing.T) {
		for _, flags := range [][]string{nil, {"--conns"}} {
			w := startPtyCmd(t, watch(flags...), ptyOpts{})
			w.waitOutput(0, "total")
			w.setReading(false)
			time.Sleep(50 * time.Millisecond)
			// setpriv execs memwho: the same process.
			pid := strconv.Itoa(w.cmd.Process.Pid)
			blocked := false
			for i := 0; i < 3000 && !blocked; i++ {
				unix.IoctlSetWinsize(int(w.slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(30 + i%2), Col: 100})
				time.Sleep(2 * time.Millisecond)
				if i%20 == 19 {
					blocked = threadIn(pid, "wait_woken", "n_tty_write")
				}
			}
			if !blocked {
				t.Fatalf("watch %v: its write never blocked", flags)
			}
			// The user's signal to their own process.
			kill := exec.Command("setpriv", "--reuid="+e.user.Name, "--regid="+strconv.Itoa(e.user.GID), "--init-groups", "--", "kill", "-TERM", pid)
			if out, err := kill.CombinedOutput(); err != nil {
				t.Fatalf("kill as the user: %v: %s", err, out)
			}
			if code := w.wait(10 * time.Second); code != 0 {
				t.Errorf("watch %v: exit %d after SIGTERM with the terminal stuck, want 0", flags, code)
			}
			w.checkRestored("stuck", false)
		}
	})

	t.Run("watch: keys from /dev/tty, and none (setsid), with capabilities", func(t *testing.T) {
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		// The terminal is root's (the test opened it): the user's
		// process reads it through the controlling terminal it was
		// given, as any program of theirs could.
		w := startPtyCmd(t, watch("--conns"), ptyOpts{stdin: null})
		var st syscall.Stat_t
		syscall.Fstat(int(w.slave.Fd()), &st)
		t.Logf("terminal owned by uid %d, mode %o", st.Uid, st.Mode&0o7777)
		w.waitOutput(0, "total")
		w.master.Write([]byte("q"))
		if code := w.wait(10 * time.Second); code != 0 {
			t.Errorf("exit %d after q on /dev/tty", code)
		}
		w.checkRestored("/dev/tty", true)

		w = startPtyCmd(t, watch("--conns"), ptyOpts{stdin: null, noCtty: true})
		code := w.wait(10 * time.Second)
		time.Sleep(50 * time.Millisecond)
		out := w.output()
		if code != 1 || strings.Contains(out, "\x1b") || !strings.Contains(out, "standard input is not a terminal to read keys from, and open /dev/tty:") {
			t.Errorf("without a controlling terminal: exit %d, %q; want 1 and one line", code, out)
		}
	})
	t.Run("watch: /dev/tty replaced in a user and mount namespace", func(t *testing.T) {
		if !e.unshareWorks(t) {
			t.Skip("unshare -Urm is not allowed to the test user here")
		}
		secret := e.secret(t)
		own := e.ownDir(t, "watch-tty")
		fifo := filepath.Join(own, "fifo")
		os.Remove(fifo)
		if err := unix.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chown(fifo, e.user.UID, e.user.GID)
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		for _, target := range []string{secret, fifo, "/dev/zero"} {
			c := e.cmd()
			c.Args = append(c.Args[:len(c.Args)-1], "unshare", "-Urm", "/bin/sh", "-c", `mount --bind "$T" /dev/tty && exec "$M" watch --conns --interval 1h`)
			c.Path, _ = exec.LookPath("setpriv")
			c.Env = []string{"PATH=/usr/bin:/bin", "TERM=xterm-256color", "M=" + e.bin, "T=" + target}
			w := startPtyCmd(t, c, ptyOpts{stdin: null})
			code := w.wait(20 * time.Second)
			time.Sleep(50 * time.Millisecond)
			out := w.output()
			t.Logf("/dev/tty bound to %s: exit %d: %q", target, code, out)
			if code == 0 || strings.Contains(out, secretText) || strings.Contains(out, "\x1b[?1049h") || !strings.Contains(out, "/dev/tty") {
				t.Errorf("/dev/tty bound to %s: exit %d, %q; want a refusal before the screen is taken", target, code, out)
			}
		}
	})
}
