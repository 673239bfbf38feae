package leaks

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/trend"
)

const miB = 1 << 20

// line returns n points one minute apart (T in hours) on v = a + b·t,
// plus noise uniformly within ±jitter bytes.
func line(n int, a, b, jitter float64, rng *rand.Rand) []Point {
	pts := make([]Point, n)
	for i := range pts {
		t := float64(i) / 60
		pts[i] = Point{T: t, V: a + b*t + (rng.Float64()*2-1)*jitter}
	}
	return pts
}

func leastSquares(pts []Point) float64 {
	var st, sv, stt, stv float64
	n := float64(len(pts))
	for _, p := range pts {
		st += p.T
		sv += p.V
		stt += p.T * p.T
		stv += p.T * p.V
	}
	return (n*stv - st*sv) / (n*stt - st*st)
}

func near(got, want, frac float64) bool { return math.Abs(got-want) <= frac*math.Abs(want) }

func TestTheilSenOutliers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const slope = 50 * miB // bytes per hour
	for _, c := range []struct {
		name     string
		outliers int // of 120 points
		size     float64
	}{
		{"clean", 0, 0},
		{"spikes 10%", 12, 2 << 30},
		{"spikes 25%", 30, 2 << 30},
		{"dips 20%", 24, -1 << 30},
	} {
		t.Run(c.name, func(t *testing.T) {
			pts := line(120, 500*miB, slope, 1*miB, rng)
			// Outliers all on one side, at the end (where they pull a
			// least-squares line hardest).
			for i := 0; i < c.outliers; i++ {
				pts[len(pts)-1-i*3].V += c.size
			}
			got, _ := trend.TheilSen(pts)
			if !near(got, slope, 0.05) {
				t.Errorf("Theil–Sen slope = %.1f MiB/h, want %.1f ±5%%", got/miB, float64(slope)/miB)
			}
			if c.outliers > 0 {
				if ls := leastSquares(pts); near(ls, slope, 0.05) {
					t.Errorf("least squares slope %.1f MiB/h is not thrown off: the outliers are too weak to test anything", ls/miB)
				}
			}
		})
	}
}

func TestAnalyze(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	t.Run("steady leak", func(t *testing.T) {
		f := Analyze(line(60, 100*miB, 10*miB, 0, rng))
		if !near(f.Slope, 10*miB, 1e-9) || f.Steady != 1 || f.R2 < 0.999999 || f.N != 60 {
			t.Errorf("fit = %+v; want slope 10 MiB/h, steady 1, R² 1, N 60", f)
		}
		if !near(f.Intercept, 100*miB, 1e-9) {
			t.Errorf("intercept = %.1f MiB, want 100", f.Intercept/miB)
		}
	})
	t.Run("wobble", func(t *testing.T) {
		f := Analyze(line(400, 100*miB, 0, 5*miB, rng))
		if math.Abs(f.Slope) > 2*miB || f.Steady < 0.35 || f.Steady > 0.65 {
			t.Errorf("fit of noise = slope %.2f MiB/h, steady %.2f; want ~0 and ~0.5", f.Slope/miB, f.Steady)
		}
	})
	t.Run("sawtooth", func(t *testing.T) {
		// Grows 1 MiB a minute, gives it all back every 10 minutes.
		var pts []Point
		for i := range 120 {
			pts = append(pts, Point{T: float64(i) / 60, V: float64(100*miB + (i%10)*miB)})
		}
		f := Analyze(pts)
		if math.Abs(f.Slope) > 1*miB || f.Steady > 0.95 {
			t.Errorf("sawtooth fit = slope %.2f MiB/h, steady %.2f; want ~0, < 0.95", f.Slope/miB, f.Steady)
		}
	})
	t.Run("long series", func(t *testing.T) {
		// 5,000 points are reduced before the pairwise fit.
		f := Analyze(line(5000, 0, 3*miB, 100<<10, rng))
		if !near(f.Slope, 3*miB, 0.02) {
			t.Errorf("slope of 5,000 points = %.3f MiB/h, want 3 ±2%%", f.Slope/miB)
		}
	})
	t.Run("short", func(t *testing.T) {
		if f := Analyze([]Point{{T: 0, V: 5}}); f.Slope != 0 || f.N != 1 {
			t.Errorf("one point: %+v", f)
		}
		if s, _ := trend.TheilSen([]Point{{T: 1, V: 5}, {T: 1, V: 7}}); s != 0 {
			t.Errorf("equal times: slope %v, want 0", s)
		}
	})
}

