//go:build !notui

package watch

import (
	"strconv"
	"strings"
	"time"

	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/term"
)

// The screen is, from the top: a title line (time, interval, grouping),
// a totals line (processes against MemTotal and SwapTotal), a status line
// (key hints, the filter, its prompt or an error), the column titles, one
// line per group as far as the height allows, and the total. No line is
// ever wider than the terminal: columns are dropped by priority when it
// is narrow, the name is cut to what is left, and every line is cut to
// the width as a last resort.

// colID names a column of the table, in display order.
type colID uint8

const (
	colPrivate colID = iota
	colShared
	colRAM
	colSwap
	colProcs
	colConns
	colChange
	colRate
	colTrend
	colLeak
	colName
	numCols
)

// colDef describes a column: its title, width in cells, and the sort key
// its title is marked with.
type colDef struct {
	title string
	width int
	sort  SortKey
	right bool
}

var colDefs = [numCols]colDef{
	colPrivate: {"Private", 10, SortPrivate, true},
	colShared:  {"Shared", 10, SortShared, true},
	colRAM:     {"RAM used", 11, SortRAM, true},
	colSwap:    {"Swap", 11, SortSwap, true},
	colProcs:   {"Procs", 6, SortCount, true},
	colConns:   {"Conns", 6, SortConns, true},
	colChange:  {"Change", 11, SortChange, true},
	colRate:    {"MiB/min", 8, SortRate, true},
	colTrend:   {"Trend", SparkWidth, numSortKeys, false},
	colLeak:    {"Leak", 4, numSortKeys, false},
	colName:    {"", 0, SortName, false},
}

// optionalCols are added, in this order, while the name keeps
// minNameWidth cells; RAM and the name are always shown, and Change and
// MiB/min while the name keeps narrowNameWidth (layout).
var optionalCols = [...]colID{colSwap, colConns, colLeak, colTrend, colProcs, colPrivate, colShared}

// columnSortOrder is the order the left and right keys step through.
var columnSortOrder = [...]SortKey{SortPrivate, SortShared, SortRAM, SortSwap, SortCount, SortConns, SortChange, SortRate, SortName}

const minNameWidth = 16

// narrowNameWidth is the least the name keeps on a narrow terminal
// before Change and MiB/min give way: below it the name, cut at the
// screen's edge, no longer told rows apart (a by-pid row lost its PID).
const narrowNameWidth = 12

// headerLines is the number of lines above the rows (title, totals,
// status, column titles); one more, the total, is below them.
const headerLines = 4

// layout chooses the columns for a width: shown[c] says whether column c
// is on screen, and nameWidth is what the name column gets.
func layout(width int, by sample.By, conns bool, sortKey SortKey) (shown [numCols]bool, nameWidth int) {
	used := 0
	add := func(c colID) { shown[c] = true; used += colDefs[c].width + 1 }
	add(colRAM)
	// Change and MiB/min, the column sorted by first, while the name
	// keeps narrowNameWidth cells.
	pair := [2]colID{colChange, colRate}
	if sortKey == SortRate {
		pair = [2]colID{colRate, colChange}
	}
	for _, c := range pair {
		if used+colDefs[c].width+1+narrowNameWidth <= width {
			add(c)
		}
	}
	for _, c := range optionalCols {
		if c == colProcs && by == sample.ByPID {
			continue // one process per group: the count says nothing
		}
		if c == colConns && !conns {
			continue
		}
		if used+colDefs[c].width+1+minNameWidth <= width {
			add(c)
		}
	}
	shown[colName] = true
	return shown, max(width-used, 1)
}

// styles holds the emphasis of the screen, each the SGR sequence that
// starts it (term.Reset ends it); with colour off every style is the
// identity.
type styles struct {
	on                                      bool
	title, header, sorted, leak, warn, hint string
}

func newStyles(color bool) styles {
	return styles{
		on:     color,
		title:  term.Bold,
		header: term.Reverse,
		sorted: "\x1b[1;7m",  // bold, reverse
		leak:   "\x1b[1;31m", // bold, red
		warn:   "\x1b[1;33m", // bold, yellow
		hint:   term.Faint,
	}
}

func (s *styles) render(st, text string) string {
	if !s.on || text == "" {
		return text
	}
	return st + text + term.Reset
}

// View renders the screen, one string of lines joined by "\n". It reads
// the model and nothing else.
func (m Model) View() string { return m.screen() }

