package report

import (
	"cmp"
	"hash/fnv"
	"io"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/treemap"
)

// The treemaps' drawing area, in SVG user units. The page scales it to
// the window's width; the figures in data-* attributes refer to these
// units (data-area is mapW×mapH).
const (
	mapW = 1000.0
	mapH = 500.0
)

// What a treemap draws as its own rectangle: at most maxBoxes groups
// (maxKids of a group's programs or processes), each at least minShare
// of the map. The rest of a level is one rectangle, "other (N groups,
// X MiB)": hundreds of small groups were an unlabelled grid, and the
// smallest came out as 1-unit strips.
const (
	maxBoxes = 40
	maxKids  = 30
	minShare = 0.003
)

// Label metrics, in SVG user units: an upper bound on the advance of a
// character of the labels' fonts (11 units; 12 bold for groups) and the
// height of a line, by which a label is known to fit its rectangle and
// miss every other label before it is written.
const (
	charW     = 6.6
	boldCharW = 7.6
	lineH     = 13.0
	padX      = 3.0
)

// A tnode is a rectangle of a treemap: a group, a program within a
// group, a process, or the rest of a level folded into one ("other").
type tnode struct {
	level    string // "group", "program", "process" or "other"
	name     string // raw, as the kernel gave it: escaped when written
	pid      int    // processes only
	count    int    // processes in it
	folded   int    // other: the rectangles folded into it
	foldedOf string // other: what those are ("groups", "processes"...)
	ram      uint64 // bytes
	swap     uint64 // bytes
	est      bool   // its figures are (or hold) estimates
	swapFull bool   // its swap counts shared pages in full
	hidden   bool   // a group --top left out of the report's rows
	anchor   string // groups: the id of its row in the page's table
	kids     []*tnode
}

func (n *tnode) value(swap bool) uint64 {
	if swap {
		return n.swap
	}
	return n.ram
}

// programLevel reports whether the groups of by hold several programs,
// so that the treemap nests group → program → process.
func programLevel(by string) bool {
	switch by {
	case "program", "pid":
		return false
	}
	return true
}

// hue is a name's colour, a hash of the name: its hue on the colour
// wheel in degrees, plus 360 times one of three saturations (see
// appendColour), so that a program keeps its colour from one run, and one page,
// to the next (they changed between runs).
func hue(name string) int {
	h := fnv.New32a()
	h.Write([]byte(name))
	// FNV's low bits follow the last bytes closely; mixed (murmur3's
	// finaliser), names that end alike do not get neighbouring hues.
	x := h.Sum32()
	x ^= x >> 16
	x *= 0x85ebca6b
	x ^= x >> 13
	x *= 0xc2b2ae35
	x ^= x >> 16
	// And one of three saturations, so that two names of about the
	// same hue still differ: 360 × variant + hue.
	return int(x%360) + 360*int(x/360%3)
}

// buildTree nests procs under groups: processes under their group (and
// under their program when opt.By groups programs together). A group
// whose processes are not all in procs is drawn without children, so
// that no rectangle misstates a figure. The groups opt.Hidden holds
// (those --top left out of the rows) come after groups, marked hidden.
func buildTree(groups []sample.Group, procs []sample.Process, opt *Options) []*tnode {
	byPID := make(map[int]*sample.Process, len(procs))
	for i := range procs {
		byPID[procs[i].PID] = &procs[i]
	}
	nested := programLevel(opt.by())
	all := groups
	if len(opt.Hidden) > 0 {
		all = append(slices.Clip(groups), opt.Hidden...)
	}
	out := make([]*tnode, 0, len(all))
	for i := range all {
		g := &all[i]
		gn := &tnode{level: "group", name: g.Key, count: g.Count, ram: g.RAM, swap: g.Swap,
			est: g.Estimated > 0, swapFull: swapMarked(g), hidden: i >= len(groups)}
		out = append(out, gn)
		if opt.by() == "pid" {
			continue
		}
		var kids []*tnode
		programs := map[string]*tnode{}
		var ram, swap uint64
		complete := true
		for _, pid := range g.PIDs {
			p, ok := byPID[pid]
			if !ok {
				complete = false
				break
			}
			ram, swap = ram+p.RAM, swap+p.Swap
			pn := &tnode{level: "process", name: p.Name, pid: p.PID, count: 1, ram: p.RAM, swap: p.Swap,
				est: p.Accuracy == sample.Estimate, swapFull: p.Accuracy != sample.Estimate && p.SwapPssMissing && p.Swap > 0}
			if !nested || p.Name == "" {
				kids = append(kids, pn)
				continue
			}
			prog := programs[p.Name]
			if prog == nil {
				prog = &tnode{level: "program", name: p.Name}
				programs[p.Name] = prog
				kids = append(kids, prog)
			}
			prog.count++
			prog.ram += p.RAM
			prog.swap += p.Swap
			prog.est = prog.est || pn.est
			prog.swapFull = prog.swapFull || pn.swapFull
			prog.kids = append(prog.kids, pn)
		}
		if !complete || ram != g.RAM || swap != g.Swap {
			continue
		}
		for k, kid := range kids {
			if kid.level == "program" && len(kid.kids) == 1 {
				kids[k] = kid.kids[0] // a program of one process is that process
			}
		}
		if len(kids) == 1 && kids[0].level == "process" {
			// A group of one process is drawn as the group: the
			// same rectangle twice labelled twice.
			gn.pid = kids[0].pid
			continue
		}
		gn.kids = kids
	}
	// The table's order, largest RAM first, names the anchors.
	order := slices.Clone(out)
	sortNodes(order, false)
	for i, n := range order {
		n.anchor = "g" + strconv.Itoa(i+1)
	}
	return out
}

