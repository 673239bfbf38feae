//go:build !notui

package watch

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/term"
)

// Attacks tabled in docs/safe.md: scrolling (f8bd37f's sibling,
// 49f2a0e) and the hang-up channel (f8bd37f).

// totalLabelLine is the end of the total line for above rows scrolled past and
// below rows under the screen, as the view writes it.
func totalLabelLine(above, below int) string {
	switch {
	case above > 0 && below > 0:
		return fmt.Sprintf("total (↑%d ↓%d)", above, below)
	case above > 0:
		return fmt.Sprintf("total (↑%d)", above)
	case below > 0:
		return fmt.Sprintf("total (%d hidden)", below)
	}
	return "total"
}

// checkScroll checks the invariants of a scrolled model: top within the
// rows, a screen that fits, and (when the total line is on screen and
// wide enough to read) the rows above and below as top says.
func checkScroll(t *testing.T, what string, m Model) {
	t.Helper()
	n, room := m.rowCount(), m.rowRoom()
	if m.top < 0 || m.top > max(n-room, 0) {
		t.Errorf("%s: top %d outside [0, %d] (%d rows, %d fit)", what, m.top, max(n-room, 0), n, room)
	}
	screen := m.View()
	checkScreen(t, screen, max(m.width, 1), max(m.height, 1), false)
	if m.scans == 0 || m.help || m.height < headerLines+1 || m.height > 1<<20 || m.width < 80 {
		return
	}
	lines := strings.Split(screen, "\n")
	above := min(m.top, max(n-room, 0))
	below := max(n-above-room, 0)
	if got, want := strings.TrimRight(lines[len(lines)-1], " "), totalLabelLine(above, below); !strings.HasSuffix(got, want) {
		t.Errorf("%s: total line %q, want it to end %q", what, got, want)
	}
	if shown := len(lines) - headerLines - 1; shown != n-above-below {
		t.Errorf("%s: %d rows on screen, want %d", what, shown, n-above-below)
	}
}

// TestScrollSizes: every scroll key, pressed up to 40 times,
// at heights from none to 65535 and widths from 1 cell: top stays
// within the rows, the screen fits, the total counts what is off it.
func TestScrollSizes(t *testing.T) {
	keys := []string{"down", "up", "pgdown", "pgup", "end", "home"}
	for _, h := range []int{0, 1, 2, 4, 5, 6, 7, 10, 12, 13, 14, 65535} {
		for _, w := range []int{1, 2, 10, 40, 80} {
			m := testModel(t, w, h, 20, Options{})
			for _, k := range keys {
				for _, reps := range []int{1, 2, 3, 40} {
					p := m
					for range reps {
						p, _ = press(p, k)
						checkScroll(t, fmt.Sprintf("%d×%d %s×%d", w, h, k, reps), p)
					}
					for _, k2 := range keys {
						q, _ := press(p, k2)
						checkScroll(t, fmt.Sprintf("%d×%d %s×%d %s", w, h, k, reps, k2), q)
					}
				}
			}
		}
	}
}

