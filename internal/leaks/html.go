package leaks

import (
	"io"
	"math"
	"strconv"
	"time"

	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/store"
)

// The chart of one series, in SVG user units: the plot area sits inside
// margins that hold the axes' labels.
const (
	chartW, chartH = 720.0, 220.0
	marginL        = 80.0
	marginR        = 10.0
	marginT        = 10.0
	marginB        = 24.0
	// maxPlotted bounds the points drawn per chart: longer series are
	// drawn as the lowest and highest value of each of maxPlotted/2
	// runs of samples, which keeps their spikes.
	maxPlotted = 800
)

// writeHTML writes the page of the listing: one section per series,
// its footprint over the window as a line, the fitted line dashed, and
// its figures (growth, steadiness, R², time to exhaustion) in words.
// The page is self-contained (its Content Security Policy forbids every
// fetch); names pass through report.AppendHTML. Its script checks that
// each chart drew the points it says and sets data-check="ok" on the
// root element.
func (rep *Report) writeHTML(w io.Writer, samples int, ranked []Leak) error {
	b := make([]byte, 0, 64<<10)
	b = append(b, `<!DOCTYPE html>
<html lang="en" data-check="pending">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>memwho leaks</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1em 2em; color: #222; background: #fff; }
svg.leak { width: 100%; max-width: 900px; height: auto; display: block; }
svg.leak text { font: 11px sans-serif; fill: #444; }
.data { fill: none; stroke: #1f77b4; stroke-width: 1.5; }
.fit { stroke: #d62728; stroke-width: 1.5; stroke-dasharray: 6 4; }
.axis { stroke: #888; stroke-width: 1; }
.grid { stroke: #ddd; stroke-width: 1; }
table { border-collapse: collapse; font-size: 13px; margin-bottom: 1em; }
th, td { padding: 1px 8px; text-align: right; border-bottom: 1px solid #eee; }
th.name, td.name { text-align: left; }
section:target h2 { background: #ffe98a; }
section { margin-bottom: 1.5em; }
</style>
</head>
<body>
<h1>memwho leaks: memory growth over `...)
	b = append(b, formatSpan(rep.Window)...)
	b = append(b, " to "...)
	b = append(b, rep.Until.UTC().Format("2006-01-02 15:04 UTC")...)
	b = append(b, "</h1>\n<p>"...)
	if rep.Host != "" {
		b = append(b, "Host "...)
		b = report.AppendHTML(b, rep.Host)
		b = append(b, ", "...)
	}
	b = strconv.AppendInt(b, int64(samples), 10)
	b = append(b, " samples. Each chart is a footprint (PSS + swap) over the window, its robust (Theil–Sen) line dashed.</p>\n"...)
	if len(ranked) == 0 {
		b = append(b, "<p>Nothing grew by more than "...)
		b = report.HumanBytes(b, uint64(rep.MinGrowth))
		b = append(b, " per hour.</p>\n"...)
	}
	if len(ranked) > 0 {
		b = summary(b, ranked, rep.Host == "")
	}
	sc := commonScale(ranked)
	for i := range ranked {
		b = chart(b, i, &ranked[i], rep.Host == "", sc)
	}
	b = append(b, "<script>\n"+leaksCheck+"</script>\n</body>\n</html>\n"...)
	_, err := w.Write(b)
	return err
}

// scale is the axes every chart of a page shares, so that their slopes
// compare by eye: one window of time, and bytes from 0 to the largest
// value any chart draws. Each chart's y axis started at its own minimum,
// and +0.7 MiB/h looked as steep as +114 MiB/h.
type scale struct {
	t0, t1 float64 // hours since the series' Origin
	hi     float64 // bytes
}