// sortNodes orders nodes largest first by RAM or swap, ties by name and
// pid, so that a layout depends on nothing but the figures.
func sortNodes(nodes []*tnode, swap bool) {
	slices.SortStableFunc(nodes, func(a, b *tnode) int {
		if c := cmp.Compare(b.value(swap), a.value(swap)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.name, b.name); c != 0 {
			return c
		}
		return cmp.Compare(a.pid, b.pid)
	})
}

// pageInfo is what the page and the SVG say about where the figures come
// from: the host, the time, the totals of what is drawn.
type pageInfo struct {
	host   string
	time   time.Time
	ram    uint64 // bytes drawn in the RAM map (shown and hidden groups)
	swap   uint64
	groups int
	procs  int
}

func newPageInfo(tree []*tnode, snap *sample.Snapshot, opt *Options) pageInfo {
	pi := pageInfo{host: opt.HostName, groups: len(tree)}
	if snap != nil {
		pi.time = snap.Time
	}
	for _, n := range tree {
		pi.ram += n.ram
		pi.swap += n.swap
		pi.procs += n.count
	}
	return pi
}

// appendMeta writes "host H, 2026-03-14 14:09:26 UTC, 27 processes in
// 11 groups".
func (pi *pageInfo) appendMeta(buf []byte) []byte {
	if pi.host != "" {
		buf = append(buf, "host "...)
		buf = escapeName(buf, pi.host)
		buf = append(buf, ", "...)
	}
	if !pi.time.IsZero() {
		buf = append(buf, pi.time.UTC().Format("2006-01-02 15:04:05 UTC")...)
		buf = append(buf, ", "...)
	}
	buf = strconv.AppendInt(buf, int64(pi.procs), 10)
	buf = append(buf, " processes in "...)
	buf = strconv.AppendInt(buf, int64(pi.groups), 10)
	return append(buf, " groups"...)
}

// HTML writes a self-contained page (no network: its Content Security
// Policy forbids every fetch) with treemaps of the groups' RAM and swap,
// nested down to processes, the largest labelled with their name, size
// and share, the rest of each level folded into one "other" rectangle;
// then every group in a table, largest first, which a search field
// filters (the page works without script: the table is sorted, and each
// rectangle links to its row); then, with opt.System, the host ledger.
// The page checks its own rectangles against their figures when it loads
// and sets data-check="ok" on its root element (or "fail: ..."), for
// tests run in a browser.
//
// Names are passed through Sanitize and then HTML-escaped. procs are the
// processes the groups were made of (report.Write's); opt.Hidden the
// groups --top left out, drawn in "other" and listed in the table.
func HTML(w io.Writer, groups []sample.Group, total sample.Group, procs []sample.Process, snap *sample.Snapshot, opt Options) error {
	tree := buildTree(groups, procs, &opt)
	pi := newPageInfo(tree, snap, &opt)
	title := "memwho: RAM and swap by " + opt.by()
	buf := make([]byte, 0, 64<<10)
	buf = append(buf, `<!DOCTYPE html>
<html lang="en" data-check="pending">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>`...)
	buf = escapeText(buf, title)
	buf = append(buf, `</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1em 2em; color: #222; background: #fff; }
svg.treemap { width: 100%; max-width: 1200px; height: auto; display: block; border: 1px solid #888; }
`+treemapStyle+`
svg.treemap a:hover rect, svg.treemap rect.hit { stroke: #000; stroke-width: 2; }
table { border-collapse: collapse; font-size: 13px; }
th, td { padding: 1px 8px; text-align: right; border-bottom: 1px solid #eee; }
td.name, th.name, td.source { text-align: left; }
td.source { color: #555; font-size: 12px; }
tr:target { background: #ffe98a; }
tr.sub td.name { padding-left: 2em; color: #555; }
.key { display: inline-block; width: 0.9em; height: 0.9em; vertical-align: middle; margin-right: 0.3em; }
input[type=search] { font-size: 14px; width: 20em; margin: 0.3em 0 0.6em; }
.meta { color: #444; }
</style>
</head>
<body>
<h1>`...)
	buf = escapeText(buf, title)
	buf = append(buf, "</h1>\n<p class=\"meta\">"...)
	buf = pi.appendMeta(buf)
	buf = append(buf, ": RAM "...)
	buf = figures(buf, pi.ram)
	buf = append(buf, ", swap "...)
	buf = figures(buf, pi.swap)
	buf = append(buf, ".</p>\n<p>Each rectangle's area is its share of the map, largest first; the largest are labelled with their size and share, the rest of each level is one grey rectangle, \"other\". Hover one for its exact figures, click a group for its row in the <a href=\"#groups\">table</a>, where every group is listed and can be searched. "+
		`<svg width="20" height="14" aria-hidden="true"><defs>`+hatchDef("hatch-key")+`</defs><rect width="20" height="14" fill="#ccc"/><rect width="20" height="14" fill="url(#hatch-key)"/></svg>`+
		` hatched: an estimate (`+string(markEstimate)+` in the table).</p>
`...)
	for _, swap := range []bool{false, true} {
		name := "RAM"
		if swap {
			name = "Swap"
		}
		buf = append(buf, "<h2>"...)
		buf = append(buf, name...)
		buf = append(buf, "</h2>\n"...)
		if treeSum(tree, swap) == 0 {
			buf = append(buf, "<p>"...)
			buf = noneUsed(buf, swap, snap)
			buf = append(buf, "</p>\n"...)
			continue
		}
		buf = appendTreemap(buf, tree, swap, `width="1000" height="500"`, true)
	}
	buf = groupTable(buf, tree, pi, groups, &opt)
	if opt.System && snap != nil && snap.MeminfoOK {
		buf = ledgerTable(buf, opt.host(&total), snap, &opt)
	}
	buf = append(buf, "<script>\n"...)
	buf = append(buf, selfCheck...)
	buf = append(buf, findScript...)
	buf = append(buf, "</script>\n</body>\n</html>\n"...)
	_, err := w.Write(buf)
	return err
}

