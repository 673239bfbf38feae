package report

import (
	"bytes"
	"cmp"
	"io"
	"slices"
	"strconv"
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

// A tnode is a rectangle of a treemap: a group, a program within a
// group, or a process.
type tnode struct {
	level    string // "group", "program" or "process"
	name     string // raw, as the kernel gave it: escaped when written
	pid      int    // processes only
	count    int    // processes in it
	ram      uint64 // bytes
	swap     uint64 // bytes
	est      bool   // its figures are (or hold) estimates
	swapFull bool   // its swap counts shared pages in full
	hue      int    // groups only: the colour of its rectangles
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

// buildTree nests procs under groups: processes under their group (and
// under their program when opt.By groups programs together). A group
// whose processes are not all in procs is drawn without children, so
// that no rectangle misstates a figure.
func buildTree(groups []sample.Group, procs []sample.Process, opt *Options) []*tnode {
	byPID := make(map[int]*sample.Process, len(procs))
	for i := range procs {
		byPID[procs[i].PID] = &procs[i]
	}
	nested := programLevel(opt.by())
	out := make([]*tnode, 0, len(groups))
	for i := range groups {
		g := &groups[i]
		gn := &tnode{level: "group", name: g.Key, count: g.Count, ram: g.RAM, swap: g.Swap,
			est: g.Estimated > 0, swapFull: swapMarked(g),
			hue: (i * 137) % 360} // the golden angle: neighbours in the table differ
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
		gn.kids = kids
	}
	return out
}

// HTML writes a self-contained page (no network: its Content Security
// Policy forbids every fetch) with treemaps of the groups' RAM and swap,
// nested down to processes, each rectangle titled with its exact figures,
// and the report's table below them. The page checks its own rectangles
// against their figures when it loads and sets data-check="ok" on its
// root element (or "fail: ..."), for tests run in a browser.
//
// Names are passed through Sanitize and then HTML-escaped. procs are the
// processes the groups were made of (report.Write's).
func HTML(w io.Writer, groups []sample.Group, total sample.Group, procs []sample.Process, snap *sample.Snapshot, opt Options) error {
	tree := buildTree(groups, procs, &opt)
	var table bytes.Buffer
	topt := opt
	topt.Color = false
	if err := Table(&table, groups, total, snap, topt); err != nil {
		return err
	}
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
svg.treemap text { font: 11px sans-serif; fill: #111; pointer-events: none; }
svg.treemap text.group { font-weight: bold; font-size: 12px; }
svg.treemap rect:hover { fill-opacity: 0.75; }
pre { font: 12px/1.3 ui-monospace, monospace; background: #f6f6f6; padding: 0.5em; overflow-x: auto; }
.key { display: inline-block; width: 1.2em; height: 0.9em; vertical-align: middle; border: 1px solid #888; }
</style>
</head>
<body>
<h1>`...)
	buf = escapeText(buf, title)
	buf = append(buf, "</h1>\n<p>Total shown: RAM "...)
	buf = figures(buf, total.RAM)
	buf = append(buf, ", swap "...)
	buf = figures(buf, total.Swap)
	buf = append(buf, `. Each rectangle's area is its share of the total; hover one for its exact figures. `+
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
			buf = append(buf, "<p>None used by the processes shown.</p>\n"...)
			continue
		}
		buf = appendTreemap(buf, tree, swap, `width="1000" height="500"`)
	}
	buf = append(buf, "<h2>Table</h2>\n<pre>"...)
	buf = escapeText(buf, table.String())
	buf = append(buf, "</pre>\n<script>\n"...)
	buf = append(buf, selfCheck...)
	buf = append(buf, "</script>\n</body>\n</html>\n"...)
	_, err := w.Write(buf)
	return err
}

// SVG writes the treemaps of HTML as one standalone SVG image, RAM
// above swap, without the table.
func SVG(w io.Writer, groups []sample.Group, procs []sample.Process, opt Options) error {
	tree := buildTree(groups, procs, &opt)
	const head = 30.0
	height := 2 * (head + mapH)
	buf := make([]byte, 0, 64<<10)
	buf = append(buf, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="`...)
	buf = strconv.AppendFloat(buf, height, 'f', -1, 64)
	buf = append(buf, `" viewBox="0 0 1000 `...)
	buf = strconv.AppendFloat(buf, height, 'f', -1, 64)
	buf = append(buf, `" font-family="sans-serif">
<style>text { font-size: 11px; fill: #111; pointer-events: none; } text.group { font-weight: bold; font-size: 12px; }</style>
<rect width="100%" height="100%" fill="#fff"/>
`...)
	y := 0.0
	for _, swap := range []bool{false, true} {
		name := "RAM by " + opt.by()
		if swap {
			name = "Swap by " + opt.by()
		}
		buf = append(buf, `<text class="heading" x="4" y="`...)
		buf = strconv.AppendFloat(buf, y+20, 'f', -1, 64)
		buf = append(buf, `" style="font-size:16px;font-weight:bold">`...)
		buf = escapeText(buf, name)
		if treeSum(tree, swap) == 0 {
			buf = append(buf, ": none used by the processes shown</text>\n"...)
		} else {
			buf = append(buf, "</text>\n"...)
			attrs := `x="0" y="` + strconv.FormatFloat(y+head, 'f', -1, 64) + `" width="1000" height="500"`
			buf = appendTreemap(buf, tree, swap, attrs)
		}
		y += head + mapH
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
// Every figure rectangle carries data-level, data-bytes and its exact
// coordinates; data-bytes of the <svg> is the total its data-area
// (mapW×mapH) stands for.
func appendTreemap(buf []byte, tree []*tnode, swap bool, attrs string) []byte {
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
	d.layout(tree, treemap.Rect{W: mapW, H: mapH}, 0)
	for _, it := range d.items {
		buf = d.rect(buf, it)
	}
	// Group outlines and names last, above their processes.
	for _, it := range d.items {
		if it.n.level == "group" {
			buf = d.groupLabel(buf, it)
		}
	}
	return append(buf, "</svg>\n"...)
}

type placed struct {
	n    *tnode
	r    treemap.Rect
	hue  int
	tone int // depth and alternation: lightness steps
}

type drawer struct {
	swap   bool
	metric string
	total  uint64
	items  []placed
}

// layout places nodes in r, parents before their children.
func (d *drawer) layout(nodes []*tnode, r treemap.Rect, hue int) {
	nodes = slices.Clone(nodes)
	// Largest first, so that the layout does not depend on the sort
	// the table was asked for.
	slices.SortStableFunc(nodes, func(a, b *tnode) int { return cmp.Compare(b.value(d.swap), a.value(d.swap)) })
	values := make([]float64, len(nodes))
	for i, n := range nodes {
		values[i] = float64(n.value(d.swap))
	}
	rects := treemap.Squarify(values, r)
	for i, n := range nodes {
		if n.value(d.swap) == 0 {
			continue
		}
		h, tone := hue, 0
		switch n.level {
		case "group":
			h = n.hue
		case "program":
			tone = 1
		case "process":
			tone = 2 + i%2
		}
		d.items = append(d.items, placed{n: n, r: rects[i], hue: h, tone: tone})
		var kidSum uint64
		for _, k := range n.kids {
			kidSum += k.value(d.swap)
		}
		if kidSum == n.value(d.swap) {
			d.layout(n.kids, rects[i], h)
		}
	}
}

func (d *drawer) rect(buf []byte, it placed) []byte {
	n, r := it.n, it.r
	buf = append(buf, `<rect class="`...)
	buf = append(buf, n.level...)
	buf = append(buf, `" data-level="`...)
	buf = append(buf, n.level...)
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
	buf = append(buf, `" fill="hsl(`...)
	buf = strconv.AppendInt(buf, int64(it.hue), 10)
	buf = append(buf, ",55%,"...)
	buf = strconv.AppendInt(buf, int64(50+8*it.tone), 10)
	buf = append(buf, `%)" stroke="#fff" stroke-width="0.5"><title>`...)
	buf = d.title(buf, n)
	buf = append(buf, "</title></rect>\n"...)
	if n.est {
		buf = append(buf, `<rect class="hatch`...)
		buf = coords(buf, r)
		buf = append(buf, `" fill="url(#hatch-`...)
		buf = append(buf, d.metric...)
		buf = append(buf, `)" pointer-events="none"/>`+"\n"...)
	}
	if len(n.kids) == 0 {
		buf = label(buf, n, r, "", r.Y+r.H/2+4)
	}
	return buf
}

// groupLabel outlines a group and names it at its top left, when the
// group has children (a childless group was labelled with its rect).
func (d *drawer) groupLabel(buf []byte, it placed) []byte {
	buf = append(buf, `<rect class="outline`...)
	buf = coords(buf, it.r)
	buf = append(buf, `" fill="none" stroke="#fff" stroke-width="2" pointer-events="none"/>`+"\n"...)
	if len(it.n.kids) > 0 {
		buf = label(buf, it.n, it.r, "group", it.r.Y+13)
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

// label writes n's name in r when r is large enough for a few
// characters, cut to fit (at about 6.5 units a character).
func label(buf []byte, n *tnode, r treemap.Rect, class string, y float64) []byte {
	if r.W < 30 || r.H < 14 {
		return buf
	}
	var name []byte
	if n.est {
		name = append(name, markEstimate)
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
	room := int((r.W - 6) / 6.5)
	if utf8.RuneCount(name) > room {
		cut := 0
		for range room - 1 {
			_, size := utf8.DecodeRune(name[cut:])
			cut += size
		}
		name = append(name[:cut], "…"...)
	}
	buf = append(buf, `<text`...)
	if class != "" {
		buf = append(buf, ` class="`...)
		buf = append(buf, class...)
		buf = append(buf, '"')
	}
	buf = append(buf, ` x="`...)
	buf = strconv.AppendFloat(buf, r.X+3, 'f', 2, 64)
	buf = append(buf, `" y="`...)
	buf = strconv.AppendFloat(buf, y, 'f', 2, 64)
	buf = append(buf, `">`...)
	buf = escapeText(buf, string(name))
	return append(buf, "</text>\n"...)
}

// title writes the hover text of n: its name and exact figures.
func (d *drawer) title(buf []byte, n *tnode) []byte {
	buf = append(buf, n.level...)
	buf = append(buf, ": "...)
	if n.name != "" || n.pid == 0 {
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
		buf = strconv.AppendFloat(buf, 100*float64(n.value(d.swap))/float64(d.total), 'f', 1, 64)
		buf = append(buf, "% of the "...)
		buf = append(buf, d.metric...)
		buf = append(buf, " shown"...)
	}
	if n.count > 1 {
		buf = append(buf, '\n')
		buf = strconv.AppendInt(buf, int64(n.count), 10)
		buf = append(buf, " processes"...)
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
