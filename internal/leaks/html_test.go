package leaks

import (
	"math"
	"testing"
)

// TestPlotted: a long series is drawn with at most maxPlotted points, in
// time order, keeping its lowest and highest values (a spike stays
// visible).
func TestPlotted(t *testing.T) {
	for _, n := range []int{0, 1, maxPlotted, maxPlotted + 1, 10080} {
		pts := make([]Point, n)
		for i := range pts {
			pts[i] = Point{T: float64(i) / 60, V: float64(i % 7)}
		}
		if n > 100 {
			pts[n/3].V = 1e9 // a spike
		}
		got := plotted(pts)
		if n <= maxPlotted && len(got) != n {
			t.Errorf("n=%d: %d points drawn, want all", n, len(got))
		}
		if len(got) > maxPlotted {
			t.Errorf("n=%d: %d points drawn, want at most %d", n, len(got), maxPlotted)
		}
		hi := math.Inf(-1)
		for i, p := range got {
			hi = math.Max(hi, p.V)
			if i > 0 && p.T < got[i-1].T {
				t.Errorf("n=%d: point %d out of time order", n, i)
			}
		}
		if n > 100 && hi != 1e9 {
			t.Errorf("n=%d: the spike was dropped", n)
		}
	}
}