// TestResizeWhileScrolled: a view scrolled to the end, then made
// shorter (down to no rows, to one line, to SizeMsg heights no terminal
// reports), taller and back: top follows, the last page is shown, and
// a taller terminal shows every row again.
func TestResizeWhileScrolled(t *testing.T) {
	m := testModel(t, 80, 10, 20, Options{})
	m, _ = press(m, "end")
	if m.top != 3 {
		t.Fatalf("end at 80×10: top %d, want 3", m.top)
	}
	for _, tc := range []struct {
		h   int
		top int // after the resize
	}{
		{6, 3}, {5, 7}, {4, 8}, {1, 8}, {0, 8}, {-1, 8}, {7, 6}, {9, 4}, {13, 0}, {14, 0}, {65535, 0}, {10, 0},
	} {
		m, _ = m.Update(SizeMsg{Width: 80, Height: tc.h})
		if m.top != tc.top {
			t.Errorf("resized to height %d: top %d, want %d", tc.h, m.top, tc.top)
		}
		checkScroll(t, fmt.Sprintf("height %d", tc.h), m)
		// Scroll to the end again at every size but the last (a shorter
		// terminal keeps the first row on screen, not the last page).
		if tc.h != 10 {
			m, _ = press(m, "end")
		}
	}
	// Odd sizes from a SizeMsg (the loop replaces zero and negative
	// ones with 80×24, but Update must not care): no panic, no top
	// outside the rows, however many page keys.
	for _, h := range []int{math.MinInt, math.MinInt + 1, -6, math.MaxInt, math.MaxInt - 1} {
		for _, w := range []int{math.MinInt, 0, math.MaxInt} {
			p, _ := m.Update(SizeMsg{Width: w, Height: h})
			for _, k := range []string{"end", "pgdown", "pgdown", "down", "pgup", "pgup", "pgup", "up", "home", "end"} {
				p, _ = press(p, k)
				if n := p.rowCount(); p.top < 0 || p.top > n {
					t.Errorf("%d×%d after %s: top %d outside [0, %d]", w, h, k, p.top, n)
				}
			}
			if w == 0 && h > 0 {
				_ = p.View() // a MaxInt-line screen holds as many lines as rows
			}
		}
	}
}

// TestNoRowsLeft: rows that vanish under a scrolled view (a
// filter matching nothing, a refresh without them, a grouping with none)
// leave top at 0 and a screen with the bare total, never a negative
// slice or a stale "↑".
func TestNoRowsLeft(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(Model) Model
	}{
		{"a filter matching nothing", func(m Model) Model { m, _ = press(m, "/", "^$", "enter"); return m }},
		{"a grouping with no rows: none by container", func(m Model) Model {
			for m.by != sample.ByContainer {
				m, _ = press(m, "g")
			}
			return m
		}},
		{"a refresh with no processes", func(m Model) Model {
			m.Add(snapshot(30, time.Second, nil))
			m, _ = m.Update(SizeMsg{Width: 80, Height: 10}) // any message that clamps
			return m
		}},
		{"a refresh with no processes (scan message)", func(m Model) Model {
			*m.snap = *snapshot(30, time.Second, nil)
			m, _ = m.Update(snapshotMsg{started: time.Now()})
			return m
		}},
		{"the filter set under the model (as a refresh leaves it)", func(m Model) Model {
			m.filter = regexp.MustCompile("^nothing$")
			return m
		}},
	} {
		m := testModel(t, 80, 10, 20, Options{})
		m, _ = press(m, "end")
		if m.top != 3 {
			t.Fatalf("end: top %d", m.top)
		}
		p := tc.do(m)
		screen := p.View()
		lines := strings.Split(screen, "\n")
		last := strings.TrimSpace(lines[len(lines)-1])
		if strings.Contains(screen, "↑") || strings.Contains(screen, "hidden") || !strings.HasSuffix(last, "total") {
			t.Errorf("%s: top %d, screen:\n%s", tc.name, p.top, screen)
		}
		checkScreen(t, screen, 80, 10, false)
		for _, k := range []string{"end", "pgdown", "down", "up", "pgup", "home"} {
			q, _ := press(p, k)
			if q.top != 0 && q.rowCount() <= q.rowRoom() {
				t.Errorf("%s, then %s: top %d with %d rows", tc.name, k, q.top, q.rowCount())
			}
		}
	}
}