// treemapStyle is the treemaps' text style, in the page and the SVG.
const treemapStyle = `svg.treemap text { font: 11px sans-serif; fill: #111; pointer-events: none; }
svg.treemap text.group { font-weight: bold; font-size: 12px; }
svg.treemap text.figs { fill: #222; }
`

// noneUsed says why a map is empty: nothing of the metric in the
// processes drawn, and for swap what the host uses that no process
// holds (shmem swapped out), which the page's ledger itemises.
func noneUsed(buf []byte, swap bool, snap *sample.Snapshot) []byte {
	what := "RAM"
	if swap {
		what = "swap"
	}
	buf = append(buf, "No "...)
	buf = append(buf, what...)
	buf = append(buf, " used by these processes"...)
	if swap && snap != nil && snap.MeminfoOK && snap.Meminfo.SwapUsed() > 0 {
		buf = append(buf, "; the host has "...)
		buf = HumanBytes(buf, snap.Meminfo.SwapUsed())
		buf = append(buf, " of swap in use (SwapTotal - SwapFree) that no process's SwapPss holds: shmem and tmpfs swapped out (memwho --system itemises it)"...)
	}
	return append(buf, '.')
}

// groupTable writes every group drawn (hidden ones too), largest RAM
// first, with its share, anchored so that the maps' rectangles link to
// it, behind a search field the page's script fills in.
func groupTable(buf []byte, tree []*tnode, pi pageInfo, groups []sample.Group, opt *Options) []byte {
	order := slices.Clone(tree)
	sortNodes(order, false)
	buf = append(buf, "<h2 id=\"groups\">Every group, largest first</h2>\n<p>"...)
	buf = strconv.AppendInt(buf, int64(len(tree)), 10)
	buf = append(buf, " groups"...)
	if n := len(tree) - len(groups); n > 0 {
		buf = append(buf, ": the report's "...)
		buf = strconv.AppendInt(buf, int64(len(groups)), 10)
		buf = append(buf, " rows and "...)
		buf = strconv.AppendInt(buf, int64(n), 10)
		buf = append(buf, " more that --top left out (marked +)"...)
	}
	buf = append(buf, ".</p>\n<input type=\"search\" id=\"find\" placeholder=\"find a group\" aria-label=\"find a group\" hidden>\n"...)
	buf = append(buf, `<table id="groups-table">
<thead><tr><th>#</th><th class="name">`...)
	buf = escapeText(buf, opt.keyHeader())
	buf = append(buf, `</th><th>RAM</th><th>share</th><th>swap</th><th>share</th><th>processes</th></tr></thead>
<tbody>
`...)
	for i, n := range order {
		buf = append(buf, `<tr id="`...)
		buf = append(buf, n.anchor...)
		buf = append(buf, `" data-bytes="`...)
		buf = strconv.AppendUint(buf, n.ram, 10)
		buf = append(buf, `"><td>`...)
		buf = strconv.AppendInt(buf, int64(i+1), 10)
		buf = append(buf, `</td><td class="name"><span class="key" style="background:`...)
		buf = appendColour(buf, hue(n.name), 0)
		buf = append(buf, `"></span>`...)
		if n.hidden {
			buf = append(buf, "+ "...)
		}
		buf = escapeName(buf, n.name)
		buf = append(buf, "</td><td>"...)
		if n.est {
			buf = append(buf, markEstimate)
		}
		buf = HumanBytes(buf, n.ram)
		buf = append(buf, "</td><td>"...)
		buf = appendShare(buf, n.ram, pi.ram)
		buf = append(buf, "</td><td>"...)
		if n.est && n.swap > 0 {
			buf = append(buf, markEstimate)
		} else if n.swapFull {
			buf = append(buf, markSwapFull)
		}
		buf = HumanBytes(buf, n.swap)
		buf = append(buf, "</td><td>"...)
		buf = appendShare(buf, n.swap, pi.swap)
		buf = append(buf, "</td><td>"...)
		buf = strconv.AppendInt(buf, int64(n.count), 10)
		buf = append(buf, "</td></tr>\n"...)
	}
	buf = append(buf, "</tbody>\n<tfoot><tr><td></td><td class=\"name\">total</td><td>"...)
	buf = HumanBytes(buf, pi.ram)
	buf = append(buf, "</td><td>100%</td><td>"...)
	buf = HumanBytes(buf, pi.swap)
	buf = append(buf, "</td><td>100%</td><td>"...)
	buf = strconv.AppendInt(buf, int64(pi.procs), 10)
	return append(buf, "</td></tr></tfoot>\n</table>\n"...)
}