// commonScale is the scale of ranked's charts.
func commonScale(ranked []Leak) scale {
	sc := scale{t0: math.Inf(1), t1: math.Inf(-1), hi: 1}
	for i := range ranked {
		l := &ranked[i]
		t0, t1 := l.First.Sub(l.Origin).Hours(), l.Last.Sub(l.Origin).Hours()
		sc.t0, sc.t1 = math.Min(sc.t0, t0), math.Max(sc.t1, t1)
		for _, p := range plotted(l.Points) {
			sc.hi = math.Max(sc.hi, p.V)
		}
		for _, t := range []float64{t0, t1} {
			sc.hi = math.Max(sc.hi, l.Intercept+l.Slope*t)
		}
	}
	if !(sc.t1 > sc.t0) {
		sc.t1 = sc.t0 + 1.0/60
	}
	sc.hi *= 1.05
	return sc
}

// summary appends the table of every series listed, fastest growth
// first within each kind, each linking to its chart.
func summary(b []byte, ranked []Leak, showHost bool) []byte {
	b = append(b, `<table id="summary">
<thead><tr><th>#</th><th class="name">kind</th><th class="name">name</th><th>growth/h</th><th>window/h</th><th>latest half/h</th><th>steady</th><th>now</th><th>full in</th>`...)
	if showHost {
		b = append(b, `<th class="name">host</th>`...)
	}
	b = append(b, "</tr></thead>\n<tbody>\n"...)
	for i := range ranked {
		l := &ranked[i]
		b = append(b, `<tr data-growth="`...)
		b = strconv.AppendFloat(b, l.Growth, 'f', 0, 64)
		b = append(b, `"><td>`...)
		b = strconv.AppendInt(b, int64(i+1), 10)
		b = append(b, `</td><td class="name">`...)
		b = append(b, l.Kind.String()...)
		b = append(b, `</td><td class="name"><a href="#s`...)
		b = strconv.AppendInt(b, int64(i+1), 10)
		b = append(b, `">`...)
		b = report.AppendHTML(b, store.KeyName(l.Key))
		if l.PID != 0 {
			b = append(b, " ["...)
			b = strconv.AppendInt(b, int64(l.PID), 10)
			b = append(b, ']')
		}
		b = append(b, "</a></td><td>"...)
		for k, v := range []float64{l.Growth, l.Slope, l.Recent} {
			if k > 0 {
				b = append(b, "</td><td>"...)
			}
			b = appendRate(b, v)
		}
		b = append(b, "</td><td>"...)
		b = strconv.AppendInt(b, int64(math.Round(l.Steady*100)), 10)
		b = append(b, "%</td><td>"...)
		b = report.HumanBytes(b, l.Footprint)
		b = append(b, "</td><td>"...)
		switch {
		case l.Fills:
			b = append(b, formatSpan(l.TimeToFull)...)
			if l.Limited {
				b = append(b, '*')
			}
		default:
			b = append(b, '-')
		}
		b = append(b, "</td>"...)
		if showHost {
			b = append(b, `<td class="name">`...)
			b = report.AppendHTML(b, l.Host)
			b = append(b, "</td>"...)
		}
		b = append(b, "</tr>\n"...)
	}
	return append(b, "</tbody>\n</table>\n<p>Growth/h is the smaller of the window's slope and its latest half's: growth that stopped is not listed. * under a cgroup memory limit. Every chart below is drawn on the same axes, bytes from 0 and the same window, so that their slopes compare.</p>\n"...)
}

// appendRate appends a rate in bytes per hour: "+1.2 GiB", "-3.0 MiB".
func appendRate(b []byte, v float64) []byte {
	if v < 0 {
		b = append(b, '-')
		return report.HumanBytes(b, uint64(-v))
	}
	b = append(b, '+')
	return report.HumanBytes(b, uint64(v))
}

