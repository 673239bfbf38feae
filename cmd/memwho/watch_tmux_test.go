//go:build !notui

package main

// The live view in a real terminal: tmux runs memwho watch on a fake
// /proc tree, send-keys drives it and capture-pane reads the screen. The
// binary is this test binary under the name memwho (testscript.Main put
// a copy in $PATH, see TestMain), so no separate build is needed.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/memwho/memwho/internal/term/termtest"
)

// tmuxSession is one tmux server on a private socket.
type tmuxSession struct {
	t    *testing.T
	tmux string
	sock string
}

func (s *tmuxSession) run(args ...string) (string, error) {
	args = append([]string{"-L", s.sock, "-f", "/dev/null"}, args...)
	out, err := exec.Command(s.tmux, args...).CombinedOutput()
	return string(out), err
}

func (s *tmuxSession) must(args ...string) string {
	s.t.Helper()
	out, err := s.run(args...)
	if err != nil {
		s.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return out
}

func (s *tmuxSession) screen() string { return s.must("capture-pane", "-p", "-t", "w") }

func (s *tmuxSession) format(f string) string {
	return strings.TrimSpace(s.must("display-message", "-p", "-t", "w", f))
}

func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	s.must(append([]string{"send-keys", "-t", "w"}, keys...)...)
}

