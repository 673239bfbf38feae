//go:build !notui

package watch

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/term"
)

// TUI reports whether this build has the live view (it is left out with
// the notui build tag).
const TUI = true

// groupings is the order the g key steps through.
var groupings = [...]sample.By{sample.ByProgram, sample.ByUser, sample.ByCgroup, sample.ByUnit, sample.BySlice, sample.ByContainer, sample.ByPID}

// sortFor is the sort column a key chooses. A switch, not a map: a map
// is built by a package initialiser at every start of the binary.
func sortFor(k string) (SortKey, bool) {
	switch k {
	case "p":
		return SortPrivate, true
	case "s":
		return SortShared, true
	case "r":
		return SortRAM, true
	case "w":
		return SortSwap, true
	case "c":
		return SortCount, true
	case "n":
		return SortName, true
	case "d":
		return SortChange, true
	case "t":
		return SortRate, true
	case "o":
		return SortConns, true
	}
	return 0, false
}

// Model is the live view: Update changes it by messages and returns
// what the loop that runs it (RunTUI) is to do next; its View is a pure
// function of its fields, so that it can be rendered at a fixed size in
// tests. Scans run one at a time, each filling the model's snapshot
// before its message reaches Update.
type Model struct {
	opt     Options
	sampler Sampler
	snap    *sample.Snapshot
	tr      *Tracker
	st      styles

	width, height int

	by      sample.By
	sortKey SortKey
	desc    bool
	filter  *regexp.Regexp

	// top is how many rows are scrolled past: the first row on screen.
	// Keys keep it within the rows (clampTop); the view clamps it again,
	// since a refresh or a resize may leave fewer.
	top int
	// counted caches rowCount: a read full of scroll keys would run the
	// filter over every row for each of them.
	counted rowCounted

	prompt   bool   // the filter prompt is open
	input    string // text typed at the prompt
	inputErr string // why the typed regex did not compile

	paused   bool
	help     bool
	scanning bool // a scan is running
	ticking  bool // a tick for the next scan is pending
	scanErr  error
	scans    int // snapshots shown
}

// Msg is what Update handles: a term.Key, a term.Paste, a SizeMsg, or
// the loop's own messages (a scan finished, time for the next one).
type Msg any

// SizeMsg gives the terminal's size in cells.
type SizeMsg struct{ Width, Height int }

// Cmd is what Update asks of the loop that runs the model: nothing,
// quit, start a scan (Model.scan) or deliver a tickMsg after a delay.
type Cmd struct {
	kind  cmdKind
	delay time.Duration // for cmdTick
}

type cmdKind uint8

const (
	cmdNone cmdKind = iota
	cmdQuit
	cmdScan
	cmdTick
)

var quit = Cmd{kind: cmdQuit}

// snapshotMsg says a scan finished, having filled Model.snap.
type snapshotMsg struct {
	err error
	// at is when each process's figures were read, nil when at the
	// snapshot's time (see readTimes).
	at []time.Time
	// started is when the scan began; the next one starts an interval
	// later.
	started time.Time
}

// tickMsg says it is time for the next scan.
type tickMsg struct{}

// NewModel returns the live view of what s samples. s may be nil in
// tests, which feed snapshots with Add instead.
func NewModel(s Sampler, opt Options) Model {
	if opt.Interval <= 0 {
		opt.Interval = 2 * time.Second
	}
	tr := NewTracker(opt.Config, groupings[:]...)
	tr.SetContainers(opt.Containers)
	return Model{
		opt:     opt,
		sampler: s,
		snap:    new(sample.Snapshot),
		tr:      tr,
		st:      newStyles(opt.Color),
		width:   80,
		height:  24,
		by:      opt.By,
		sortKey: opt.Sort,
		desc:    opt.Sort != SortName,
		filter:  opt.Filter,
	}
}

// Init starts the first scan.
func (m *Model) Init() Cmd {
	if m.sampler == nil {
		return Cmd{}
	}
	return m.scanCmd()
}