// chart appends one series' section, i its rank, drawn on sc.
func chart(b []byte, i int, l *Leak, showHost bool, sc scale) []byte {
	b = append(b, `<section id="s`...)
	b = strconv.AppendInt(b, int64(i+1), 10)
	b = append(b, `">`+"\n<h2>"...)
	b = append(b, l.Kind.String()...)
	b = append(b, ": "...)
	b = report.AppendHTML(b, store.KeyName(l.Key))
	if l.PID != 0 {
		b = append(b, " [pid "...)
		b = strconv.AppendInt(b, int64(l.PID), 10)
		b = append(b, ']')
	}
	if showHost {
		b = append(b, " on "...)
		b = report.AppendHTML(b, l.Host)
	}
	b = append(b, "</h2>\n<p>+"...)
	b = report.HumanBytes(b, uint64(math.Max(l.Growth, 0)))
	b = append(b, " per hour ("...)
	b = strconv.AppendFloat(b, math.Round(l.Growth), 'f', 0, 64)
	b = append(b, " bytes/h; over the window "...)
	b = appendRate(b, l.Slope)
	b = append(b, "/h, its latest half "...)
	b = appendRate(b, l.Recent)
	b = append(b, "/h), steady "...)
	b = strconv.AppendInt(b, int64(math.Round(l.Steady*100)), 10)
	b = append(b, "%, R² "...)
	b = strconv.AppendFloat(b, math.Max(l.R2, 0), 'f', 2, 64)
	b = append(b, ", now "...)
	b = report.HumanBytes(b, l.Footprint)
	b = append(b, " ("...)
	b = strconv.AppendUint(b, l.Footprint, 10)
	b = append(b, " bytes). "...)
	switch {
	case l.Fills:
		b = append(b, "At this rate it would exhaust its headroom ("...)
		b = report.HumanBytes(b, l.Headroom)
		if l.Limited {
			b = append(b, " left under its cgroup limit of "...)
			b = report.HumanBytes(b, l.Limit)
		} else {
			b = append(b, ", MemAvailable + SwapFree"...)
		}
		b = append(b, ") in <strong>"...)
		b = append(b, formatSpan(l.TimeToFull)...)
		b = append(b, "</strong>, about "...)
		b = append(b, l.Last.Add(l.TimeToFull).UTC().Format("2006-01-02 15:04 UTC")...)
		b = append(b, "."...)
	default:
		b = append(b, "Its headroom is not known: no time to exhaustion."...)
	}
	b = append(b, "</p>\n"...)

	pts := plotted(l.Points)
	t0, t1 := l.First.Sub(l.Origin).Hours(), l.Last.Sub(l.Origin).Hours()
	lo, hi := 0.0, sc.hi
	x := func(t float64) float64 { return marginL + (t-sc.t0)/(sc.t1-sc.t0)*(chartW-marginL-marginR) }
	y := func(v float64) float64 { return chartH - marginB - (v-lo)/(hi-lo)*(chartH-marginT-marginB) }

	b = append(b, `<svg class="leak" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 720 220" width="720" height="220" data-n="`...)
	b = strconv.AppendInt(b, int64(len(pts)), 10)
	b = append(b, `" data-slope="`...)
	b = strconv.AppendFloat(b, l.Slope, 'g', -1, 64)
	// The axes every chart shares: bytes from 0 to data-ymax, the
	// window from data-t0 to data-t1 (hours).
	b = append(b, `" data-ymax="`...)
	b = strconv.AppendFloat(b, hi, 'g', -1, 64)
	b = append(b, `" data-t0="`...)
	b = strconv.AppendFloat(b, sc.t0, 'g', -1, 64)
	b = append(b, `" data-t1="`...)
	b = strconv.AppendFloat(b, sc.t1, 'g', -1, 64)
	b = append(b, `" role="img"><title>`...)
	b = report.AppendHTML(b, store.KeyName(l.Key))
	b = append(b, ": footprint over time, fitted line dashed</title>\n"...)
	// Axes, with the value range and the window's ends.
	b = appendf(b, `<line class="axis" x1="%" y1="%" x2="%" y2="%"/>`+"\n", marginL, marginT, marginL, chartH-marginB)
	b = appendf(b, `<line class="axis" x1="%" y1="%" x2="%" y2="%"/>`+"\n", marginL, chartH-marginB, chartW-marginR, chartH-marginB)
	b = appendf(b, `<text x="%" y="%" text-anchor="end">`, marginL-4, marginT+8)
	b = report.HumanBytes(b, uint64(hi))
	b = appendf(b, `</text>`+"\n"+`<text x="%" y="%" text-anchor="end">`, marginL-4, chartH-marginB)
	b = report.HumanBytes(b, uint64(lo))
	b = appendf(b, `</text>`+"\n"+`<text x="%" y="%" text-anchor="end">`, marginL-4, y(hi/2)+4)
	b = report.HumanBytes(b, uint64(hi/2))
	b = appendf(b, `</text>`+"\n"+`<line class="grid" x1="%" y1="%" x2="%" y2="%"/>`+"\n", marginL, y(hi/2), chartW-marginR, y(hi/2))
	origin := l.Origin
	b = appendf(b, `<text x="%" y="%">`, marginL, chartH-6)
	b = append(b, origin.Add(time.Duration(sc.t0*float64(time.Hour))).UTC().Format("01-02 15:04")...)
	b = appendf(b, `</text>`+"\n"+`<text x="%" y="%" text-anchor="end">`, chartW-marginR, chartH-6)
	b = append(b, origin.Add(time.Duration(sc.t1*float64(time.Hour))).UTC().Format("01-02 15:04 UTC")...)
	b = append(b, "</text>\n"...)
	b = append(b, `<polyline class="data" points="`...)
	for i, p := range pts {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendFloat(b, x(p.T), 'f', 2, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, y(p.V), 'f', 2, 64)
	}
	b = append(b, `"/>`+"\n"...)
	b = appendf(b, `<line class="fit" x1="%" y1="%" x2="%" y2="%"/>`+"\n",
		x(t0), y(l.Intercept+l.Slope*t0), x(t1), y(l.Intercept+l.Slope*t1))
	return append(b, "</svg>\n</section>\n"...)
}