// ledgerTable writes the host ledger (sample.SnapshotLedger), the one
// the table's footer, JSON and the agent show, by the same names.
func ledgerTable(buf []byte, procs *sample.Group, snap *sample.Snapshot, opt *Options) []byte {
	l := sample.SnapshotLedger(procs, snap)
	m := &snap.Meminfo
	procMark, procSwapMark := marks(procs)
	row := func(buf []byte, class, name string, mark byte, v int64, total uint64, source string) []byte {
		buf = append(buf, "<tr"...)
		if class != "" {
			buf = append(buf, ` class="`...)
			buf = append(buf, class...)
			buf = append(buf, '"')
		}
		buf = append(buf, `><td class="name">`...)
		buf = escapeText(buf, name)
		buf = append(buf, "</td><td>"...)
		if mark != 0 {
			buf = append(buf, mark)
		}
		buf = appendSignedBytes(buf, v)
		buf = append(buf, "</td><td>"...)
		if v >= 0 && class == "" {
			buf = appendShare(buf, uint64(v), total)
		}
		buf = append(buf, `</td><td class="source">`...)
		buf = escapeText(buf, source)
		return append(buf, "</td></tr>\n"...)
	}
	buf = append(buf, "<h2 id=\"ledger\">Host ledger</h2>\n<p>Every byte of RAM (/proc/meminfo, /proc/zoneinfo), the lines adding up to MemTotal; then swap.</p>\n<table id=\"ledger-table\">\n<thead><tr><th class=\"name\">RAM</th><th>bytes</th><th>share</th><th class=\"name\">source</th></tr></thead>\n<tbody>\n"...)
	for i, line := range l.RAM {
		var mark byte
		if ramLineFromProcs(l.RAM, i) {
			mark = procMark
		}
		buf = row(buf, "", line.Name, mark, line.Bytes, m.MemTotal, line.Source)
		if line.Name == sample.ShmemLedgerLine {
			for _, t := range opt.Tmpfs {
				if t.Used > 0 {
					buf = row(buf, "sub", "tmpfs "+string(Sanitize(nil, t.Mount)), 0, int64(min(t.Used, 1<<62)), 0, tmpfsSource)
				}
			}
		}
	}
	if mv := l.Moved; mv != nil && len(mv.Lines) > 0 {
		buf = row(buf, "sub", MovedLabel, procMark, mv.RemainderBefore, 0, string(AppendMoved(nil, mv)))
	}
	buf = row(buf, "total", "= total RAM", 0, int64(min(m.MemTotal, 1<<62)), 0, "MemTotal")
	if m.SwapTotal > 0 {
		buf = append(buf, "<tr><th class=\"name\">swap</th><th></th><th></th><th></th></tr>\n"...)
		for i, line := range l.Swap {
			var mark byte
			if swapLineFromProcs(l.Swap, i) {
				mark = procSwapMark
			}
			buf = row(buf, "", line.Name, mark, line.Bytes, m.SwapTotal, line.Source)
		}
		for _, line := range l.SwapAlso {
			if line.Bytes > 0 {
				buf = row(buf, "sub", line.Name, 0, line.Bytes, 0, line.Source)
			}
		}
		buf = row(buf, "total", "= total swap", 0, int64(min(m.SwapTotal, 1<<62)), 0, "SwapTotal")
	}
	return append(buf, "</tbody>\n</table>\n"...)
}

// appendShare appends v as a share of total: "4.5%", "<0.1%".
func appendShare(buf []byte, v, total uint64) []byte {
	if total == 0 {
		return append(buf, '-')
	}
	f := 100 * float64(v) / float64(total)
	if f > 0 && f < 0.05 {
		return append(buf, "<0.1%"...)
	}
	buf = strconv.AppendFloat(buf, f, 'f', 1, 64)
	return append(buf, '%')
}

