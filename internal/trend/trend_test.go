package trend

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSlopeMatchesSortedMedian: selection gives the median a full sort
// gives, with the watch's units (nanoseconds in, bytes per second out).
func TestSlopeMatchesSortedMedian(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var scratch []float64
	for n := 2; n < 40; n++ {
		pts := make([]Point, n)
		for i := range n {
			pts[i] = Point{T: float64(int64(i)*1e9 + rng.Int64N(5e8)), V: float64(rng.IntN(1000) << 10)}
		}
		var got float64
		got, scratch = Slope(pts, 1e9, scratch)
		var slopes []float64
		for i := range n {
			for j := i + 1; j < n; j++ {
				slopes = append(slopes, (pts[j].V-pts[i].V)/((pts[j].T-pts[i].T)/1e9))
			}
		}
		slices.Sort(slopes)
		want := slopes[len(slopes)/2]
		if len(slopes)%2 == 0 {
			want = (slopes[len(slopes)/2-1] + want) / 2
		}
		if got != want {
			t.Errorf("n=%d: Slope = %v, sorted median = %v", n, got, want)
		}
	}
}

func TestTheilSen(t *testing.T) {
	// A line with one wild point: the fit ignores it.
	pts := []Point{{0, 10}, {1, 12}, {2, 14}, {3, 1e9}, {4, 18}, {5, 20}}
	if s, i := TheilSen(pts); s != 2 || i != 10 {
		t.Errorf("TheilSen = %v, %v; want 2, 10", s, i)
	}
	if s, i := TheilSen([]Point{{1, 5}, {1, 7}}); s != 0 || i != 6 {
		t.Errorf("equal times: %v, %v; want 0 and the median value 6", s, i)
	}
	if s, i := TheilSen([]Point{{0, 5}}); s != 0 || i != 5 {
		t.Errorf("one point: %v, %v; want 0, 5", s, i)
	}
	if s, _ := Slope([]Point{{0, 3}, {1, 3}, {2, 3}}, 1, nil); s != 0 {
		t.Errorf("flat: slope %v, want 0", s)
	}
	if s, _ := Slope([]Point{{2, 3}, {1, 9}}, 1, nil); s != 0 {
		t.Errorf("time going backwards: slope %v, want 0 (no usable pair)", s)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{2, 1}, 1.5},
		{[]float64{5, 5, 5, 5}, 5},
		{[]float64{1, 2, 3, 4, 5, 6, 7}, 4},
		{[]float64{7, 6, 5, 4, 3, 2, 1, 0}, 3.5},
		{[]float64{1, 1, 1, 9, 9, 9, 1, 9}, 5},
		{[]float64{-1, math.Inf(1), 0}, 0},
	} {
		if got := Median(slices.Clone(tc.in)); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