// quit presses q, waits (10 s at most) for memwho to exit, and returns
// its exit status.
func (s *tmuxSession) quit() string {
	s.t.Helper()
	pid := s.format("#{pane_pid}")
	s.keys("q")
	deadline := time.Now().Add(10 * time.Second)
	for s.format("#{pane_dead}") != "1" {
		if time.Now().After(deadline) {
			s.t.Fatalf("memwho did not exit after q:\n%s", s.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return exitStatus(s.t, s, pid, deadline)
}

// waitFor polls the screen until every pattern matches (or, for a
// pattern starting with "!", does not match), and returns it.
func (s *tmuxSession) waitFor(what string, patterns ...string) string {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		scr := s.screen()
		ok := true
		for _, p := range patterns {
			neg := strings.HasPrefix(p, "!")
			if regexp.MustCompile("(?m)"+strings.TrimPrefix(p, "!")).MatchString(scr) == neg {
				ok = false
				break
			}
		}
		if ok {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: screen never matched %q:\n%s", what, patterns, scr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func TestWatchInTmux(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("skipping: tmux is not installed (apt-get install tmux; scripts/test.sh does)")
	}
	bin, err := exec.LookPath("memwho")
	if err != nil {
		t.Fatalf("memwho not in PATH (TestMain should have put this binary there): %v", err)
	}
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")

	var rnd [6]byte
	rand.Read(rnd[:])
	s := &tmuxSession{t: t, tmux: tmux, sock: "memwho-test-" + hex.EncodeToString(rnd[:])}
	t.Cleanup(func() {
		// tmux leaves its socket file behind when the server is killed.
		sp, _ := s.run("display-message", "-p", "#{socket_path}")
		s.run("kill-server")
		if sp = strings.TrimSpace(sp); strings.Contains(sp, s.sock) {
			os.Remove(sp)
		}
	})

	// The shell waits for a line before starting memwho, so that
	// pipe-pane records everything memwho writes to the terminal.
	cmd := "read go && exec " + shellQuote(bin) + " watch --proc " + shellQuote(root) + " --interval 200ms"
	s.must("new-session", "-d", "-s", "memwho", "-n", "w", "-x", "120", "-y", "40", "env", "TERM=xterm-256color", "NO_COLOR=1", "sh", "-c", cmd)
	// Keep the pane after memwho exits, to inspect what it left behind.
	s.must("set-option", "-w", "-t", "w", "remain-on-exit", "on")
	raw := filepath.Join(t.TempDir(), "tty.raw")
	s.must("pipe-pane", "-t", "w", "-o", "cat > "+shellQuote(raw))
	s.keys("Enter")

	scr := s.waitFor("start", `^memwho watch  \d\d:\d\d:\d\d  every 200ms  by program  4 processes`,
		`^ +Private +Shared +RAM used▼ +Swap +Procs +Change +MiB/min +Trend +Leak +Program`,
		`^ +8\.1 MiB +4\.6 MiB +12\.8 MiB +0 B +3 +0 B +0\.0 .* helper$`,
		`^ +13\.4 MiB +0 B +4 +total$`)
	if got := s.format("#{alternate_on}"); got != "1" {
		t.Errorf("alternate_on = %q while running, want 1", got)
	}
	// The first rows are the largest: helper (12.8 MiB) above bash.
	if i, j := strings.Index(scr, "helper"), strings.Index(scr, "bash"); i < 0 || j < 0 || i > j {
		t.Errorf("helper is not above bash:\n%s", scr)
	}

	s.keys("w")
	s.waitFor("sort by swap", `Swap▼`, `!RAM used▼`)
	s.keys("Right")
	s.waitFor("next column", `Procs▼`, `!Swap▼`)
	s.keys("Left", "Left")
	s.waitFor("previous column twice", `RAM used▼`, `!Procs▼`)
	s.keys("n")
	scr = s.waitFor("sort by name", `Program▲`)
	if i, j := strings.Index(scr, " bash"), strings.Index(scr, " helper"); i > j {
		t.Errorf("by name: bash is not above helper:\n%s", scr)
	}

	s.keys("g")
	s.waitFor("group by user", `by user`, `User▲`, ` 13\.4 MiB .* root$`)
	s.keys("G")
	s.waitFor("back to program", `by program`, `Program▲`)

	s.keys("/", "h", "e", "l")
	s.waitFor("filter prompt", `^filter: hel█  Enter applies, Esc cancels`)
	s.keys("Enter")
	s.waitFor("filter applied", `^filter /hel/  1 of 2 groups`, `helper$`, `!bash$`)
	// A bracketed paste (tmux brackets it because memwho asked for it)
	// is text, never keys: outside the prompt it does nothing (its q
	// does not quit), at the prompt it is typed.
	s.must("set-buffer", "-b", "memwho", "q")
	s.must("paste-buffer", "-p", "-d", "-b", "memwho", "-t", "w")
	s.keys("/", "C-u")
	s.must("set-buffer", "-b", "memwho", "^h(el|q)")
	s.must("paste-buffer", "-p", "-d", "-b", "memwho", "-t", "w")
	s.waitFor("pasted filter", `^filter: \^h\(el\|q\)█`)
	s.keys("Enter")
	s.waitFor("pasted filter applied", `^filter /\^h\(el\|q\)/  1 of 2 groups`, `helper$`, `!bash$`)
	s.keys("/", "C-u", "(", "Enter")
	s.waitFor("bad regex", `bad regex: missing closing \) in "\("`)
	s.keys("Escape")
	s.waitFor("prompt cancelled", `^filter /\^h\(el\|q\)/`, `!bad regex`)
	s.keys("Escape")
	s.waitFor("filter cleared", `bash$`, `helper$`, `!^filter`)

	s.keys("Space")
	s.waitFor("paused", `^memwho watch  PAUSED  `, `^paused: space resumes`)
	s.keys("Space")
	s.waitFor("resumed", `!PAUSED`)

	s.keys("?")
	s.waitFor("help", `^Keys$`, `LEAK +grew steadily`)
	s.keys("x")
	s.waitFor("help closed", `!^Keys$`, `helper$`)

	// A narrower terminal: Private, Shared and Procs give way, the rest
	// stays on one line each.
	s.must("resize-window", "-t", "w", "-x", "80", "-y", "30")
	scr = s.waitFor("resized to 80 columns", `^ +RAM used +Swap +Change +MiB/min +Trend +Leak +Program▲`, `!Private`)
	for i, l := range strings.Split(strings.TrimRight(scr, "\n"), "\n") {
		if w := termtest.Width(l); w > 80 {
			t.Errorf("line %d is %d cells wide at 80 columns: %q", i+1, w, l)
		}
	}
	s.waitFor("rows unwrapped at 80", `^ +12\.8 MiB +0 B +0 B +0\.0 .* helper$`, `^ +13\.4 MiB +0 B +total$`)

	// Six lines leave room for one row (sorted by name: bash, then
	// helper); the keys scroll through the rest, whichever sequence tmux
	// sends for them.
	s.must("resize-window", "-t", "w", "-x", "80", "-y", "6")
	s.waitFor("one row fits", `bash$`, `!helper$`, `total \(1 hidden\)$`)
	s.keys("End")
	s.waitFor("end", `helper$`, `!bash$`, `total \(↑1\)$`)
	s.keys("Up")
	s.waitFor("up", `bash$`, `total \(1 hidden\)$`)
	s.keys("NPage")
	s.waitFor("page down", `helper$`, `total \(↑1\)$`)
	s.keys("PPage")
	s.waitFor("page up", `bash$`, `total \(1 hidden\)$`)
	s.keys("Down")
	s.waitFor("down", `helper$`, `total \(↑1\)$`)
	s.keys("Home")
	s.waitFor("home", `bash$`, `total \(1 hidden\)$`)
	s.keys("End")
	s.must("resize-window", "-t", "w", "-x", "80", "-y", "30")
	s.waitFor("taller again: every row, nothing scrolled", `bash$`, `helper$`, `total$`)

	if got := s.quit(); got != "0" {
		t.Errorf("exit status %q after q, want 0", got)
	}
	// The terminal is left sane: out of the alternate screen, and the
	// table gone with it.
	if got := s.format("#{alternate_on}"); got != "0" {
		t.Errorf("alternate_on = %q after quit, want 0", got)
	}
	if scr := s.screen(); strings.Contains(scr, "RAM used") {
		t.Errorf("the table is still on the screen after quit:\n%s", scr)
	}
	// What memwho wrote: every mode it set is reset after the last time
	// it was set (alternate screen, hidden cursor, mouse, bracketed
	// paste, focus events, cursor keys, keyboard enhancements). tmux's
	// own cursor_flag says nothing here: tmux hides the cursor of a dead
	// pane.
	// The pipe's cat may still be writing the last bytes: give it a
	// moment to catch up with the exit.
	var out []byte
	for try := 0; try < 40; try++ {
		out, err = os.ReadFile(raw)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out, []byte("\x1b[?1049l")) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, m := range []struct{ set, reset string }{
		{"\x1b[?1049h", "\x1b[?1049l"}, // alternate screen
		{"\x1b[?25l", "\x1b[?25h"},     // cursor hidden / shown
		{"\x1b[?7l", "\x1b[?7h"},       // automatic wrap off / on
		{"\x1b[?1000h", "\x1b[?1000l"}, // mouse
		{"\x1b[?1002h", "\x1b[?1002l"},
		{"\x1b[?1003h", "\x1b[?1003l"},
		{"\x1b[?2004h", "\x1b[?2004l"}, // bracketed paste
		{"\x1b[?1004h", "\x1b[?1004l"}, // focus events
		{"\x1b[?1h", "\x1b[?1l"},       // application cursor keys
		{"\x1b[>1u", "\x1b[<1u"},       // kitty keyboard protocol pushed / popped
		{"\x1b[>4;2m", "\x1b[>4m"},     // xterm modifyOtherKeys
		{"\x1b[22;2t", "\x1b[23;2t"},   // window title pushed / popped
	} {
		set, reset := bytes.LastIndex(out, []byte(m.set)), bytes.LastIndex(out, []byte(m.reset))
		if set >= 0 && reset < set {
			t.Errorf("%q set and never reset after (last set at byte %d of %d, last reset at %d)", m.set, set, len(out), reset)
		}
	}
	if !bytes.Contains(out, []byte("\x1b[?1049h")) {
		t.Errorf("no alternate screen in the %d bytes written", len(out))
	}
}

// exitStatus is memwho's exit status once its pane is dead. tmux reports
// it only after reaping the child, which on a loaded machine was seen to
// take longer than the test waits; until then the exited memwho is a
// zombie whose /proc/PID/stat carries the status (field 52, exit_code,
// as waitpid would return it).
func exitStatus(t *testing.T, s *tmuxSession, pid string, deadline time.Time) string {
	t.Helper()
	for {
		if st := s.format("#{pane_dead_status}"); st != "" {
			return st
		}
		if b, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil {
			f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
			// f[0] is field 3 (state); exit_code is field 52.
			if len(f) >= 50 && f[0] == "Z" {
				code, err := strconv.Atoi(f[49])
				if err == nil {
					return strconv.Itoa(code >> 8 & 0xff)
				}
			}
		}
		if time.Now().After(deadline) {
			return ""
		}
		time.Sleep(50 * time.Millisecond)
	}
}