// SVG writes the treemaps of HTML as one standalone SVG image, RAM
// above swap, each headed with its total, the host and the time.
func SVG(w io.Writer, groups []sample.Group, total sample.Group, procs []sample.Process, snap *sample.Snapshot, opt Options) error {
	tree := buildTree(groups, procs, &opt)
	pi := newPageInfo(tree, snap, &opt)
	const head = 48.0
	// A map with nothing to draw is its heading alone.
	height := 0.0
	for _, swap := range []bool{false, true} {
		height += head
		if treeSum(tree, swap) != 0 {
			height += mapH
		}
	}
	buf := make([]byte, 0, 64<<10)
	buf = append(buf, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="`...)
	buf = strconv.AppendFloat(buf, height, 'f', -1, 64)
	buf = append(buf, `" viewBox="0 0 1000 `...)
	buf = strconv.AppendFloat(buf, height, 'f', -1, 64)
	buf = append(buf, `" font-family="sans-serif">
<style>`+treemapStyle+`text.heading { font-size: 16px; font-weight: bold; } text.meta { font-size: 12px; fill: #444; }</style>
<rect width="100%" height="100%" fill="#fff"/>
`...)
	y := 0.0
	for _, swap := range []bool{false, true} {
		name, sum := "RAM by "+opt.by()+": ", pi.ram
		if swap {
			name, sum = "Swap by "+opt.by()+": ", pi.swap
		}
		buf = append(buf, `<text class="heading" x="4" y="`...)
		buf = strconv.AppendFloat(buf, y+20, 'f', -1, 64)
		buf = append(buf, `">`...)
		buf = escapeText(buf, name)
		buf = HumanBytes(buf, sum)
		buf = append(buf, `</text>`+"\n"+`<text class="meta" x="4" y="`...)
		buf = strconv.AppendFloat(buf, y+38, 'f', -1, 64)
		buf = append(buf, `">`...)
		buf = pi.appendMeta(buf)
		if treeSum(tree, swap) == 0 {
			buf = append(buf, ". "...)
			buf = noneUsed(buf, swap, snap)
		}
		buf = append(buf, "</text>\n"...)
		if treeSum(tree, swap) != 0 {
			attrs := `x="0" y="` + strconv.FormatFloat(y+head, 'f', -1, 64) + `" width="1000" height="500"`
			buf = appendTreemap(buf, tree, swap, attrs, false)
			y += mapH
		}
		y += head
	}
	buf = append(buf, "</svg>\n"...)
	_, err := w.Write(buf)
	return err
}

func treeSum(tree []*tnode, swap bool) uint64 {
	var s uint64
	for _, n := range tree {
		s += n.value(swap)
	}
	return s
}

// hatchDef is the pattern that marks estimates.
func hatchDef(id string) string {
	return `<pattern id="` + id + `" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
		`<rect width="2" height="6" fill="#000" fill-opacity="0.3"/></pattern>`
}

// appendTreemap writes one <svg class="treemap"> of tree's RAM or swap.
// Every figure rectangle carries data-level, data-depth, data-bytes, an
// index (data-i, which its label's data-in names) and its exact
// coordinates; data-bytes of the <svg> is the total its data-area
// (mapW×mapH) stands for. With links, each group's rectangles link to
// its row of the page's table.
func appendTreemap(buf []byte, tree []*tnode, swap bool, attrs string, links bool) []byte {
	metric := "ram"
	if swap {
		metric = "swap"
	}
	total := treeSum(tree, swap)
	buf = append(buf, `<svg class="treemap" xmlns="http://www.w3.org/2000/svg" `...)
	buf = append(buf, attrs...)
	buf = append(buf, ` viewBox="0 0 1000 500" data-metric="`...)
	buf = append(buf, metric...)
	buf = append(buf, `" data-bytes="`...)
	buf = strconv.AppendUint(buf, total, 10)
	buf = append(buf, `" data-area="`...)
	buf = strconv.AppendFloat(buf, mapW*mapH, 'f', -1, 64)
	buf = append(buf, `">`+"\n<defs>"...)
	buf = append(buf, hatchDef("hatch-"+metric)...)
	buf = append(buf, "</defs>\n"...)
	d := drawer{swap: swap, metric: metric, total: total}
	d.layout(tree, treemap.Rect{W: mapW, H: mapH}, 0, -1)
	d.placeLabels()
	open := false
	for i := range d.items {
		it := &d.items[i]
		if it.depth == 0 {
			if open {
				buf = append(buf, "</a>\n"...)
				open = false
			}
			if links && it.n.anchor != "" {
				// A group's rectangles, its programs' and processes'
				// too, in one link to its row.
				buf = append(buf, `<a href="#`...)
				buf = append(buf, it.n.anchor...)
				buf = append(buf, `">`+"\n"...)
				open = true
			}
		}
		buf = d.rect(buf, i)
	}
	if open {
		buf = append(buf, "</a>\n"...)
	}
	// Group outlines, then every label, above all rectangles.
	for _, it := range d.items {
		if it.depth == 0 && it.drawnKids {
			buf = append(buf, `<rect class="outline`...)
			buf = coords(buf, it.r)
			buf = append(buf, `" fill="none" stroke="#fff" stroke-width="2" pointer-events="none"/>`+"\n"...)
		}
	}
	for _, lb := range d.labels {
		buf = d.label(buf, lb)
	}
	return append(buf, "</svg>\n"...)
}

type placed struct {
	n         *tnode
	r         treemap.Rect
	hue       int // -1: grey ("other")
	tone      int // depth and alternation: lightness steps
	depth     int
	group     int // index of its group's item
	drawnKids bool
}

// A label is one or two lines of text in a rectangle: its name, and its
// size and share when there is room.
type label struct {
	item  int
	bold  bool
	lines []string // name, then figures

	x, y float64 // first baseline's start
	box  treemap.Rect
}

type drawer struct {
	swap   bool
	metric string
	total  uint64
	items  []placed
	labels []label
}

// fold returns nodes (largest first) cut to what gets its own rectangle:
// at most max of them, each at least minShare of the map; the rest
// become one "other" node, unless it would hold only one.
func (d *drawer) fold(nodes []*tnode, max int, of string) []*tnode {
	var kept []*tnode
	for _, n := range nodes {
		if n.value(d.swap) > 0 {
			kept = append(kept, n)
		}
	}
	sortNodes(kept, d.swap)
	k := 0
	for k < len(kept) && k < max && float64(kept[k].value(d.swap)) >= minShare*float64(d.total) {
		k++
	}
	if len(kept)-k < 2 {
		return kept
	}
	rest := &tnode{level: "other", name: "other", folded: len(kept) - k, foldedOf: of}
	for _, n := range kept[k:] {
		rest.ram += n.ram
		rest.swap += n.swap
		rest.count += n.count
		rest.est = rest.est || n.est
		rest.swapFull = rest.swapFull || n.swapFull
	}
	return append(kept[:k:k], rest)
}

// drawable reports whether a group's children are worth drawing: at
// least one is large enough for a rectangle of its own (else the group
// would be one "other" box, which says less than the group itself).
func (d *drawer) drawable(kids []*tnode) bool {
	for _, k := range kids {
		if float64(k.value(d.swap)) >= minShare*float64(d.total) {
			return true
		}
	}
	return false
}

// layout places nodes in r, parents before their children, each level
// largest first and folded.
func (d *drawer) layout(nodes []*tnode, r treemap.Rect, depth, group int) {
	max, of := maxBoxes, "groups"
	if depth > 0 {
		max, of = maxKids, "processes"
		if len(nodes) > 0 && nodes[0].level == "program" {
			of = "programs and processes"
		}
	}
	nodes = d.fold(nodes, max, of)
	values := make([]float64, len(nodes))
	for i, n := range nodes {
		values[i] = float64(n.value(d.swap))
	}
	rects := treemap.Squarify(values, r)
	for i, n := range nodes {
		h, tone := -1, 0
		switch {
		case n.level == "other":
		case depth == 0:
			h = hue(n.name)
		default:
			h = d.items[group].hue
			tone = min(depth, 2) + i%2
		}
		if n.level == "other" && depth == 0 {
			n.anchor = "groups" // the table lists what it holds
		}
		idx := len(d.items)
		g := group
		if depth == 0 {
			g = idx
		}
		d.items = append(d.items, placed{n: n, r: rects[i], hue: h, tone: tone, depth: depth, group: g})
		var kidSum uint64
		for _, k := range n.kids {
			kidSum += k.value(d.swap)
		}
		if len(n.kids) > 0 && kidSum == n.value(d.swap) && d.drawable(n.kids) {
			d.items[idx].drawnKids = true
			d.layout(n.kids, rects[i], depth+1, g)
		}
	}
}

// placeLabels chooses the labels: groups' first (a line at their top
// when their children are drawn), then every other rectangle's, largest
// first, each only where it fits its rectangle and overlaps no label
// already placed. Labels overlapped ("memwho-a…" over "memw.").
func (d *drawer) placeLabels() {
	order := make([]int, 0, len(d.items))
	for i := range d.items {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(d.items[a].depth, d.items[b].depth); c != 0 && (d.items[a].depth == 0 || d.items[b].depth == 0) {
			return c
		}
		return cmp.Compare(d.items[b].r.Area(), d.items[a].r.Area())
	})
	for _, i := range order {
		it := &d.items[i]
		if it.drawnKids && it.depth > 0 {
			continue // a program whose processes are drawn: they say it
		}
		lb, ok := d.fit(i)
		if !ok {
			continue
		}
		clear := true
		for _, o := range d.labels {
			if overlap(lb.box, o.box) {
				clear = false
				break
			}
		}
		if clear {
			d.labels = append(d.labels, lb)
		}
	}
}