// screen is the content of View.
func (m Model) screen() string {
	w, h := max(m.width, 1), max(m.height, 1)
	var lines []string
	lines = append(lines, m.titleLine())
	if m.scans == 0 {
		lines = append(lines, "reading /proc…")
		return m.finish(lines, w, h)
	}
	lines = append(lines, m.totalsLine())
	if m.help {
		lines = append(lines, m.helpLines()...)
		return m.finish(lines, w, h)
	}
	all := m.tr.Rows(m.by)
	rows := append([]Row(nil), all...)
	rows = FilterRows(rows, m.filter)
	SortRows(rows, m.sortKey, m.desc)
	lines = append(lines, m.statusLine(len(rows), len(all)))

	shown, nameW := layout(w, m.by, m.opt.Conns, m.sortKey)
	lines = append(lines, m.columnTitles(shown, nameW))
	room := m.rowRoom()
	// The rows scrolled past (m.top) and those below the screen. A
	// refresh or a resize since the last key may leave fewer rows than
	// the model scrolled past: the last page is shown then.
	above := max(min(m.top, len(rows)-room), 0)
	below := max(len(rows)-above-room, 0)
	var buf []byte
	for i := above; i < len(rows)-below; i++ {
		buf = m.row(buf[:0], &rows[i], shown, nameW, false, 0, 0)
		lines = append(lines, string(buf))
	}
	total := Row{Group: sample.Total(groupsOf(rows))}
	buf = m.row(buf[:0], &total, shown, nameW, true, above, below)
	lines = append(lines, string(buf))
	return m.finish(lines, w, h)
}

// finish keeps the first h lines, cuts each to w cells and joins them.
func (m Model) finish(lines []string, w, h int) string {
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		if term.Width(l) > w {
			lines[i] = term.Truncate(l, w, "")
		}
	}
	return strings.Join(lines, "\n")
}

func groupsOf(rows []Row) []sample.Group {
	gs := make([]sample.Group, len(rows))
	for i := range rows {
		gs[i] = rows[i].Group
	}
	return gs
}

