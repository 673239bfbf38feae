//go:build !notui

package watch

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/term"
)

// key returns the key press the terminal decoder delivers for a key
// name: "space", "enter", "esc", "backspace", "left", "right", "ctrl+c",
// "ctrl+u" or one character.
func key(name string) term.Key {
	if isKeyName(name) {
		k := term.Key{Name: name}
		if name == "space" {
			k.Text = " "
		}
		return k
	}
	if len([]rune(name)) != 1 {
		panic("key: unknown key " + name)
	}
	return term.Key{Name: name, Text: name}
}

func TestKeyNames(t *testing.T) {
	// The model matches keys by name; check that the keys built here
	// are named as the decoder names the bytes a terminal sends.
	for _, tc := range []struct{ name, in string }{
		{"space", " "}, {"enter", "\r"}, {"esc", "\x1b"}, {"backspace", "\x7f"},
		{"left", "\x1b[D"}, {"right", "\x1b[C"}, {"ctrl+c", "\x03"}, {"ctrl+u", "\x15"},
		{"up", "\x1b[A"}, {"down", "\x1b[B"}, {"pgup", "\x1b[5~"}, {"pgdown", "\x1b[6~"}, {"home", "\x1b[H"}, {"end", "\x1b[F"},
		{"q", "q"}, {"/", "/"}, {"?", "?"}, {"G", "G"},
	} {
		var d term.Decoder
		evs := d.Feed(nil, []byte(tc.in))
		if len(evs) != 1 || evs[0] != term.Event(key(tc.name)) {
			t.Errorf("%q decodes to %#v, want %#v", tc.in, evs, key(tc.name))
		}
	}
}

// press sends keys to m in order (names as for key; a longer string is
// typed one character at a time) and returns the model and the last
// command.
func press(m Model, keys ...string) (Model, Cmd) {
	var cmd Cmd
	for _, k := range keys {
		if len([]rune(k)) > 1 && !isKeyName(k) {
			for _, r := range k {
				m, cmd = m.Update(key(string(r)))
			}
			continue
		}
		m, cmd = m.Update(key(k))
	}
	return m, cmd
}

func isKeyName(s string) bool {
	switch s {
	case "space", "enter", "esc", "backspace", "left", "right", "up", "down", "pgup", "pgdown", "home", "end", "ctrl+c", "ctrl+u":
		return true
	}
	return false
}

func isQuit(cmd Cmd) bool { return cmd.kind == cmdQuit }

// runCmd carries out cmd as RunTUI's loop does, at once: the message a
// scan or a tick delivers (the tick without waiting), nil for none.
func runCmd(m *Model, cmd Cmd) Msg {
	switch cmd.kind {
	case cmdScan:
		return m.scan()
	case cmdTick:
		return tickMsg{}
	}
	return nil
}

// testModel is a model of size w×h fed n synthetic snapshots of
// testProcs, one a second.
func testModel(t testing.TB, w, h, n int, opt Options) Model {
	t.Helper()
	if opt.Interval == 0 {
		opt.Interval = time.Second
	}
	m := NewModel(nil, opt)
	m, _ = m.Update(SizeMsg{Width: w, Height: h})
	for i := range n {
		m.Add(snapshot(i, time.Second, testProcs))
	}
	return m
}

// visibleKeys returns the group names on the screen, top to bottom.
func visibleKeys(m Model) []string {
	rows := append([]Row(nil), m.tr.Rows(m.by)...)
	rows = FilterRows(rows, m.filter)
	SortRows(rows, m.sortKey, m.desc)
	var ks []string
	for _, r := range rows {
		ks = append(ks, r.Key)
	}
	return ks
}