// fit returns item i's label as it fits the rectangle: the first of its
// candidates (two lines, name and figures; one line of both; the name
// cut with "…") that fits; false when not even a few characters do.
func (d *drawer) fit(i int) (label, bool) {
	it := &d.items[i]
	r, n := it.r, it.n
	lb := label{item: i, bold: it.depth == 0 && it.drawnKids}
	cw := charW
	if lb.bold {
		cw = boldCharW
	}
	room := int((r.W - 2*padX) / cw)
	if room < 4 || r.H < lineH+3 {
		return lb, false
	}

	// How many lines the rectangle holds, and the candidates, best
	// first: each a label's lines.
	fits := int((r.H - 6) / lineH)
	name, figs := string(d.name(n)), string(d.figures(n))
	size := string(HumanBytes(nil, n.value(d.swap)))
	pct := string(appendShare(nil, n.value(d.swap), d.total))
	var cands [][]string
	if n.level == "other" {
		// "other (12 groups, 7.9 MiB)", its share below it.
		mark := ""
		if n.est {
			mark = string(markEstimate)
		}
		what := strconv.Itoa(n.folded) + " " + n.foldedOf
		full := mark + "other (" + what + ", " + size + ")"
		cands = append(cands, []string{full, pct}, []string{full + ", " + pct}, []string{full},
			[]string{mark + "other (" + what + ")", size, pct}, []string{mark + "other", what, size + ", " + pct},
			[]string{mark + "other", what + ", " + size}, []string{mark + "other", size}, []string{mark + "other"})
	} else {
		short := cut(name, room)
		if lb.bold {
			// A group's line at its top, and more when it is tall
			// enough to spare them (its children's labels make room).
			cands = append(cands, []string{name + "  " + figs})
			if fits >= 5 {
				cands = append(cands, []string{name, figs}, []string{name, size, pct})
			}
			cands = append(cands, []string{name + "  " + size})
			if fits >= 5 {
				cands = append(cands, []string{short, figs}, []string{short, size, pct}, []string{short, size})
			}
		} else {
			cands = append(cands, []string{name, figs}, []string{name, size, pct}, []string{name + "  " + figs},
				[]string{short, figs}, []string{short, size, pct}, []string{name, size}, []string{short, size},
				[]string{name + "  " + size})
		}
		cands = append(cands, []string{short})
	}
	for _, c := range cands {
		if len(c) > fits || c[0] == "" {
			continue
		}
		width := 0
		for _, l := range c {
			width = max(width, textWidth(l))
		}
		if width > room {
			continue
		}
		lb.lines = c
		nl := float64(len(c))
		w := float64(width) * cw
		lb.x = r.X + padX
		if lb.bold {
			lb.y = r.Y + lineH - 1
		} else {
			// Vertically centred.
			lb.y = r.Y + (r.H-nl*lineH)/2 + lineH - 2
		}
		lb.box = treemap.Rect{X: lb.x - 1, Y: lb.y - lineH + 2, W: w + 2, H: nl * lineH}
		return lb, lb.box.Y >= r.Y && lb.box.Y+lb.box.H <= r.Y+r.H+1
	}
	return lb, false
}

// textWidth counts s's characters, the wide ones (CJK) twice, for the
// width bound.
func textWidth(s string) int {
	n := 0
	for _, r := range s {
		n++
		if wide(r) {
			n++
		}
	}
	return n
}

// wide reports whether r is drawn about twice as wide as a Latin letter:
// Hangul, CJK and fullwidth forms (East Asian Wide and Fullwidth).
func wide(r rune) bool {
	switch {
	case r == '…': // a whole em in DejaVu Sans, Chromium's sans-serif here
		return true
	case r >= 0x1100 && r <= 0x115f, r >= 0x2e80 && r <= 0xa4cf, r >= 0xac00 && r <= 0xd7a3,
		r >= 0xf900 && r <= 0xfaff, r >= 0xfe30 && r <= 0xfe4f, r >= 0xff00 && r <= 0xff60,
		r >= 0xffe0 && r <= 0xffe6, r >= 0x1f300 && r <= 0x1faff, r >= 0x20000:
		return true
	}
	return false
}