func (m Model) titleLine() string {
	parts := make([]string, 0, 6)
	parts = append(parts, m.st.render(m.st.title, "memwho watch"))
	if m.paused {
		// Up front, where a narrow terminal cannot cut it off.
		parts = append(parts, m.st.render(m.st.warn, "PAUSED"))
	}
	info := m.tr.Info()
	if m.scans > 0 {
		parts = append(parts, info.Time.Format(time.TimeOnly))
	}
	parts = append(parts, "every "+m.opt.Interval.String(), "by "+m.by.String())
	if m.opt.Source != "" {
		parts = append(parts, m.opt.Source)
	}
	if m.scans > 0 {
		p := strconv.Itoa(info.Procs) + " processes"
		if n := info.Total.Estimated; n > 0 {
			p += " " + m.st.render(m.st.warn, "("+strconv.Itoa(n)+plural(n, " estimate", " estimates")+" ~)")
		}
		if n := info.Broken; n > 0 {
			// Left out (unparsable, or memwho short of descriptors):
			// the totals miss their memory.
			p += " " + m.st.render(m.st.warn, "("+strconv.Itoa(n)+" skipped)")
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "  ")
}

func (m Model) totalsLine() string {
	info := m.tr.Info()
	var b []byte
	b = append(b, "RAM "...)
	b = report.HumanBytes(b, info.Total.RAM)
	if info.MeminfoOK {
		b = append(b, " of "...)
		b = report.HumanBytes(b, info.Meminfo.MemTotal)
	}
	b = append(b, "  Swap "...)
	b = report.HumanBytes(b, info.Total.Swap)
	switch {
	case info.MeminfoOK && info.Meminfo.SwapTotal == 0:
		b = append(b, " (no swap)"...)
	case info.MeminfoOK:
		b = append(b, " of "...)
		b = report.HumanBytes(b, info.Meminfo.SwapTotal)
	}
	s := string(b)
	if n := info.HeldBack; n > 0 {
		s += "  " + strconv.Itoa(n) + plural(n, " figure", " figures") + " held back"
	}
	leaks := 0
	for _, r := range m.tr.Rows(m.by) {
		if r.Leak {
			leaks++
		}
	}
	if leaks > 0 {
		s += "  " + m.st.render(m.st.leak, strconv.Itoa(leaks)+plural(leaks, " leak suspect", " leak suspects"))
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (m Model) statusLine(shown, all int) string {
	switch {
	case m.prompt:
		b := append([]byte("filter: "), report.Sanitize(nil, m.input)...)
		s := string(b) + "█"
		if m.inputErr != "" {
			return s + "  " + m.st.render(m.st.warn, "bad regex: "+string(report.Sanitize(nil, m.inputErr)))
		}
		return s + "  " + m.st.render(m.st.hint, "Enter applies, Esc cancels")
	case m.scanErr != nil:
		return m.st.render(m.st.warn, "scan failed: "+string(report.Sanitize(nil, m.scanErr.Error())))
	case m.filter != nil:
		b := append([]byte("filter /"), report.Sanitize(nil, m.filter.String())...)
		b = append(b, "/  "...)
		b = strconv.AppendInt(b, int64(shown), 10)
		b = append(b, " of "...)
		b = strconv.AppendInt(b, int64(all), 10)
		b = append(b, " groups"...)
		return string(b) + "  " + m.st.render(m.st.hint, "/ edits, Esc clears")
	}
	if m.paused {
		return m.st.render(m.st.hint, "paused: space resumes  ? help  q quit")
	}
	return m.st.render(m.st.hint, "p s r w c n d t sort  ←→ column  g group  / filter  space pause  ? help  q quit")
}

func (m Model) columnTitles(shown [numCols]bool, nameW int) string {
	var sb strings.Builder
	for c := range numCols {
		if !shown[c] {
			continue
		}
		d := colDefs[c]
		title, width := d.title, d.width
		if c == colName {
			title, width = report.KeyHeader(m.by), nameW
		}
		st := m.st.header
		if d.sort == m.sortKey {
			st = m.st.sorted
			if m.desc {
				title += "▼"
			} else {
				title += "▲"
			}
		}
		var cell string
		if d.right {
			cell = padLeft(title, width)
		} else {
			cell = padRight(title, width)
		}
		if c < colName {
			cell += " "
		}
		sb.WriteString(m.st.render(st, cell))
	}
	return sb.String()
}

// row renders one group (or, with isTotal, the total of the filtered
// groups with above of them scrolled past and below of them under the
// screen).
func (m Model) row(buf []byte, r *Row, shown [numCols]bool, nameW int, isTotal bool, above, below int) []byte {
	ramMark, swapMark := marks(&r.Group)
	for c := range numCols {
		if !shown[c] {
			continue
		}
		width := colDefs[c].width
		var tmp []byte
		switch c {
		case colPrivate:
			if !isTotal {
				tmp = report.HumanBytes(tmp, r.Private)
			}
		case colShared:
			if !isTotal {
				tmp = report.HumanBytes(tmp, r.Shared)
			}
		case colRAM:
			tmp = appendMarked(tmp, ramMark, r.RAM)
		case colSwap:
			tmp = appendMarked(tmp, swapMark, r.Swap)
		case colProcs:
			tmp = strconv.AppendInt(tmp, int64(r.Count), 10)
		case colConns:
			if m.tr.Info().ConnsOK {
				tmp = strconv.AppendUint(tmp, r.Conns, 10)
			} else {
				tmp = append(tmp, '?')
			}
		case colChange:
			if !isTotal {
				tmp = appendChange(tmp, r.Change)
			}
		case colRate:
			switch {
			case isTotal:
			case r.RateOK:
				tmp = appendRate(tmp, r.RateMiBPerMin())
			case r.Age > 0:
				// Every figure in the window was held back by the
				// sampler's cost budget: no rate, but how old.
				tmp = appendAge(append(tmp, "held "...), r.Age)
			}
		case colTrend:
			if !isTotal {
				tmp = AppendSpark(tmp, r.History, SparkWidth)
			}
		case colLeak:
			if r.Leak {
				buf = append(buf, m.st.render(m.st.leak, "LEAK")...)
				buf = append(buf, ' ')
				continue
			}
		case colName:
			var name string
			if isTotal {
				name = "total"
				// Short, for the name column of a narrow terminal:
				// "(3 hidden)" below an unscrolled screen, "(↑2 ↓1)"
				// once scrolled.
				switch {
				case above > 0 && below > 0:
					name += " (↑" + strconv.Itoa(above) + " ↓" + strconv.Itoa(below) + ")"
				case above > 0:
					name += " (↑" + strconv.Itoa(above) + ")"
				case below > 0:
					name += " (" + strconv.Itoa(below) + " hidden)"
				}
				// On a narrow terminal the name column is cut at the
				// screen's edge (layout keeps it minNameWidth wide),
				// and the counts with it. The columns left of the name
				// are blank on this line (no change, rate or trend for
				// a total): the label takes their room, one space kept,
				// before it is cut.
				room := min(nameW, max(m.width, 1)-term.Width(string(buf)))
				if over := term.Width(name) - room; over > 0 {
					blank := len(buf) - len(strings.TrimRight(string(buf), " "))
					take := min(over, max(blank-1, 0))
					buf = buf[:len(buf)-take]
					nameW = room + take
				}
			} else {
				name = string(report.Sanitize(nil, r.Key))
				if m.by == sample.ByPID {
					name = cutKeepingPID(name, nameW)
				}
			}
			if term.Width(name) > nameW {
				name = term.Truncate(name, nameW, "…")
			}
			buf = append(buf, name...)
			continue
		}
		if colDefs[c].right {
			buf = append(buf, padLeft(string(tmp), width)...)
		} else {
			buf = append(buf, padRight(string(tmp), width)...)
		}
		buf = append(buf, ' ')
	}
	return buf
}

// appendAge appends d as whole seconds ("35s") below 100 s, whole
// minutes ("16m") below 100 min, else whole hours.
func appendAge(dst []byte, d time.Duration) []byte {
	switch {
	case d < 100*time.Second:
		return append(strconv.AppendInt(dst, int64(d/time.Second), 10), 's')
	case d < 100*time.Minute:
		return append(strconv.AppendInt(dst, int64(d/time.Minute), 10), 'm')
	}
	return append(strconv.AppendInt(dst, int64(d/time.Hour), 10), 'h')
}

// marks returns the report's markers for g's RAM and swap: '~' for a
// status-based estimate, '*' for swap counted in full; 0 for none.
func marks(g *sample.Group) (ram, swap byte) {
	if g.Estimated > 0 {
		ram = '~'
		if g.SwapEstimated() {
			swap = '~'
		}
		return ram, swap
	}
	if g.SwapPssMissing && g.Swap > 0 {
		swap = '*'
	}
	return 0, swap
}

func appendMarked(dst []byte, mark byte, n uint64) []byte {
	if mark != 0 {
		dst = append(dst, mark)
	}
	return report.HumanBytes(dst, n)
}

func padLeft(s string, width int) string {
	if n := width - term.Width(s); n > 0 {
		return strings.Repeat(" ", n) + s
	}
	return s
}

func padRight(s string, width int) string {
	if n := width - term.Width(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

func (m Model) helpLines() []string {
	c := m.tr.Config()
	return []string{
		m.st.render(m.st.title, "Keys"),
		"  p s r w c n      sort by private, shared, RAM, swap, count, name;",
		"  d t o            change, rate, connections (--conns); again: reverse",
		"  ← →              previous / next sort column",
		"  g G              grouping: program, user, cgroup, unit, slice, container, pid",
		"  ↑ ↓ PgUp PgDn    scroll a row or a page; Home, End: the first or last page",
		"  /                filter by regular expression (Go syntax): Enter applies,",
		"                   Esc cancels; Esc outside the prompt clears the filter",
		"  space            pause / resume sampling",
		"  ?  q  ctrl+c     this help (any key closes it); quit",
		"",
		m.st.render(m.st.title, "Columns"),
		"  RAM used = Private + Shared: proportional set size (PSS); Swap is SwapPss",
		"  ~ estimate (RSS, or large process paged)  * swap counted in full (no SwapPss)",
		"  Change    RAM now minus RAM when the group was first seen",
		"  MiB/min   growth: Theil–Sen slope over the last " + strconv.Itoa(c.Window) + " samples (\"held 35s\":",
		"            the sampler kept back every new figure of the window, for 35 s)",
		"  Trend     RAM over the last " + strconv.Itoa(SparkWidth) + " samples, lowest ▁ to highest █",
		"  Conns     ESTABLISHED TCP connections (--conns)",
		"  LEAK      grew steadily over the last " + strconv.Itoa(c.Window) + " samples: at least " + strconv.Itoa(c.LeakMinSamples) + " samples,",
		"            slope ≥ " + strconv.FormatFloat(c.LeakMinRate*60/miB, 'f', -1, 64) + " MiB/min, ≥ " + strconv.Itoa(int(c.LeakMonotone*100+0.5)) + "% of steps not down, no step",
		"            over " + strconv.Itoa(int(c.LeakMaxStep*100+0.5)) + "% of the growth",
	}
}

// cutKeepingPID cuts a by-pid key, "NAME [PID]", to width cells by
// cutting the name and keeping " [PID]": the PID is what tells two
// processes of one name apart (htop and top never cut it). A key that
// does not end so, or a width too narrow for the PID and a cell of
// name, is returned as it is, for the caller to cut.
func cutKeepingPID(key string, width int) string {
	if term.Width(key) <= width {
		return key
	}
	i := strings.LastIndex(key, " [")
	if i < 0 || !strings.HasSuffix(key, "]") {
		return key
	}
	for _, c := range key[i+2 : len(key)-1] {
		if c < '0' || c > '9' {
			return key
		}
	}
	pid := key[i:]
	room := width - len(pid)
	if room < 2 {
		return key
	}
	return term.Truncate(key[:i], room, "…") + pid
}