// TestPromptAndHelp: scroll keys and pastes of their sequences
// at the filter prompt and on the help screen: no scrolling, no text
// typed by a key (a paste is text), the help closed by any key without
// that key's action.
func TestPromptAndHelp(t *testing.T) {
	m := testModel(t, 80, 10, 20, Options{})
	m, _ = press(m, "down")
	seqs := "\x1b[A\x1b[B\x1b[5~\x1b[6~\x1b[1~\x1b[4~\x1b[7~\x1b[8~\x1b[H\x1b[F\x1bOH\x1bOF"
	var d term.Decoder
	evs := d.Feed(nil, []byte(seqs))
	if len(evs) != 12 {
		t.Fatalf("%q decodes to %d keys: %#v", seqs, len(evs), evs)
	}
	for _, tc := range []struct {
		name  string
		open  []string
		input string // at the prompt, after the keys
	}{
		{"prompt", []string{"/"}, ""},
		{"prompt with text", []string{"/", "fire"}, "fire"},
	} {
		p, _ := press(m, tc.open...)
		for _, ev := range evs {
			p, _ = p.Update(ev)
			if p.top != 1 || !p.prompt || p.input != tc.input {
				t.Errorf("%s: %#v: top %d, prompt %v, input %q", tc.name, ev, p.top, p.prompt, p.input)
			}
		}
		checkScroll(t, tc.name, p)
	}
	// On the help screen each closes the help, and does nothing else.
	for _, ev := range evs {
		p, _ := press(m, "?")
		p, _ = p.Update(ev)
		if p.top != 1 || p.help {
			t.Errorf("help: %#v: top %d, help open %v", ev, p.top, p.help)
		}
		checkScroll(t, "help", p)
	}
	// A paste of the sequences: at the prompt it is text (shown escaped),
	// elsewhere nothing; never a scroll.
	paste := []byte("\x1b[200~" + seqs + "\x1b[201~")
	for _, open := range [][]string{nil, {"/"}, {"?"}, {"space"}} {
		p, _ := press(m, open...)
		var d term.Decoder
		evs := d.Feed(nil, paste)
		if len(evs) != 1 {
			t.Fatalf("the paste decodes to %d events: %#v", len(evs), evs)
		}
		p, _ = p.Update(evs[0])
		if p.top != 1 {
			t.Errorf("%q, a paste of scroll keys: top %d, want 1", open, p.top)
		}
		if p.prompt != (len(open) > 0 && open[0] == "/") || p.prompt && p.input != seqs {
			t.Errorf("%q, a paste: prompt %v input %q", open, p.prompt, p.input)
		}
		checkScroll(t, fmt.Sprintf("paste after %q", open), p)
	}
}

// scrollHosts is a host of n processes, each its own program.
func scrollHost(n int) []proc {
	procs := make([]proc, n)
	for i := range procs {
		procs[i] = proc{pid: 100 + i, name: fmt.Sprintf("worker-%05d", i), ram: constant(uint64(i+1) * 64 * kiB)}
	}
	return procs
}

// TestKeyFlood: a read full of PgDn (256 in 1 KiB: a terminal
// behind, a paste into a terminal without bracketed paste, anything
// writing to its input) over 2,000 groups and a filter. Each scroll key
// ran the filter over every row to clamp (rowCount): 1,024 bytes cost
// 5.2 s at 10,000 groups with a user's `(?i)w.*r.*k.*e.*r.*9$`, against
// 18 ms for the frame drawn after them, and SIGTERM and q waited. The
// count is now kept until the rows or the filter change: the keys cost
// one filter pass, less than a frame.
func TestKeyFlood(t *testing.T) {
	m := NewModel(nil, Options{Interval: time.Second, By: sample.ByPID})
	m, _ = m.Update(SizeMsg{Width: 100, Height: 40})
	for i := range 3 {
		m.Add(snapshot(i, time.Second, scrollHost(2000)))
	}
	m.filter = regexp.MustCompile(`(?i)w.*r.*k.*e.*r.*9$`)
	flood := []byte(strings.Repeat("\x1b[6~", 256))
	var d term.Decoder
	evs := d.Feed(nil, flood)
	if len(evs) != 256 {
		t.Fatalf("%d events, want 256", len(evs))
	}
	frame := time.Duration(math.MaxInt64)
	for range 3 {
		start := time.Now()
		_ = m.View()
		frame = min(frame, time.Since(start))
	}
	start := time.Now()
	p := m
	for _, ev := range evs {
		p, _ = p.Update(ev)
	}
	keys := time.Since(start)
	want := max(m.rowCount()-m.rowRoom(), 0)
	if p.top != want {
		t.Errorf("256 PgDn: top %d, want %d (the end)", p.top, want)
	}
	t.Logf("256 PgDn over %d rows: %v; one frame: %v", len(m.tr.Rows(m.by)), keys, frame)
	if keys > 10*frame+20*time.Millisecond {
		t.Errorf("256 PgDn took %v, more than 10 frames (%v each): a filter pass per key", keys, frame)
	}
	// The count follows what changes the rows: a refresh, a filter, a
	// grouping.
	q, _ := press(p, "/", "ctrl+u", "worker-0000", "enter", "end")
	if n := q.rowCount(); n != 10 || q.top != 0 {
		t.Errorf("filtered to 10 rows: counted %d, top %d", n, q.top)
	}
	q, _ = press(q, "g", "end") // by program: every worker its own
	if n := q.rowCount(); n != 10 {
		t.Errorf("by program: counted %d, want 10", n)
	}
	q.Add(snapshot(3, time.Second, scrollHost(5)))
	if n := q.rowCount(); n != 5 {
		t.Errorf("after a refresh with 5 processes: counted %d, want 5", n)
	}
}