func TestReduce(t *testing.T) {
	pts := line(1000, 0, 60, 0, rand.New(rand.NewPCG(5, 6)))
	r := reduce(pts, 100)
	if len(r) != 100 {
		t.Fatalf("reduce to 100 gave %d points", len(r))
	}
	// Each reduced point is the middle of 10 consecutive ones.
	if !near(r[0].T, 4.5/60, 1e-9) || !near(r[0].V, 4.5, 1e-9) {
		t.Errorf("first reduced point = %+v, want {0.075 4.5}", r[0])
	}
	if got := reduce(pts[:50], 100); len(got) != 50 {
		t.Errorf("short series reduced to %d points", len(got))
	}
}

// history builds a host's samples, one a minute for n minutes, with a
// leaking process (2 MiB/min under a cgroup limit with 600 MiB left), a
// flat one, a sawtooth one, a process started near the end that grows
// fast, and their program groups.
func history(n int) []store.Sample {
	var out []store.Sample
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		s := store.Sample{
			Time: t0.Add(time.Duration(i) * time.Minute), Host: "h", BootID: "b",
			Meminfo: sample.Meminfo{MemTotal: 16 << 30, MemAvailable: 6 << 30, SwapFree: 1 << 30},
		}
		leak := uint64(100*miB + i*2*miB)
		s.Rows = append(s.Rows,
			store.Row{Kind: store.KindProcess, Key: "leaky", PID: 10, StartTime: 1, Count: 1, PSS: leak - miB, Swap: miB, MemLimit: 2 << 30, MemLimitFree: 600 * miB},
			store.Row{Kind: store.KindProcess, Key: "flat", PID: 11, StartTime: 1, Count: 1, PSS: 50 * miB},
			store.Row{Kind: store.KindProcess, Key: "saw", PID: 12, StartTime: 1, Count: 1, PSS: uint64(80*miB + (i%7)*3*miB)},
			store.Row{Kind: store.KindProgram, Key: "leaky", Count: 1, PSS: leak},
			store.Row{Kind: store.KindProgram, Key: "flat", Count: 1, PSS: 50 * miB},
		)
		if i >= n*3/4 {
			s.Rows = append(s.Rows, store.Row{Kind: store.KindProcess, Key: "young", PID: 13, StartTime: 99, Count: 1, PSS: uint64((i - n*3/4) * 50 * miB)})
		}
		// The pid of the leaker is reused by another process (other
		// start time) in the second half: a separate, flat series.
		if i >= n/2 {
			s.Rows = append(s.Rows, store.Row{Kind: store.KindProcess, Key: "reuse", PID: 10, StartTime: 500, Count: 1, PSS: 1 * miB})
		}
		out = append(out, s)
	}
	return out
}