// cut returns s cut to room characters, the last one "…"; "" when
// fewer than 5 of s's would be left, too few to tell names apart.
func cut(s string, room int) string {
	if textWidth(s) <= room {
		return s
	}
	if room < 7 {
		return ""
	}
	out, n := make([]byte, 0, len(s)), 0
	for _, r := range s {
		w := 1
		if wide(r) {
			w = 2
		}
		if n+w > room-2 { // the ellipsis is as wide as two
			break
		}
		out = utf8.AppendRune(out, r)
		n += w
	}
	return string(out) + "…"
}

func overlap(a, b treemap.Rect) bool {
	return a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H
}

// name is the label's name of n, sanitised: "~" before an estimate,
// "NAME [PID]" for a process, "other (12 groups)".
func (d *drawer) name(n *tnode) []byte {
	var name []byte
	if n.est {
		name = append(name, markEstimate)
	}
	if n.level == "other" {
		return appendOther(name, n)
	}
	name = Sanitize(name, n.name)
	if n.level == "process" {
		if n.name == "" {
			name = append(name, "pid "...)
		} else {
			name = append(name, ' ', '[')
		}
		name = strconv.AppendInt(name, int64(n.pid), 10)
		if n.name != "" {
			name = append(name, ']')
		}
	}
	return name
}

func appendOther(buf []byte, n *tnode) []byte {
	buf = append(buf, "other ("...)
	buf = strconv.AppendInt(buf, int64(n.folded), 10)
	buf = append(buf, ' ')
	buf = append(buf, n.foldedOf...)
	return append(buf, ')')
}

// figures is a label's second line: "12.3 MiB, 4.5%".
func (d *drawer) figures(n *tnode) []byte {
	b := HumanBytes(nil, n.value(d.swap))
	b = append(b, ", "...)
	return appendShare(b, n.value(d.swap), d.total)
}

// appendColour appends an hsl() colour of hue h (grey for -1) at tone.
func appendColour(buf []byte, h, tone int) []byte {
	if h < 0 {
		buf = append(buf, "hsl(0,0%,"...)
		buf = strconv.AppendInt(buf, int64(72+4*tone), 10)
		return append(buf, "%)"...)
	}
	buf = append(buf, "hsl("...)
	buf = strconv.AppendInt(buf, int64(h%360), 10)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, int64([3]int{55, 75, 35}[h/360%3]), 10)
	buf = append(buf, "%,"...)
	buf = strconv.AppendInt(buf, int64(58+7*tone), 10)
	return append(buf, "%)"...)
}

func (d *drawer) rect(buf []byte, i int) []byte {
	it := &d.items[i]
	n, r := it.n, it.r
	buf = append(buf, `<rect class="`...)
	buf = append(buf, n.level...)
	buf = append(buf, `" data-level="`...)
	buf = append(buf, n.level...)
	buf = append(buf, `" data-depth="`...)
	buf = strconv.AppendInt(buf, int64(it.depth), 10)
	buf = append(buf, `" data-i="`...)
	buf = strconv.AppendInt(buf, int64(i), 10)
	buf = append(buf, `" data-bytes="`...)
	buf = strconv.AppendUint(buf, n.value(d.swap), 10)
	if n.est {
		buf = append(buf, `" data-estimate="1`...)
	}
	if n.pid != 0 {
		buf = append(buf, `" data-pid="`...)
		buf = strconv.AppendInt(buf, int64(n.pid), 10)
	}
	buf = coords(buf, r)
	buf = append(buf, `" fill="`...)
	buf = appendColour(buf, it.hue, it.tone)
	buf = append(buf, `" stroke="#fff" stroke-width="0.5"><title>`...)
	buf = d.title(buf, n)
	buf = append(buf, "</title></rect>\n"...)
	if n.est {
		buf = append(buf, `<rect class="hatch`...)
		buf = coords(buf, r)
		buf = append(buf, `" fill="url(#hatch-`...)
		buf = append(buf, d.metric...)
		buf = append(buf, `)" pointer-events="none"/>`+"\n"...)
	}
	return buf
}

// coords appends ` x="..." y="..." width="..." height="..."` after the
// previous attribute's value (whose closing quote it writes first),
// exact to the float64 so that the areas can be checked.
func coords(buf []byte, r treemap.Rect) []byte {
	buf = append(buf, `" x="`...)
	buf = strconv.AppendFloat(buf, r.X, 'f', -1, 64)
	buf = append(buf, `" y="`...)
	buf = strconv.AppendFloat(buf, r.Y, 'f', -1, 64)
	buf = append(buf, `" width="`...)
	buf = strconv.AppendFloat(buf, r.W, 'f', -1, 64)
	buf = append(buf, `" height="`...)
	return strconv.AppendFloat(buf, r.H, 'f', -1, 64)
}

// label writes a placed label: one <text> per line, data-in naming its
// rectangle's data-i.
func (d *drawer) label(buf []byte, lb label) []byte {
	for k, line := range lb.lines {
		if line == "" {
			continue
		}
		buf = append(buf, `<text`...)
		switch {
		case k >= 1:
			buf = append(buf, ` class="figs"`...)
		case lb.bold:
			buf = append(buf, ` class="group"`...)
		}
		buf = append(buf, ` data-in="`...)
		buf = strconv.AppendInt(buf, int64(lb.item), 10)
		buf = append(buf, `" x="`...)
		buf = strconv.AppendFloat(buf, lb.x, 'f', 2, 64)
		buf = append(buf, `" y="`...)
		buf = strconv.AppendFloat(buf, lb.y+float64(k)*lineH, 'f', 2, 64)
		buf = append(buf, `">`...)
		// The line was sanitised when it was made.
		buf = escapeText(buf, line)
		buf = append(buf, "</text>\n"...)
	}
	return buf
}