// TestScrollProperty: random keys, sizes and refreshes (the host
// growing and shrinking): Update and View never panic, top stays within
// the rows, every screen fits and counts the rows off it.
func TestScrollProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 2026))
	keys := []string{"down", "up", "pgdown", "pgup", "home", "end", "down", "pgdown", "end",
		"g", "G", "r", "n", "left", "right", "space", "?", "esc", "/", "enter", "backspace", "ctrl+u", "o", "x", "^", "$", "1"}
	heights := []int{0, 1, 2, 5, 6, 7, 8, 10, 24, 200, -3}
	widths := []int{0, 1, 3, 20, 40, 80, 120}
	for run := range 30 {
		m := testModel(t, 80, 10, 3, Options{Interval: time.Second})
		for step := range 150 {
			what := fmt.Sprintf("run %d step %d", run, step)
			switch r := rng.IntN(20); {
			case r == 0:
				m, _ = m.Update(SizeMsg{Width: widths[rng.IntN(len(widths))], Height: heights[rng.IntN(len(heights))]})
			case r == 1:
				*m.snap = *snapshot(100+step, time.Second, scrollHost(rng.IntN(40)))
				m, _ = m.Update(snapshotMsg{started: time.Now()})
			case r == 2:
				m, _ = m.Update(term.Paste{Text: "\x1b[6~o"})
			default:
				m, _ = press(m, keys[rng.IntN(len(keys))])
			}
			checkScroll(t, what, m)
			if t.Failed() {
				t.Fatalf("%s: stopping", what)
			}
		}
	}
}

// scrollTerm is a fakeTerm of a given size.
type scrollTerm struct {
	*fakeTerm
	w, h int
}

func (r scrollTerm) Size() (int, int, error) { return r.w, r.h, nil }

// waitOutputFrom waits until the output after byte from holds s and returns
// where it ends.
func waitOutputFrom(t *testing.T, f *fakeTerm, from int, s string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		out, _ := f.output()
		if i := strings.Index(out[from:], s); i >= 0 {
			return from + i + len(s)
		}
		if time.Now().After(deadline) {
			t.Fatalf("output after byte %d never held %q:\n%q", from, s, out[from:])
		}
	}
}