// scanCmd marks a scan under way and asks the loop to run it.
func (m *Model) scanCmd() Cmd {
	m.scanning = true
	return Cmd{kind: cmdScan}
}

// scan is the scan a cmdScan asks for. It fills m.snap, which View does
// not read until its message has reached Update: the loop runs it in a
// goroutine of its own.
func (m *Model) scan() snapshotMsg {
	start := time.Now()
	err := m.sampler.Scan(m.snap)
	var at []time.Time
	if err == nil {
		at = readTimes(m.sampler, m.snap)
	}
	return snapshotMsg{err: err, at: at, started: start}
}

// Add records snap as the next refresh, as a finished scan does. It is
// how tests feed the model synthetic snapshots.
func (m *Model) Add(snap *sample.Snapshot) {
	m.tr.Add(snap)
	m.scans++
}

// Update handles a message.
func (m Model) Update(msg Msg) (Model, Cmd) {
	switch msg := msg.(type) {
	case SizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.clampTop()
	case snapshotMsg:
		m.scanning = false
		if msg.err != nil {
			m.scanErr = msg.err
		} else if !m.paused {
			m.scanErr = nil
			m.tr.AddSampled(m.snap, msg.at)
			m.scans++
			m.clampTop()
			if m.opt.Count > 0 && m.scans >= m.opt.Count {
				return m, quit
			}
		}
		if m.paused {
			return m, Cmd{}
		}
		m.ticking = true
		return m, Cmd{kind: cmdTick, delay: max(time.Until(msg.started.Add(m.opt.Interval)), 0)}
	case tickMsg:
		m.ticking = false
		if m.paused || m.scanning || m.sampler == nil {
			return m, Cmd{}
		}
		return m, m.scanCmd()
	case term.Paste:
		if m.prompt {
			m.input = appendInput(m.input, msg.Text)
			m.inputErr = ""
		}
	case term.Key:
		return m.key(msg)
	}
	return m, Cmd{}
}

func (m Model) key(msg term.Key) (Model, Cmd) {
	k := msg.Name
	if k == "ctrl+c" {
		return m, quit
	}
	if m.prompt {
		switch k {
		case "enter":
			if m.input == "" {
				m.filter, m.prompt, m.inputErr, m.top = nil, false, "", 0
				break
			}
			re, err := regexp.Compile(m.input)
			if err != nil {
				m.inputErr = regexpError(err)
				break
			}
			m.filter, m.prompt, m.inputErr, m.top = re, false, "", 0
		case "esc":
			m.prompt, m.inputErr = false, ""
		case "backspace":
			if r := []rune(m.input); len(r) > 0 {
				m.input = string(r[:len(r)-1])
			}
			m.inputErr = ""
		case "ctrl+u":
			m.input, m.inputErr = "", ""
		default:
			if msg.Text != "" {
				m.input = appendInput(m.input, msg.Text)
				m.inputErr = ""
			}
		}
		return m, Cmd{}
	}
	if m.help {
		switch k {
		case "q":
			return m, quit
		default:
			m.help = false
		}
		return m, Cmd{}
	}
	if sk, ok := sortFor(k); ok {
		m.setSort(sk)
		return m, Cmd{}
	}
	switch k {
	case "q":
		return m, quit
	case "up", "down", "pgup", "pgdown", "home", "end":
		m.scroll(k)
	case "left", "right":
		order := m.sortOrder()
		step := 1
		if k == "left" {
			step = len(order) - 1
		}
		i := 0
		for j, sk := range order {
			if sk == m.sortKey {
				i = j
			}
		}
		m.sortKey = order[(i+step)%len(order)]
		m.desc = m.sortKey != SortName
		m.top = 0
	case "g", "G":
		step := 1
		if k == "G" {
			step = len(groupings) - 1
		}
		for i, by := range groupings {
			if by == m.by {
				m.by = groupings[(i+step)%len(groupings)]
				break
			}
		}
		m.top = 0
	case "/":
		m.prompt, m.inputErr = true, ""
		m.input = ""
		if m.filter != nil {
			m.input = m.filter.String()
		}
	case "esc":
		m.filter, m.top = nil, 0
	case "space":
		m.paused = !m.paused
		if !m.paused && !m.scanning && !m.ticking && m.sampler != nil {
			return m, m.scanCmd()
		}
	case "?":
		m.help = true
	}
	return m, Cmd{}
}

