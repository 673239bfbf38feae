package treemap

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestSquarify(t *testing.T) {
	many := make([]float64, 500)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range many {
		many[i] = float64(1 + r.IntN(1<<30))
	}
	tests := []struct {
		name   string
		values []float64
		parent Rect
	}{
		{"one", []float64{42}, Rect{0, 0, 1000, 500}},
		{"two equal", []float64{1, 1}, Rect{0, 0, 1000, 500}},
		{"paper example", []float64{6, 6, 4, 3, 2, 2, 1}, Rect{0, 0, 6, 4}},
		{"unsorted", []float64{1, 9, 3, 27, 2}, Rect{10, 20, 300, 700}},
		{"tall parent", []float64{5, 4, 3, 2, 1}, Rect{0, 0, 10, 1000}},
		{"with zeros", []float64{0, 8 << 20, 0, 4 << 20, 2 << 20}, Rect{0, 0, 1000, 500}},
		// A 4 KiB process beside gigabytes, as real hosts have.
		{"wide range", []float64{4096, 1 << 33, 3 << 30, 1 << 20, 12288}, Rect{0, 0, 1000, 500}},
		{"many random", many, Rect{0, 0, 1000, 500}},
		{"ties", []float64{7, 7, 7, 7, 7, 7, 7}, Rect{0, 0, 3, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Squarify(tc.values, tc.parent)
			if len(got) != len(tc.values) {
				t.Fatalf("got %d rectangles for %d values", len(got), len(tc.values))
			}
			var sum float64
			for _, v := range tc.values {
				sum += v
			}
			var area float64
			for i, v := range tc.values {
				want := tc.parent.Area() * v / sum
				a := got[i].Area()
				area += a
				if v == 0 {
					if a != 0 {
						t.Errorf("value 0 (#%d): area %g, want 0", i, a)
					}
					continue
				}
				if rel := math.Abs(a-want) / want; rel > 1e-9 {
					t.Errorf("#%d (value %g): area %g, want %g (relative error %.3g)", i, v, a, want, rel)
				}
				if !inside(got[i], tc.parent) {
					t.Errorf("#%d: %+v is not inside the parent %+v", i, got[i], tc.parent)
				}
			}
			if rel := math.Abs(area-tc.parent.Area()) / tc.parent.Area(); rel > 1e-9 {
				t.Errorf("areas sum to %g, the parent's is %g", area, tc.parent.Area())
			}
			for i := range got {
				for j := i + 1; j < len(got); j++ {
					if o := overlap(got[i], got[j]); o > 1e-9*tc.parent.Area() {
						t.Errorf("#%d %+v and #%d %+v overlap by %g", i, got[i], j, got[j], o)
					}
				}
			}
		})
	}
}

// TestSquarifyAspect checks the point of squarifying: equal values in a
// square come out as squares.
func TestSquarifyAspect(t *testing.T) {
	got := Squarify([]float64{1, 1, 1, 1}, Rect{0, 0, 2, 2})
	for i, r := range got {
		if math.Abs(r.W-1) > 1e-12 || math.Abs(r.H-1) > 1e-12 {
			t.Errorf("#%d: %+v, want a 1×1 square", i, r)
		}
	}
}

func TestSquarifyDegenerate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []float64
		parent Rect
	}{
		{"nil", nil, Rect{0, 0, 10, 10}},
		{"all zero", []float64{0, 0}, Rect{0, 0, 10, 10}},
		{"negative and NaN", []float64{-1, math.NaN(), math.Inf(1)}, Rect{0, 0, 10, 10}},
		{"empty parent", []float64{1, 2}, Rect{5, 5, 0, 10}},
	} {
		for i, r := range Squarify(tc.values, tc.parent) {
			if r.Area() != 0 {
				t.Errorf("%s: #%d has area %g, want 0", tc.name, i, r.Area())
			}
		}
	}
}

// inside allows the rounding of a sum of widths.
func inside(r, p Rect) bool {
	const eps = 1e-9
	return r.W >= 0 && r.H >= 0 && r.X >= p.X-eps && r.Y >= p.Y-eps &&
		r.X+r.W <= p.X+p.W+eps && r.Y+r.H <= p.Y+p.H+eps
}

func overlap(a, b Rect) float64 {
	w := min(a.X+a.W, b.X+b.W) - max(a.X, b.X)
	h := min(a.Y+a.H, b.Y+b.H) - max(a.Y, b.Y)
	if w <= 0 || h <= 0 {
		return 0
	}
	return w * h
}

func BenchmarkSquarify(b *testing.B) {
	values := make([]float64, 1000)
	for i := range values {
		values[i] = float64(1000 - i)
	}
	for b.Loop() {
		Squarify(values, Rect{0, 0, 1000, 500})
	}
}
