// Package leaks ranks what grows in recorded memory history: groups and
// long-lived processes whose footprint (PSS + swap) rises steadily over a
// window, with how fast (a robust slope in bytes per hour), how steadily,
// and how long until it would exhaust the memory left to it.
//
// # The fit
//
// The slope is the Theil–Sen estimator (package trend, which the live
// watch uses too): the median of the slopes between every pair of points. Up to 29% of the points can be arbitrarily wrong
// (a spike, a burst at start-up, a garbage collection) without moving
// it, where a least-squares line follows every outlier. Series longer
// than maxFitPoints are first reduced to that many points (the median of
// each run of consecutive samples), which keeps the pairwise work bounded
// (at most 20,000 pairs per series) whatever the interval.
//
// # Growth that keeps on
//
// A series that grew and then stopped (a program warming up its caches,
// a recorder while its host went from 360 to 1,000 processes) has a
// positive slope over the window but is no leak. The growth a series is
// ranked by is the smaller of two slopes: the window's and that of its
// latest half (by time). A leak grows through both; a warm-up that ended
// before the latest half began has a slope of about 0 there, and is not
// listed. No program is treated apart (memwho's own recorder and agent
// included): each is judged by its series.
//
// Steadiness is the fraction of consecutive steps that do not go down: 1
// for a leak that never gives anything back, about 0.5 for a series that
// only wobbles. R² says how well the robust line explains the series (1
// for a straight line).
//
// # Exhaustion
//
// The headroom of a series is the host's MemAvailable + SwapFree at the
// latest sample, or, when the series is under a cgroup memory limit with
// less room left, that room (the limit minus the limiting cgroup's usage).
// Time to exhaustion is headroom / slope: when the series would run out at
// the current rate, not a prediction that it will.
//
// It reads samples through store.Store.Samples and keeps one point (16
// bytes) per series per sample in memory.
package leaks

import (
	"cmp"
	"slices"

	"github.com/memwho/memwho/internal/trend"
)

// Point is one observation: T in hours (from any fixed origin), V in
// bytes.
type Point = trend.Point

// Fit describes a series' trend.
type Fit struct {
	// Slope is the window's, in bytes per hour (Theil–Sen); Intercept in
	// bytes at T=0.
	Slope, Intercept float64
	// Recent is the slope of the series' latest half (the points at or
	// after the middle of its span), in bytes per hour (Theil–Sen);
	// Slope when that half holds fewer than 3 points.
	Recent float64
	// Growth is the smaller of Slope and Recent, in bytes per hour: the
	// growth the whole window and its latest half agree on, which Rank
	// orders and filters by.
	Growth float64
	// Steady is the fraction of consecutive steps that do not go down,
	// 0 to 1.
	Steady float64
	// R2 is the coefficient of determination of the robust line, at most
	// 1 (negative when the line fits worse than the mean).
	R2 float64
	// N is the number of points.
	N int
}

// maxFitPoints bounds the points the slope is computed from.
const maxFitPoints = 200

// Analyze fits pts, which must be in time order.
func Analyze(pts []Point) Fit {
	f, _ := analyze(pts, nil)
	return f
}

// analyze is Analyze with scratch space for the fit, handed back.
func analyze(pts []Point, scratch []float64) (Fit, []float64) {
	f := Fit{N: len(pts)}
	if len(pts) < 2 {
		return f, scratch
	}
	up := 0
	for i := 1; i < len(pts); i++ {
		if pts[i].V >= pts[i-1].V {
			up++
		}
	}
	f.Steady = float64(up) / float64(len(pts)-1)
	f.Slope, f.Intercept, scratch = trend.TheilSenScratch(reduce(pts, maxFitPoints), scratch)
	f.Recent = f.Slope
	mid := (pts[0].T + pts[len(pts)-1].T) / 2
	half, _ := slices.BinarySearchFunc(pts, mid, func(p Point, t float64) int { return cmp.Compare(p.T, t) })
	if late := pts[half:]; len(late) >= 3 {
		f.Recent, _, scratch = trend.TheilSenScratch(reduce(late, maxFitPoints), scratch)
	}
	f.Growth = min(f.Slope, f.Recent)
	var mean float64
	for _, p := range pts {
		mean += p.V
	}
	mean /= float64(len(pts))
	var res, tot float64
	for _, p := range pts {
		d := p.V - (f.Intercept + f.Slope*p.T)
		res += d * d
		m := p.V - mean
		tot += m * m
	}
	f.R2 = 1
	if tot > 0 {
		f.R2 = 1 - res/tot
	}
	return f, scratch
}

// reduce returns pts cut into at most max runs of consecutive points,
// each replaced by its mean time and median value; pts itself when it is
// short enough.
func reduce(pts []Point, max int) []Point {
	if len(pts) <= max {
		return pts
	}
	out := make([]Point, 0, max)
	var vals []float64
	for b := 0; b < max; b++ {
		lo, hi := b*len(pts)/max, (b+1)*len(pts)/max
		vals = vals[:0]
		var t float64
		for _, p := range pts[lo:hi] {
			t += p.T
			vals = append(vals, p.V)
		}
		out = append(out, Point{T: t / float64(hi-lo), V: trend.Median(vals)})
	}
	return out
}
