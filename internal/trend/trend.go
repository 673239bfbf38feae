// Package trend fits the robust straight line that memwho's two growth
// views share: the live watch's rate column and leak flag (package watch)
// and the leak ranking of recorded history (package leaks). Both use the
// Theil–Sen estimator, the median of the slopes between every pair of
// points, because a spike, a start-up burst or a garbage collection moves
// a least-squares line but not this median; keeping one implementation
// keeps the two views from disagreeing about the same series.
package trend

import "slices"

// Point is one observation: T in any unit of time, V in any unit of
// value. Callers keep T small (relative to the first point) when they
// need exact differences: float64 holds integers exactly only below 2⁵³.
type Point struct {
	T, V float64
}

// Slope returns the Theil–Sen slope of pts, the median over every pair
// i < j whose times differ (Tj > Ti) of (Vj − Vi) / ((Tj − Ti) / per), in
// units of V per `per` units of T, and scratch for reuse. Pairs with
// Tj <= Ti are skipped: two readings at one instant say nothing about a
// rate. Fewer than one usable pair, or a flat series, give 0. It is O(n²)
// in time and in the size of scratch.
func Slope(pts []Point, per float64, scratch []float64) (float64, []float64) {
	n := len(pts)
	if n < 2 {
		return 0, scratch
	}
	flat := true
	for _, p := range pts[1:] {
		if p.V != pts[0].V {
			flat = false
			break
		}
	}
	if flat {
		return 0, scratch
	}
	if pairs := n * (n - 1) / 2; cap(scratch) < pairs {
		// Once, at its size: growing by appending would allocate about
		// twice the n² slopes of a fit.
		scratch = make([]float64, 0, pairs)
	}
	scratch = scratch[:0]
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			dt := pts[j].T - pts[i].T
			if dt <= 0 {
				continue
			}
			// dt/per rather than a precomputed factor: the rate then
			// rounds the same way whatever unit the caller counts in.
			scratch = append(scratch, (pts[j].V-pts[i].V)/(dt/per))
		}
	}
	return Median(scratch), scratch
}

// TheilSen returns the Theil–Sen slope of pts (in units of V per unit of
// T, see Slope) and the median of the intercepts through each point with
// that slope. With no usable pair the slope is 0 and the intercept the
// median value.
func TheilSen(pts []Point) (slope, intercept float64) {
	slope, intercept, _ = TheilSenScratch(pts, nil)
	return slope, intercept
}

// TheilSenScratch is TheilSen with the O(n²) scratch space of Slope
// passed in and handed back for reuse: a ranking of a fleet's 400,000
// series fits them all without allocating 400,000 times.
func TheilSenScratch(pts []Point, scratch []float64) (slope, intercept float64, _ []float64) {
	switch len(pts) {
	case 0:
		return 0, 0, scratch
	case 1:
		return 0, pts[0].V, scratch
	}
	slope, scratch = Slope(pts, 1, scratch)
	icpt := scratch[:0]
	for _, p := range pts {
		icpt = append(icpt, p.V-slope*p.T)
	}
	return slope, Median(icpt), icpt
}

// Median returns the median of xs (the mean of the two middle values for
// an even count), reordering xs; 0 for no values. It selects rather than
// sorts: linear time on average, which matters for the n² slopes of a
// fit.
func Median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return 0
	}
	k := n / 2
	hi := quickselect(xs, k)
	if n%2 == 1 {
		return hi
	}
	// The lower middle value is the largest of the part left of k.
	return (slices.Max(xs[:k]) + hi) / 2
}

// quickselect reorders xs so that xs[k] holds the value it would have
// sorted, with no larger value before it and no smaller one after, and
// returns xs[k].
func quickselect(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		// Median of three as the pivot: sorted or reversed input (a
		// steady leak gives sorted slopes) stays linear.
		mid := lo + (hi-lo)/2
		if xs[mid] < xs[lo] {
			xs[mid], xs[lo] = xs[lo], xs[mid]
		}
		if xs[hi] < xs[lo] {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if xs[hi] < xs[mid] {
			xs[hi], xs[mid] = xs[mid], xs[hi]
		}
		p := xs[mid]
		i, j := lo, hi
		for i <= j {
			for xs[i] < p {
				i++
			}
			for xs[j] > p {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}