func TestSortKeys(t *testing.T) {
	m := testModel(t, 120, 40, 20, Options{})
	if m.sortKey != SortRAM || !m.desc {
		t.Fatalf("initial sort %v desc %v, want ram, largest first", m.sortKey, m.desc)
	}
	for _, tc := range []struct {
		keys []string
		sort SortKey
		desc bool
	}{
		{[]string{"w"}, SortSwap, true},
		{[]string{"w", "w"}, SortSwap, false},
		{[]string{"n"}, SortName, false},
		{[]string{"n", "n"}, SortName, true},
		{[]string{"p"}, SortPrivate, true},
		{[]string{"s"}, SortShared, true},
		{[]string{"c"}, SortCount, true},
		{[]string{"d"}, SortChange, true},
		{[]string{"t"}, SortRate, true},
		{[]string{"r"}, SortRAM, false}, // already ram: reversed
		{[]string{"right"}, SortSwap, true},
		{[]string{"left"}, SortShared, true},
		{[]string{"t", "right"}, SortName, false},
		{[]string{"n", "right"}, SortPrivate, true},
		{[]string{"c", "right"}, SortChange, true}, // no Conns column without --conns
		{[]string{"o"}, SortConns, true},
	} {
		t.Run(strings.Join(tc.keys, ","), func(t *testing.T) {
			got, _ := press(m, tc.keys...)
			if got.sortKey != tc.sort || got.desc != tc.desc {
				t.Errorf("sort %v desc %v, want %v desc %v", got.sortKey, got.desc, tc.sort, tc.desc)
			}
		})
	}
	withConns := testModel(t, 120, 40, 20, Options{Conns: true})
	if got, _ := press(withConns, "c", "right"); got.sortKey != SortConns {
		t.Errorf("with --conns, right from count goes to %v, want conns", got.sortKey)
	}
	// Sorting by rate puts the leak first.
	byRate, _ := press(m, "t")
	if ks := visibleKeys(byRate); ks[0] != "leaky" {
		t.Errorf("by rate, first row %q, want leaky", ks[0])
	}
}

func TestGroupingKey(t *testing.T) {
	m := testModel(t, 120, 40, 5, Options{})
	want := []sample.By{sample.ByUser, sample.ByCgroup, sample.ByUnit, sample.BySlice, sample.ByContainer, sample.ByPID, sample.ByProgram}
	for i, by := range want {
		m, _ = press(m, "g")
		if m.by != by {
			t.Fatalf("after %d presses of g: by %v, want %v", i+1, m.by, by)
		}
		if len(visibleKeys(m)) == 0 {
			t.Errorf("by %v: no rows", by)
		}
	}
	m, _ = press(m, "G")
	if m.by != sample.ByPID {
		t.Errorf("G from program: by %v, want pid", m.by)
	}
	// History survives a switch: every grouping was tracked all along.
	if r := rowOf(t, m.tr.Rows(sample.ByUser), "nobody"); len(r.History) != 5 {
		t.Errorf("user nobody has %d samples after switching, want 5", len(r.History))
	}
}