// TestRunKeys: scroll keys through the real loop and decoder: a
// sequence split across reads after its ESC [, a read holding 256 of them,
// a paste holding them, modified keys (CSI 5;5~, CSI 1;2H, CSI 1;5F,
// rxvt's CSI 5^, 7@, 5$, 7$): only the plain keys scroll.
func TestRunKeys(t *testing.T) {
	f := scrollTerm{newFakeTerm(), 80, 7} // 2 rows fit, 7 groups: 5 to scroll
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), f, NewModel(&fakeSampler{}, Options{Interval: time.Hour}))
	}()
	at := waitOutputFrom(t, f.fakeTerm, 0, totalLabelLine(0, 5))
	// PgDn in three reads (an ESC that ends a read is the Esc key, by
	// design: a terminal writes a sequence in one piece).
	f.keys <- "\x1b["
	f.keys <- "6"
	f.keys <- "~"
	at = waitOutputFrom(t, f.fakeTerm, at, totalLabelLine(2, 3))
	f.keys <- strings.Repeat("\x1b[B", 256)
	at = waitOutputFrom(t, f.fakeTerm, at, totalLabelLine(5, 0))
	f.keys <- "\x1b[A\x1b[A"
	at = waitOutputFrom(t, f.fakeTerm, at, totalLabelLine(3, 2))
	f.keys <- "\x1b[200~\x1b[5~\x1b[H\x1b[1~\x1b[B\x1b[6~\x1b[201~" // pasted: nothing
	f.keys <- "\x1b[5;5~\x1b[1;2H\x1b[1;5F\x1b[6;2~\x1b[1;2B\x1b[5^\x1b[7@"
	f.keys <- "\x1b[5$"
	f.keys <- "\x1b[8$"
	f.keys <- "\x1b[A" // up: the first change since (↑3 ↓2)
	at = waitOutputFrom(t, f.fakeTerm, at, totalLabelLine(2, 3))
	f.keys <- "\x1bO"
	f.keys <- "H" // Home as SS3, split
	waitOutputFrom(t, f.fakeTerm, at, totalLabelLine(0, 5))
	f.keys <- "q"
	if err := wait(t, done); err != nil || f.restored != 1 {
		t.Errorf("q: %v, restored %d times", err, f.restored)
	}
}

// TestRunHangupAnyMoment: the hang-up channel closed at every moment of
// the loop: during a scan (the terminal given back at once, run
// returning once the scan is over), during a stalled write (given up
// after a second), with the context ended at the same time, paused,
// with the help open, scrolled. Always nil, restored once.
func TestRunHangupAnyMoment(t *testing.T) {
	// During a scan: TestRunEndsDuringScan.
	t.Run("during a stalled write", func(t *testing.T) {
		hangup := make(chan struct{})
		f := newFakeTerm()
		f.stall = make(chan struct{})
		defer close(f.stall)
		done := runAsync(context.Background(), f, NewModel(&fakeSampler{}, Options{Interval: time.Millisecond, Hangup: hangup}))
		waitOutput(t, f, "RAM used")
		f.keys <- "?"
		f.keys <- "?"
		time.Sleep(20 * time.Millisecond)
		close(hangup)
		if err := wait(t, done); err != nil || f.restored != 1 {
			t.Errorf("%v, restored %d times", err, f.restored)
		}
	})
	for _, tc := range []struct {
		name string
		keys []string
	}{
		{"with the context's end", nil},
		{"paused", []string{" "}},
		{"help open", []string{"?"}},
		{"scrolled, prompt open", []string{"\x1b[F", "/", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hangup := make(chan struct{})
			f := scrollTerm{newFakeTerm(), 80, 8}
			done := make(chan error, 1)
			go func() { done <- run(ctx, f, NewModel(&fakeSampler{}, Options{Interval: time.Hour, Hangup: hangup})) }()
			waitOutput(t, f.fakeTerm, "RAM used")
			for _, k := range tc.keys {
				f.keys <- k
			}
			time.Sleep(20 * time.Millisecond)
			if tc.keys == nil {
				cancel()
			}
			close(hangup)
			if err := wait(t, done); err != nil || f.restored != 1 {
				t.Errorf("%v, restored %d times", err, f.restored)
			}
		})
	}
}