// maxInput is the most the filter prompt holds, in bytes. Each paste is
// bounded by the decoder, but pastes and keys add up: without a bound a
// terminal (or whatever writes to its input) could grow the prompt, and
// the time every frame spends on it, for as long as it likes.
const maxInput = term.MaxPaste

// appendInput returns input with text added, as much of it as fits in
// maxInput bytes, cut before a character the limit splits.
func appendInput(input, text string) string {
	if room := maxInput - len(input); len(text) > room {
		text = text[:max(room, 0)]
		for i := len(text) - 1; i >= 0 && i >= len(text)-utf8.UTFMax; i-- {
			if utf8.RuneStart(text[i]) {
				if !utf8.FullRuneInString(text[i:]) {
					text = text[:i]
				}
				break
			}
		}
	}
	return input + text
}

// sortOrder is the order the left and right keys step through the
// sortable columns: as they stand on the screen.
func (m *Model) sortOrder() []SortKey {
	if m.opt.Conns {
		return columnSortOrder[:]
	}
	return slices.DeleteFunc(slices.Clone(columnSortOrder[:]), func(k SortKey) bool { return k == SortConns })
}

// setSort sorts by sk, largest first (names A to Z); choosing the
// current column again flips the order. Either way the view goes back to
// the first row, the one the new order puts first.
func (m *Model) setSort(sk SortKey) {
	m.top = 0
	if sk == m.sortKey {
		m.desc = !m.desc
		return
	}
	m.sortKey, m.desc = sk, sk != SortName
}

// rowRoom is how many rows of groups fit the terminal's height.
func (m *Model) rowRoom() int { return max(m.height-headerLines-1, 0) }

// rowCount is how many rows the view holds now: the groups of the
// current grouping that pass the filter.
func (m *Model) rowCount() int {
	rows := m.tr.Rows(m.by)
	if m.filter == nil {
		return len(rows)
	}
	c := &m.counted
	if c.ok && c.n == m.tr.n && c.by == m.by && c.filter == m.filter {
		return c.count
	}
	n := 0
	for i := range rows {
		if m.filter.MatchString(rows[i].Key) {
			n++
		}
	}
	*c = rowCounted{ok: true, n: m.tr.n, by: m.by, filter: m.filter, count: n}
	return n
}

// rowCounted is rowCount's answer for the rows of the tracker's n-th
// sample in grouping by through filter.
type rowCounted struct {
	ok     bool
	n      uint64
	by     sample.By
	filter *regexp.Regexp
	count  int
}

// clampTop keeps the rows scrolled past within what there is to scroll:
// the last row never rises above the bottom of the screen.
func (m *Model) clampTop() {
	m.top = min(m.top, max(m.rowCount()-m.rowRoom(), 0))
	m.top = max(m.top, 0)
}

// scroll moves the rows on screen for a key: a row, a page (the rows
// that fit), or to the first or the last page.
func (m *Model) scroll(k string) {
	page := max(m.rowRoom(), 1)
	switch k {
	case "up":
		m.top--
	case "down":
		m.top++
	case "pgup":
		m.top -= page
	case "pgdown":
		m.top += page
	case "home":
		m.top = 0
	case "end":
		m.top = m.rowCount()
	}
	m.clampTop()
}

// regexpError is a one-line description of a regexp compile error.
func regexpError(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s in %q", se.Code, se.Expr)
	}
	return err.Error()
}