func TestFilterKeys(t *testing.T) {
	m := testModel(t, 120, 40, 5, Options{})
	all := len(visibleKeys(m))

	m, _ = press(m, "/", "^post", "enter")
	if m.prompt || m.filter == nil || m.filter.String() != "^post" {
		t.Fatalf("after /^post⏎: prompt %v filter %v", m.prompt, m.filter)
	}
	if ks := visibleKeys(m); len(ks) != 1 || ks[0] != "postgres" {
		t.Errorf("filtered rows %q, want [postgres]", ks)
	}

	// "q" at the prompt is text, not quit; backspace edits; a bad regex
	// keeps the prompt open with an error and the old filter in place.
	m, cmd := press(m, "/", "backspace", "backspace", "backspace", "backspace", "backspace", "(q", "enter")
	if isQuit(cmd) {
		t.Fatal("q typed at the prompt quit")
	}
	if !m.prompt || m.input != "(q" || m.inputErr == "" {
		t.Fatalf("bad regex: prompt %v input %q error %q", m.prompt, m.input, m.inputErr)
	}
	if m.filter.String() != "^post" {
		t.Errorf("a bad regex replaced the filter with %v", m.filter)
	}
	m, _ = press(m, "esc")
	if m.prompt || m.inputErr != "" || m.filter.String() != "^post" {
		t.Errorf("esc: prompt %v error %q filter %v; want closed, old filter kept", m.prompt, m.inputErr, m.filter)
	}

	// Esc outside the prompt clears the filter; an empty filter too.
	cleared, _ := press(m, "esc")
	if cleared.filter != nil || len(visibleKeys(cleared)) != all {
		t.Errorf("esc: filter %v, %d rows; want none and %d", cleared.filter, len(visibleKeys(cleared)), all)
	}
	emptied, _ := press(m, "/", "ctrl+u", "enter")
	if emptied.filter != nil || emptied.prompt {
		t.Errorf("empty filter: filter %v prompt %v", emptied.filter, emptied.prompt)
	}

	// Pasted text goes into the prompt.
	if got, _ := m.Update(term.Paste{Text: "fire"}); got.input != m.input || got.filter != m.filter {
		t.Errorf("paste outside the prompt changed input to %q, filter to %v", got.input, got.filter)
	}
	p, _ := press(m, "/", "ctrl+u")
	p, _ = p.Update(term.Paste{Text: "fire"})
	p, _ = press(p, "enter")
	if ks := visibleKeys(p); len(ks) != 1 || ks[0] != "firefox" {
		t.Errorf("pasted filter rows %q, want [firefox]", ks)
	}
}

func TestHelpPauseQuit(t *testing.T) {
	m := testModel(t, 80, 24, 3, Options{})
	h, _ := press(m, "?")
	if !h.help {
		t.Fatal("? did not open help")
	}
	if h, _ = press(h, "x"); h.help {
		t.Error("a key did not close help")
	}
	if _, cmd := press(m, "?", "q"); !isQuit(cmd) {
		t.Error("q in help did not quit")
	}
	p, _ := press(m, "space")
	if !p.paused {
		t.Fatal("space did not pause")
	}
	if p, _ = press(p, "space"); p.paused {
		t.Error("space did not resume")
	}
	for _, k := range []string{"q", "ctrl+c"} {
		if _, cmd := press(m, k); !isQuit(cmd) {
			t.Errorf("%s did not quit", k)
		}
	}
	if _, cmd := press(m, "/", "ctrl+c"); !isQuit(cmd) {
		t.Error("ctrl+c at the prompt did not quit")
	}
}

// fakeSampler fills snapshots of testProcs, one a second, and counts its
// scans.
type fakeSampler struct {
	n   int
	err error
}

func (f *fakeSampler) Scan(snap *sample.Snapshot) error {
	if f.err != nil {
		return f.err
	}
	*snap = *snapshot(f.n, time.Second, testProcs)
	f.n++
	return nil
}