// appendf appends format with each % replaced by the next number,
// with two decimals.
func appendf(b []byte, format string, args ...float64) []byte {
	for i := 0; i < len(format); i++ {
		if format[i] == '%' && len(args) > 0 {
			b = strconv.AppendFloat(b, args[0], 'f', 2, 64)
			args = args[1:]
			continue
		}
		b = append(b, format[i])
	}
	return b
}

// plotted returns pts, or for a long series the lowest and highest
// point of each of maxPlotted/2 runs, in time order.
func plotted(pts []Point) []Point {
	if len(pts) <= maxPlotted {
		return pts
	}
	runs := maxPlotted / 2
	out := make([]Point, 0, maxPlotted)
	for r := range runs {
		run := pts[r*len(pts)/runs : (r+1)*len(pts)/runs]
		lo, hi := run[0], run[0]
		for _, p := range run {
			if p.V < lo.V {
				lo = p
			}
			if p.V > hi.V {
				hi = p
			}
		}
		if hi.T < lo.T {
			lo, hi = hi, lo
		}
		out = append(out, lo)
		if hi != lo {
			out = append(out, hi)
		}
	}
	return out
}

// leaksCheck is the page's script: every chart drew as many points as
// its data-n says, all inside the chart.
const leaksCheck = `(function () {
  var bad = [];
  var charts = document.querySelectorAll("svg.leak");
  for (var i = 0; i < charts.length; i++) {
    var c = charts[i];
    var line = c.querySelector("polyline.data");
    var n = line ? line.points.numberOfItems : 0;
    if (n !== Number(c.getAttribute("data-n"))) bad.push("chart " + i + ": " + n + " points, want " + c.getAttribute("data-n"));
    for (var j = 0; line && j < n; j++) {
      var p = line.points.getItem(j);
      if (!(p.x >= 0 && p.x <= 720 && p.y >= 0 && p.y <= 220)) { bad.push("chart " + i + ": point " + j + " outside"); break; }
    }
  }
  document.documentElement.setAttribute("data-check", bad.length ? "fail: " + bad.join("; ") : "ok");
})();
`
