package main

import (
	"slices"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		in   []string
		a, b []string
		ok   bool
	}{
		{[]string{"--", "x", "-v", "--", "y"}, []string{"x", "-v"}, []string{"y"}, true},
		{[]string{"x", "--", "y", "-n", "3"}, []string{"x"}, []string{"y", "-n", "3"}, true},
		{[]string{"--", "x", "--"}, nil, nil, false},
		{[]string{"--", "--", "y"}, nil, nil, false},
		{[]string{"x", "y"}, nil, nil, false},
		{nil, nil, nil, false},
	} {
		a, b, ok := split(c.in)
		if ok != c.ok || !slices.Equal(a, c.a) || !slices.Equal(b, c.b) {
			t.Errorf("split(%q) = %q, %q, %v; want %q, %q, %v", c.in, a, b, ok, c.a, c.b, c.ok)
		}
	}
}

func TestQuantile(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3}
	for p, want := range map[float64]float64{0: 1, .25: 2, .5: 3, .75: 4, 1: 5} {
		if got := quantile(v, p); got != want {
			t.Errorf("quantile(%v, %v) = %v, want %v", v, p, got, want)
		}
	}
	if !slices.Equal(v, []float64{5, 1, 4, 2, 3}) {
		t.Errorf("quantile sorted its input: %v", v)
	}
}

func TestRun(t *testing.T) {
	if _, err := run([]string{"true"}); err != nil {
		t.Fatal(err)
	}
	if _, err := run([]string{"false"}); err == nil {
		t.Error("a failing run gave no error")
	}
}