func TestScanLoop(t *testing.T) {
	f := &fakeSampler{}
	m := NewModel(f, Options{Interval: time.Millisecond, Count: 3})
	cmd := m.Init()
	if !m.scanning || cmd.kind != cmdScan {
		t.Fatal("Init started no scan")
	}
	// Run the commands by hand: scan, tick, scan, ... until quit.
	for steps := 0; ; steps++ {
		if steps > 20 {
			t.Fatal("no quit after 20 steps")
		}
		msg := runCmd(&m, cmd)
		m, cmd = m.Update(msg)
		if isQuit(cmd) {
			break
		}
		if cmd.kind == cmdNone {
			t.Fatalf("step %d (%T): no next command", steps, msg)
		}
	}
	if m.scans != 3 {
		t.Errorf("quit after %d refreshes, want --count 3", m.scans)
	}

	// A paused view drops the scan that was under way and scans no more
	// until resumed, when it scans at once.
	f = &fakeSampler{}
	m = NewModel(f, Options{Interval: time.Millisecond})
	cmd = m.Init()
	m, _ = press(m, "space")
	m, next := m.Update(runCmd(&m, cmd))
	if m.scans != 0 || next.kind != cmdNone {
		t.Errorf("paused: %d refreshes and command %v, want 0 and none", m.scans, next)
	}
	m, cmd = press(m, "space")
	if cmd.kind != cmdScan || !m.scanning {
		t.Fatal("resume did not scan")
	}
	// Space again while the scan runs pauses; a third resumes without
	// a second scan on the same snapshot.
	if _, c := press(m, "space", "space"); c.kind == cmdScan {
		t.Error("resume during a scan started a second one")
	}
	m, _ = m.Update(runCmd(&m, cmd))
	if m.scans != 1 {
		t.Errorf("after resume: %d refreshes, want 1", m.scans)
	}

	// A failing scan is shown and retried; it does not stop the view.
	f.err = errors.New("open /proc: no such file or directory")
	m, next = m.Update(runCmd(&m, m.scanCmd()))
	if m.scanErr == nil || next.kind != cmdTick {
		t.Errorf("scan error: %v, next %v; want the error kept and a retry", m.scanErr, next)
	}
	if !strings.Contains(m.screen(), "scan failed: open /proc") {
		t.Error("scan error not on screen")
	}
}

// Pastes and keys add up at the filter prompt. Each paste is
// bounded by the decoder; the prompt now is too, cut at a character.
func TestPromptBounded(t *testing.T) {
	m := testModel(t, 80, 24, 3, Options{})
	m, _ = press(m, "/")
	chunk := strings.Repeat("é", term.MaxPaste/2-1) + "x" // 4095 bytes: the cut falls in a character
	for range 100 {
		m, _ = m.Update(term.Paste{Text: chunk})
		m, _ = m.Update(key("数"))
	}
	if len(m.input) > maxInput || len(m.input) < maxInput-utf8.UTFMax || !utf8.ValidString(m.input) {
		t.Errorf("prompt of %d bytes (valid UTF-8: %v), want at most %d, cut at a character", len(m.input), utf8.ValidString(m.input), maxInput)
	}
	checkScreen(t, m.View(), 80, 24, false)
	// The limit does not stop editing: backspace, then typing, works.
	m, _ = press(m, "backspace", "backspace", "backspace", "backspace", "x")
	if !strings.HasSuffix(m.input, "x") {
		t.Errorf("typing after backspace at the limit: input ends %q", m.input[len(m.input)-8:])
	}
	// Whatever the prompt holds compiles or is refused at once: NUL,
	// invalid UTF-8, escapes; deep nesting and large repeats (RE2
	// refuses programs over its size limit).
	for _, in := range []string{
		"a\x00b\xff\x1b[2J\x9b",
		strings.Repeat("(", 2000) + strings.Repeat(")", 2000),
		strings.Repeat("(?:a{1000}){1000}", 200),
		strings.Repeat(`[\x{0}-\x{10FFFF}]{1000}`, 150),
		strings.Repeat(`\pL*`, 1000),
	} {
		p, _ := press(m, "ctrl+u")
		p, _ = p.Update(term.Paste{Text: in})
		p, _ = press(p, "enter")
		t.Logf("%d bytes: filter %v, error %q", len(in), p.filter != nil, p.inputErr)
		checkScreen(t, p.View(), 80, 24, false)
	}
}