func TestRank(t *testing.T) {
	c := NewCollector()
	for _, s := range history(120) {
		c.Add(&s)
	}
	got := c.Rank(Options{MinSlope: 1 << 20})
	if len(got) != 2 {
		for _, l := range got {
			t.Logf("%v %s %d: %.1f MiB/h", l.Kind, l.Key, l.PID, l.Slope/miB)
		}
		t.Fatalf("Rank found %d growing series, want 2 (the leaky process and its program)", len(got))
	}
	p, g := got[0], got[1]
	if p.Kind != store.KindProcess || p.Key != "leaky" || p.PID != 10 || g.Kind != store.KindProgram || g.Key != "leaky" {
		t.Fatalf("ranking = %v %q %d, %v %q; want the leaky process, then its program", p.Kind, p.Key, p.PID, g.Kind, g.Key)
	}
	if !near(p.Slope, 120*miB, 1e-9) || p.Steady != 1 || p.Footprint != 100*miB+119*2*miB {
		t.Errorf("leaky: slope %.2f MiB/h, steady %.2f, footprint %d; want 120, 1, %d", p.Slope/miB, p.Steady, p.Footprint, 100*miB+119*2*miB)
	}
	// 600 MiB left under its cgroup limit, less than the host's 7 GiB:
	// 600 / 120 per hour = 5 h.
	if !p.Limited || p.Headroom != 600*miB || !p.Fills || p.TimeToFull != 5*time.Hour {
		t.Errorf("leaky process: limited %v, headroom %d, time to full %v; want true, %d, 5h", p.Limited, p.Headroom, p.TimeToFull, 600*miB)
	}
	// The program has no limit: the host's MemAvailable + SwapFree.
	if g.Limited || g.Headroom != 7<<30 || g.TimeToFull != time.Duration(7*1024/120.0*float64(time.Hour)) {
		t.Errorf("leaky program: limited %v, headroom %d, time to full %v", g.Limited, g.Headroom, g.TimeToFull)
	}

	all := c.Rank(Options{MinSlope: math.Inf(-1), MinCover: -1, MinPoints: 1})
	if len(all) != 7 {
		t.Errorf("Rank with no thresholds kept %d series, want 7 (5 processes, 2 programs)", len(all))
	}
	if all[0].Key != "young" {
		t.Errorf("without the cover rule the young process ranks %q first, want young", all[0].Key)
	}
}

// TestRankWarmUpIsNoLeak: a recorder that grows while its host goes from
// 360 to 1,000 processes and then stays flat (+67.9 MiB/h over the
// window) was listed beside a steady +1.2 GiB/h leak. Growth that
// stopped is not ranked; the leak is, at its rate. Both are plain
// series: nothing names memwho's own processes.
func TestRankWarmUpIsNoLeak(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	const n = 240 // 4 h, one sample a minute
	c := NewCollector()
	for i := range n {
		h := float64(i) / 60
		// The recorder: 140 MiB/h for its first 1.5 h (about 210 MiB),
		// flat after, with a few MiB of wobble throughout.
		rec := 40*miB + 140*miB*math.Min(h, 1.5) + (rng.Float64()*2-1)*3*miB
		// The leak: 1.2 GiB/h, wobbling too.
		leak := 300*miB + 1.2*1024*miB*h + (rng.Float64()*2-1)*3*miB
		s := store.Sample{
			Time: t0.Add(time.Duration(i) * time.Minute), Host: "h", BootID: "b",
			Meminfo: sample.Meminfo{MemTotal: 16 << 30, MemAvailable: 8 << 30},
			Rows: []store.Row{
				{Kind: store.KindProcess, Key: "memwho-agent", PID: 20, StartTime: 1, Count: 1, PSS: uint64(rec)},
				{Kind: store.KindProcess, Key: "api", PID: 21, StartTime: 1, Count: 1, PSS: uint64(leak)},
			},
		}
		c.Add(&s)
	}
	got := c.Rank(Options{MinSlope: 1 << 20})
	for _, l := range got {
		t.Logf("%s: growth %.1f MiB/h (window %.1f, latest half %.1f)", l.Key, l.Growth/miB, l.Slope/miB, l.Recent/miB)
	}
	if len(got) != 1 || got[0].Key != "api" {
		t.Fatalf("ranked %d series; want the leak alone", len(got))
	}
	if !near(got[0].Growth, 1.2*1024*miB, 0.02) {
		t.Errorf("the leak grows %.1f MiB/h, want 1228.8 ±2%%", got[0].Growth/miB)
	}

	// A warm-up still going on at the end is growth, and ranks.
	c = NewCollector()
	for i := range n {
		h := float64(i) / 60
		s := store.Sample{Time: t0.Add(time.Duration(i) * time.Minute), Host: "h", BootID: "b",
			Rows: []store.Row{{Kind: store.KindProcess, Key: "late", PID: 30, StartTime: 1, Count: 1, PSS: uint64(40*miB + 100*miB*math.Max(h-1, 0))}}}
		c.Add(&s)
	}
	if got := c.Rank(Options{MinSlope: 1 << 20}); len(got) != 1 || got[0].Growth <= 0 {
		t.Errorf("growth that started an hour in and goes on: ranked %v", got)
	}
}