// TestRunNohup: started with SIGHUP ignored (nohup, `trap ”
// HUP`), the live view leaves it ignored: a SIGHUP neither ends it nor
// is caught. The loop asked for SIGHUP whatever it found, which takes
// an ignored signal back (os/signal), so a SIGHUP after the first frame
// ended a view started under nohup while one before it was ignored
// (InterruptibleView leaves it so); when the terminal really hangs up,
// its reads and writes fail with EIO, which end the view. Run in a
// process of its own: it ignores SIGHUP.
func TestRunNohup(t *testing.T) {
	if os.Getenv("MEMWHO_TEST_NOHUP_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestRunNohup$", "-test.v")
		cmd.Env = append(os.Environ(), "MEMWHO_TEST_NOHUP_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestRunNohup") {
			t.Fatalf("%v:\n%s", err, out)
		}
		return
	}
	signal.Ignore(syscall.SIGHUP)
	f := newFakeTerm()
	done := runAsync(context.Background(), f, NewModel(&fakeSampler{}, Options{Interval: time.Hour}))
	waitOutput(t, f, "RAM used")
	if !signal.Ignored(syscall.SIGHUP) {
		t.Error("SIGHUP no longer ignored while the view runs")
	}
	syscall.Kill(syscall.Getpid(), syscall.SIGHUP)
	select {
	case err := <-done:
		t.Fatalf("an ignored SIGHUP ended the view: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	f.keys <- "q"
	if err := wait(t, done); err != nil || f.restored != 1 {
		t.Errorf("q: %v, restored %d times", err, f.restored)
	}
	if !signal.Ignored(syscall.SIGHUP) {
		t.Error("SIGHUP no longer ignored after the view")
	}
}

// scrollWriter fails every write after the first with err, after calling
// before (nil: nothing).
type scrollWriter struct {
	n      int
	err    error
	before func()
	out    strings.Builder
}

func (w *scrollWriter) Write(p []byte) (int, error) {
	w.n++
	if w.n > 1 && w.err != nil {
		if w.before != nil {
			w.before()
		}
		return 0, w.err
	}
	return w.out.Write(p)
}

// TestPlainHangup: the hang-up during a scan of `watch --plain`
// whose output is the terminal that hung up. The write after the scan
// failed with EIO and the watch exited 1 with "write output:
// input/output error" (2 runs of 12 at --interval 0.001 on a
// pseudo-terminal whose master closed: cmd/memwho
// TestWatchScrollAndHangup, "--plain on the terminal that hangs up");
// the kernel fails the writes of a hung-up terminal before its SIGHUP is delivered, so the EIO can come
// first. A failed write is now the hang-up when the hang-up came, or
// comes within a second of an EIO; to a file the snapshot under way is
// written, as at SIGTERM.
func TestPlainHangup(t *testing.T) {
	eio := fmt.Errorf("write /dev/pts/3: %w", syscall.EIO)
	for _, tc := range []struct {
		name    string
		err     error
		hangup  string // "during": closed during the second scan; "after": 50 ms after the failed write; "never"
		wantErr bool
		wantN   int // snapshots in the output
	}{
		{"to a file: the snapshot under way kept", nil, "during", false, 2},
		{"to the terminal: EIO after the hang-up", eio, "during", false, 1},
		{"to the terminal: EIO before the hang-up", eio, "after", false, 1},
		{"EIO, no hang-up: a failing disk", eio, "never", true, 1},
		{"another error after the hang-up", syscall.EPIPE, "during", false, 1},
		{"another error, no hang-up", syscall.EPIPE, "never", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hangup := make(chan struct{})
			s := &slowSampler{started: make(chan struct{}, 1), release: make(chan struct{})}
			w := &scrollWriter{err: tc.err}
			if tc.hangup == "after" {
				w.before = func() { time.AfterFunc(50*time.Millisecond, func() { close(hangup) }) }
			}
			done := make(chan error, 1)
			go func() {
				done <- RunPlain(context.Background(), w, s, Options{Interval: time.Millisecond, Hangup: hangup}, nil)
			}()
			<-s.started // the second scan
			if tc.hangup == "during" {
				close(hangup)
			}
			close(s.release)
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("RunPlain did not return")
			}
			if (err != nil) != tc.wantErr {
				t.Errorf("RunPlain: %v, want an error %v", err, tc.wantErr)
			}
			if n := strings.Count(w.out.String(), "total"); n != tc.wantN {
				t.Errorf("%d snapshots written, want %d", n, tc.wantN)
			}
		})
	}
	// No hang-up channel (a caller without one): the error at once.
	w := &scrollWriter{err: eio}
	start := time.Now()
	if err := RunPlain(context.Background(), w, &fakeSampler{}, Options{Interval: time.Millisecond}, nil); err == nil || time.Since(start) > 500*time.Millisecond {
		t.Errorf("EIO without a hang-up channel: %v after %v", err, time.Since(start))
	}
}