func TestScrollKeys(t *testing.T) {
	// 80×10: five rows fit (four lines above them, the total below); the
	// synthetic host has eight groups, so three are out of sight.
	m := testModel(t, 80, 10, 20, Options{})
	n := len(visibleKeys(m))
	room := 10 - headerLines - 1
	last := n - room
	if last <= 0 {
		t.Fatalf("%d groups fit %d rows: nothing to scroll", n, room)
	}
	totalLine := func(m Model) string {
		lines := strings.Split(m.View(), "\n")
		return lines[len(lines)-1]
	}
	for _, tc := range []struct {
		keys  []string
		top   int
		total string // how the total line ends
	}{
		{nil, 0, fmt.Sprintf("total (%d hidden)", last)},
		{[]string{"up"}, 0, "hidden)"},
		{[]string{"home"}, 0, "hidden)"},
		{[]string{"down"}, 1, fmt.Sprintf("(↑1 ↓%d)", last-1)},
		{[]string{"down", "down", "down", "down", "down", "down", "down", "down", "down", "down"}, last, fmt.Sprintf("total (↑%d)", last)},
		{[]string{"pgdown"}, min(room, last), ""},
		{[]string{"pgdown", "pgdown", "pgdown"}, last, ""},
		{[]string{"end"}, last, fmt.Sprintf("total (↑%d)", last)},
		{[]string{"end", "up"}, last - 1, "(↑2 ↓1)"},
		{[]string{"end", "pgup"}, 0, "hidden)"},
		{[]string{"end", "home"}, 0, "hidden)"},
		// Whatever reorders or refilters the rows starts again at the
		// first: a sort key, the same key (reversed), ←/→, g/G, a filter
		// applied or cleared.
		{[]string{"end", "r"}, 0, ""},
		{[]string{"end", "s"}, 0, ""},
		{[]string{"end", "right"}, 0, ""},
		{[]string{"end", "g"}, 0, ""},
		{[]string{"end", "G"}, 0, ""},
		{[]string{"end", "/", "o", "enter"}, 0, ""},
		{[]string{"end", "esc"}, 0, ""},
		// Keys typed at the prompt are text or prompt editing, not
		// scrolling; a key that closes the help does nothing else.
		{[]string{"/", "down", "end", "esc"}, 0, ""},
		{[]string{"?", "end"}, 0, ""},
		// Paused, the screen still scrolls.
		{[]string{"space", "down"}, 1, ""},
	} {
		got, _ := press(m, tc.keys...)
		if got.top != tc.top {
			t.Errorf("%q: %d rows scrolled past, want %d", tc.keys, got.top, tc.top)
		}
		if l := totalLine(got); !strings.HasSuffix(l, tc.total) {
			t.Errorf("%q: total line %q, want it to end %q", tc.keys, l, tc.total)
		}
		checkScreen(t, got.View(), 80, 10, false)
	}

	// A taller terminal shows every row: the scroll goes back to the top.
	scrolled, _ := press(m, "end")
	tall, _ := scrolled.Update(SizeMsg{Width: 80, Height: 40})
	if tall.top != 0 || strings.Contains(totalLine(tall), "↑") {
		t.Errorf("resized to 40 lines: %d rows scrolled past, total %q", tall.top, totalLine(tall))
	}

	// Rows that vanish under a scrolled view (here: a filter set while the
	// model was scrolled, as a refresh with fewer groups does) leave the
	// last page on screen, never an empty one.
	few := scrolled
	few.filter = regexp.MustCompile("^(postgres|firefox|leaky)$")
	if screen := few.View(); !strings.Contains(screen, "postgres") || !strings.Contains(screen, "firefox") || strings.Contains(screen, "↑") {
		t.Errorf("three rows left under a view scrolled %d: \n%s", few.top, screen)
	}
}

func TestScrollClampedByRefresh(t *testing.T) {
	// A scan that finishes clamps the scroll to the rows it left.
	m := testModel(t, 80, 10, 20, Options{})
	m, _ = press(m, "end")
	if m.top == 0 {
		t.Fatal("end did not scroll")
	}
	m.filter = regexp.MustCompile("^postgres$")
	m, _ = m.Update(snapshotMsg{started: time.Now()})
	if m.top != 0 {
		t.Errorf("after a refresh with one row: %d rows scrolled past, want 0", m.top)
	}
}
