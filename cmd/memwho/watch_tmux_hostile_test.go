//go:build !notui

package main

// Attacks tabled in docs/safe.md: the live view's terminal layer in a
// real terminal. tmux interprets what memwho writes as a terminal would,
// so a sequence that got through would show: a changed window title, a
// tmux paste buffer set by OSC 52, a line wrapped onto the next, rows
// out of place.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/proc/proctest"
)

// tmuxHostileNames are the names given to the four processes of the
// fake /proc tree: as comm and as the executable's basename.
var tmuxHostileNames = map[string]string{
	"6570": "osc\x1b]0;pwned-title\x07\x1b]52;c;cHduZWQ=\x07\x1b]8;;http://evil/\x1b\\\x1b[2J\x1b[5;1Hcsi",
	// Grapheme clusters the view measures as 2 cells and a terminal
	// that draws code point by code point (tmux 3.3, xterm) as 2 per
	// code point: leading jamo (GB6), emoji modifiers (GB9), spacing
	// marks (GB9a). (ZWJ sequences cannot form: Sanitize escapes the
	// ZWJ, a format character.)
	"6571": "z-jamo" + strings.Repeat("\u1100", 70) + "\U0001f44d" + strings.Repeat("\U0001f3fb", 20) + "a" + strings.Repeat("\u0903", 20),
	"6572": "c1\x9b2J\u009b31m\u009d2;pwned\u009c\u202eevil\u200b\u2066\xff\xfe",
	"6573": "dcs\x1bP+q544e\x1b\\\x1b[22;0t\x1b[23;0t\x1b[?1049l\x1b[?2004l\x1b[?7h" + strings.Repeat("x", 300),
}

// newTmux starts a tmux server on a private socket, removed at the end.
func newTmux(t *testing.T) *tmuxSession {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("skipping: tmux is not installed (apt-get install tmux; scripts/test.sh does)")
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	s := &tmuxSession{t: t, tmux: tmux, sock: "memwho-test-" + hex.EncodeToString(rnd[:])}
	t.Cleanup(func() {
		sp, _ := s.run("display-message", "-p", "#{socket_path}")
		s.run("kill-server")
		if sp = strings.TrimSpace(sp); strings.Contains(sp, s.sock) {
			os.Remove(sp)
		}
	})
	return s
}

// hostileRoot is the basic fake /proc tree with tmuxHostileNames.
func hostileRoot(t *testing.T) string {
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	for pid, name := range tmuxHostileNames {
		dir := filepath.Join(root, pid)
		// The task name in stat (between the parentheses), status
		// and comm.
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			t.Fatal(err)
		}
		i, j := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		stat = append(append(append([]byte(nil), stat[:i+1]...), name...), stat[j:]...)
		if err := os.WriteFile(filepath.Join(dir, "stat"), stat, 0o644); err != nil {
			t.Fatal(err)
		}
		status, err := os.ReadFile(filepath.Join(dir, "status"))
		if err != nil {
			t.Fatal(err)
		}
		status = regexp.MustCompile(`(?m)^Name:\t.*$`).ReplaceAll(status, []byte("Name:\t"+strings.ReplaceAll(name, "\n", `\n`)))
		if err := os.WriteFile(filepath.Join(dir, "status"), status, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, "exe"))
		if err := os.Symlink("/usr/bin/"+name, filepath.Join(dir, "exe")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte("/usr/bin/"+name+"\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestWatchHostileNamesInTmux(t *testing.T) {
	bin, err := exec.LookPath("memwho")
	if err != nil {
		t.Fatalf("memwho not in PATH (TestMain should have put this binary there): %v", err)
	}
	s := newTmux(t)
	root := hostileRoot(t)
	cmd := "read go && exec " + shellQuote(bin) + " watch --proc " + shellQuote(root) + " --by pid --interval 100ms"
	s.must("new-session", "-d", "-s", "memwho", "-n", "w", "-x", "100", "-y", "30", "env", "TERM=xterm-256color", "sh", "-c", cmd)
	s.must("set-option", "-w", "-t", "w", "remain-on-exit", "on")
	s.must("set-option", "-g", "set-clipboard", "on")
	s.must("set-option", "-w", "-t", "w", "allow-rename", "on")
	s.must("select-pane", "-t", "w", "-T", "shell-title")
	s.keys("Enter")

	rowRE := regexp.MustCompile(`^ +[0-9.]+ [KMG]?i?B `)
	check := func(what string) {
		t.Helper()
		// Several refreshes: a desync shows once lines are redrawn
		// in place.
		time.Sleep(400 * time.Millisecond)
		scr := s.waitFor(what, `^memwho watch`, `^ +[0-9.]+ [KMG]iB .* total$`)
		lines := strings.Split(strings.TrimRight(scr, "\n"), "\n")
		rows := 0
		for i, l := range lines {
			switch {
			case i < 4:
			case rowRE.MatchString(l):
				rows++
			case strings.TrimSpace(l) != "":
				t.Errorf("%s: line %d is not a row (wrapped or misplaced output): %q\n%s", what, i+1, l, scr)
			}
		}
		if rows != 5 {
			t.Errorf("%s: %d rows on the screen, want 4 processes and the total:\n%s", what, rows, scr)
		}
		for _, bad := range []string{"pwned", "evil/"} {
			if strings.Contains(scr, bad) && !strings.Contains(scr, `\x1b]0;`+bad) && !strings.Contains(scr, `\u009d2;`+bad) {
				t.Errorf("%s: %q drawn outside its escaped name:\n%s", what, bad, scr)
			}
		}
		if got := s.format("#{pane_title}"); got != "memwho watch" {
			t.Errorf("%s: pane title %q, want memwho watch", what, got)
		}
		if got := s.format("#{alternate_on}"); got != "1" {
			t.Errorf("%s: alternate_on %q, want 1", what, got)
		}
		if out, _ := s.run("list-buffers"); strings.TrimSpace(out) != "" {
			t.Errorf("%s: a paste buffer was set (OSC 52): %s", what, out)
		}
	}
	check("start")
	for _, size := range [][2]string{{"61", "30"}, {"40", "12"}, {"100", "30"}, {"17", "8"}, {"100", "30"}} {
		s.must("resize-window", "-t", "w", "-x", size[0], "-y", size[1])
		if size[0] == "100" {
			check("resized to " + size[0])
		}
	}
	// Sorted by name the cluster's row is the last above the total;
	// on a screen these rows just fill, a line wrapped from there
	// scrolls the screen.
	s.keys("n")
	s.must("resize-window", "-t", "w", "-x", "100", "-y", "9")
	check("its row last on a full screen")
	s.must("resize-window", "-t", "w", "-x", "100", "-y", "30")
	s.keys("g")
	check("by program")
	s.keys("G")
	check("back by pid")
	t.Logf("the screen:\n%s", s.screen())

	if got := s.quit(); got != "0" {
		t.Errorf("exit status %q after q, want 0", got)
	}
	if got := s.format("#{alternate_on}"); got != "0" {
		t.Errorf("alternate_on = %q after quit, want 0", got)
	}
	if got := s.format("#{pane_title}"); got != "shell-title" {
		t.Errorf("pane title %q after quit, want the one before (shell-title)", got)
	}
}