// title writes the hover text of n: its name and exact figures.
func (d *drawer) title(buf []byte, n *tnode) []byte {
	buf = append(buf, n.level...)
	buf = append(buf, ": "...)
	switch {
	case n.level == "other":
		buf = appendOther(buf, n)
		buf = append(buf, ", each too small to draw; listed in the table"...)
	case n.name != "" || n.pid == 0:
		buf = escapeName(buf, n.name)
	}
	if n.pid != 0 {
		if n.name != "" {
			buf = append(buf, ' ')
		}
		buf = append(buf, "[pid "...)
		buf = strconv.AppendInt(buf, int64(n.pid), 10)
		buf = append(buf, ']')
	}
	buf = append(buf, "\nRAM: "...)
	buf = figures(buf, n.ram)
	buf = append(buf, "\nswap: "...)
	buf = figures(buf, n.swap)
	if d.total > 0 {
		buf = append(buf, '\n')
		buf = appendShare(buf, n.value(d.swap), d.total)
		buf = append(buf, " of the "...)
		if d.swap {
			buf = append(buf, "swap"...)
		} else {
			buf = append(buf, "RAM"...)
		}
		buf = append(buf, " drawn"...)
	}
	if n.count > 1 {
		buf = append(buf, '\n')
		buf = strconv.AppendInt(buf, int64(n.count), 10)
		buf = append(buf, " processes"...)
	}
	if n.hidden {
		buf = append(buf, "\nleft out of the report's rows by --top"...)
	}
	if n.est {
		buf = append(buf, "\n"+string(markEstimate)+" estimate: from /proc/PID/status (RSS: shared pages counted in full), or read page by page (shared pages' shares estimated)"...)
	}
	if n.swapFull {
		buf = append(buf, "\n"+string(markSwapFull)+" swap counted in full (no SwapPss on this kernel)"...)
	}
	return buf
}

// figures appends n bytes in human units and exactly: "1.5 MiB
// (1572864 bytes)".
func figures(buf []byte, n uint64) []byte {
	buf = HumanBytes(buf, n)
	buf = append(buf, " ("...)
	buf = strconv.AppendUint(buf, n, 10)
	return append(buf, " bytes)"...)
}

// AppendHTML appends a raw name (a process name, a host name) as text
// safe anywhere in an HTML or SVG document, content or quoted attribute:
// Sanitize's escapes, then the references HTML and XML need.
func AppendHTML(buf []byte, raw string) []byte { return escapeName(buf, raw) }

// escapeName appends a raw name as text safe in HTML and XML, content or
// attribute: Sanitize's escapes, then escapeText.
func escapeName(buf []byte, raw string) []byte {
	var tmp [64]byte
	return escapeText(buf, string(Sanitize(tmp[:0], raw)))
}

// escapeText appends s, which Sanitize already made free of control
// characters, with the five characters special in HTML and XML replaced
// by references, and U+FFFE and U+FFFF (not characters to XML, which
// Sanitize lets through) escaped as Sanitize escapes the rest (a
// backslash in s is already doubled, so the mapping stays injective).
func escapeText(buf []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		var rep string
		size := 1
		switch c {
		case '&':
			rep = "&amp;"
		case '<':
			rep = "&lt;"
		case '>':
			rep = "&gt;"
		case '"':
			rep = "&#34;"
		case '\'':
			rep = "&#39;"
		case 0xef:
			if i+2 < len(s) && s[i+1] == 0xbf && (s[i+2] == 0xbe || s[i+2] == 0xbf) {
				rep, size = `\ufffe`, 3
				if s[i+2] == 0xbf {
					rep = `\uffff`
				}
			}
		}
		if rep == "" {
			i++
			continue
		}
		buf = append(buf, s[start:i]...)
		buf = append(buf, rep...)
		i += size
		start = i
	}
	return append(buf, s[start:]...)
}

// selfCheck is the page's script: it checks that every rectangle's area
// is its share of its treemap and records the verdict in data-check.
const selfCheck = `(function () {
  var bad = [];
  var maps = document.querySelectorAll("svg.treemap");
  for (var m = 0; m < maps.length; m++) {
    var svg = maps[m];
    var total = Number(svg.getAttribute("data-bytes"));
    var area = Number(svg.getAttribute("data-area"));
    var rects = svg.querySelectorAll("rect[data-bytes]");
    if (rects.length === 0) bad.push(svg.getAttribute("data-metric") + ": no rectangles");
    for (var i = 0; i < rects.length; i++) {
      var r = rects[i];
      var a = Number(r.getAttribute("width")) * Number(r.getAttribute("height"));
      var want = area * Number(r.getAttribute("data-bytes")) / total;
      if (!(Math.abs(a - want) <= 1e-6 * area)) bad.push(svg.getAttribute("data-metric") + " #" + i + ": area " + a + ", want " + want);
    }
  }
  document.documentElement.setAttribute("data-check", bad.length ? "fail: " + bad.join("; ") : "ok");
})();
`

// findScript shows the search field and filters the table's rows by
// it, outlining the matching groups' rectangles in the maps.
const findScript = `(function () {
  var input = document.getElementById("find");
  var table = document.getElementById("groups-table");
  if (!input || !table) return;
  input.hidden = false;
  input.addEventListener("input", function () {
    var q = input.value.toLowerCase();
    var rows = table.tBodies[0].rows;
    var hit = {};
    for (var i = 0; i < rows.length; i++) {
      var name = rows[i].cells[1].textContent.toLowerCase();
      var show = q === "" || name.indexOf(q) >= 0;
      rows[i].hidden = !show;
      if (show && q !== "") hit["#" + rows[i].id] = true;
    }
    var links = document.querySelectorAll("svg.treemap a");
    for (var j = 0; j < links.length; j++) {
      var r = links[j].querySelector("rect");
      if (r) r.classList.toggle("hit", !!hit[links[j].getAttribute("href")]);
    }
  });
})();
`
