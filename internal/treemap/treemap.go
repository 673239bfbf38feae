// Package treemap lays out values as rectangles that tile a parent
// rectangle, each with an area proportional to its value: the squarified
// layout of Bruls, Huizing and van Wijk ("Squarified Treemaps", 2000),
// which keeps the rectangles close to squares so that their areas can be
// compared by eye.
//
// It is a pure function of its input, in float64 units of whatever the
// caller draws in (SVG user units for memwho's pages).
package treemap

import (
	"cmp"
	"math"
	"slices"
)

// Rect is an axis-aligned rectangle: X and Y its top-left corner, W and H
// its width and height, all in the caller's units.
type Rect struct{ X, Y, W, H float64 }

// Area returns W×H.
func (r Rect) Area() float64 { return r.W * r.H }

// Squarify divides parent among values and returns one rectangle per
// value, in the order of values. Each rectangle's area is
// parent.Area()×value/sum(values); together they tile parent without
// overlap. Values that are zero, negative or not finite get an empty
// rectangle at parent's corner; so does every value when they sum to 0.
//
// The values are placed largest first, each row along the shorter side
// of what is left, a row closed when one more value would make its
// worst aspect ratio worse. Ties keep their input order, so the layout
// is deterministic.
func Squarify(values []float64, parent Rect) []Rect {
	out := make([]Rect, len(values))
	for i := range out {
		out[i] = Rect{X: parent.X, Y: parent.Y}
	}
	var sum float64
	order := make([]int, 0, len(values))
	for i, v := range values {
		if v > 0 && !math.IsInf(v, 1) {
			sum += v
			order = append(order, i)
		}
	}
	if sum <= 0 || math.IsInf(sum, 1) || parent.W <= 0 || parent.H <= 0 {
		return out
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(values[b], values[a]) })
	scale := parent.Area() / sum
	free := parent
	for len(order) > 0 {
		side := min(free.W, free.H)
		// Grow the row while the worst aspect ratio improves.
		n, rowSum := 1, values[order[0]]*scale
		best := worst(order[:1], values, scale, rowSum, side)
		for n < len(order) {
			s := rowSum + values[order[n]]*scale
			w := worst(order[:n+1], values, scale, s, side)
			if w > best {
				break
			}
			n, rowSum, best = n+1, s, w
		}
		row := order[:n]
		order = order[n:]
		last := len(order) == 0
		free = layRow(out, row, values, scale, rowSum, free, last)
	}
	return out
}

// worst returns the largest aspect ratio (≥ 1) of the rectangles of row
// laid along a side of length side, their areas summing to rowSum.
func worst(row []int, values []float64, scale, rowSum, side float64) float64 {
	thick := rowSum / side
	var w float64
	for _, i := range row {
		length := values[i] * scale / thick
		r := length / thick
		if r < 1 {
			r = 1 / r
		}
		w = max(w, r)
	}
	return w
}

// layRow places row along free's shorter side and returns what is left
// of free. The last row takes all of free, and the last rectangle of a
// row ends exactly at the row's end, so that rounding never leaves a
// gap or an overlap.
func layRow(out []Rect, row []int, values []float64, scale, rowSum float64, free Rect, last bool) Rect {
	if free.W >= free.H {
		// A column at the left of free, as tall as free.
		thick := rowSum / free.H
		if last {
			thick = free.W
		}
		y := free.Y
		for k, i := range row {
			h := values[i] * scale / thick
			if k == len(row)-1 {
				h = free.Y + free.H - y
			}
			out[i] = Rect{X: free.X, Y: y, W: thick, H: h}
			y += h
		}
		return Rect{X: free.X + thick, Y: free.Y, W: max(free.W-thick, 0), H: free.H}
	}
	// A row at the top of free, as wide as free.
	thick := rowSum / free.W
	if last {
		thick = free.H
	}
	x := free.X
	for k, i := range row {
		w := values[i] * scale / thick
		if k == len(row)-1 {
			w = free.X + free.W - x
		}
		out[i] = Rect{X: x, Y: free.Y, W: w, H: thick}
		x += w
	}
	return Rect{X: free.X, Y: free.Y + thick, W: free.W, H: max(free.H-thick, 0)}
}
