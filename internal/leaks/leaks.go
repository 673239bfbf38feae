package leaks

import (
	"cmp"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/memwho/memwho/internal/store"
)

// Options chooses what Rank keeps.
type Options struct {
	// MinPoints is the fewest samples a series needs (default 5).
	MinPoints int
	// MinCover is the fraction of its host's recorded span (in the
	// window) a series must cover: a process started a minute ago
	// grows because it starts, not because it leaks. Default 0.5; a
	// negative value disables it.
	MinCover float64
	// MinSlope is the least growth (Fit.Growth) reported, in bytes per
	// hour; zero keeps every series that does not shrink, a negative
	// value keeps shrinking ones too.
	MinSlope float64
}

func (o *Options) defaults() {
	if o.MinPoints <= 0 {
		o.MinPoints = 5
	}
	if o.MinCover == 0 {
		o.MinCover = 0.5
	}
}

// Leak is one growing series.
type Leak struct {
	Host string
	Kind store.Kind
	// Key is the program name (for a process too), or the group's name:
	// raw text, to be sanitised before printing.
	Key string
	// PID and StartTime (clock ticks since boot) identify a process;
	// 0 for groups.
	PID       int
	StartTime uint64
	// Count is the number of processes in the group at the last sample.
	Count int
	Fit
	// First and Last are the times of the series' first and last
	// samples.
	First, Last time.Time
	// Footprint is PSS + swap at the last sample, in bytes.
	Footprint uint64
	// Headroom is the memory left to the series at the last sample, in
	// bytes: the host's MemAvailable + SwapFree, or the room under its
	// cgroup limit when that is less (Limited). 0 when unknown.
	Headroom uint64
	Limited  bool
	// Limit is the cgroup memory limit in bytes when Limited.
	Limit uint64
	// TimeToFull is Headroom / Growth: when the series would exhaust its
	// headroom at this rate. Valid only when Fills is true (the series
	// grows and its headroom is known); 0 when the headroom is gone.
	TimeToFull time.Duration
	Fills      bool
	// Points is the series as sampled (the footprint in bytes, times in
	// hours since Origin), which Fit's Intercept also counts from; the
	// page's charts draw it. It shares the Collector's memory.
	Points []Point
	Origin time.Time
}

type seriesKey struct {
	host, boot string
	kind       store.Kind
	key        string
	pid        int
	start      uint64
}

type series struct {
	k     seriesKey
	at    int // its place in its host's last sample (hostState.prev)
	pts   []Point
	first time.Time
	last  time.Time
	row   store.Row // the latest
}

// same says whether row r of a sample of boot is a point of s.
func (s *series) same(r *store.Row, boot string) bool {
	k := &s.k
	return k.kind == r.Kind && k.pid == r.PID && k.start == r.StartTime && k.key == r.Key &&
		(r.Kind != store.KindProcess || k.boot == boot)
}

type hostState struct {
	first, last time.Time
	headroom    uint64 // MemAvailable + SwapFree at last; 0 unknown
	// prev are the series of the host's last sample, in its row order:
	// the next sample's rows mostly are the same series in the same
	// order (rows are sorted, and most processes live on), so a row is
	// matched against the one at the same place before the map is asked.
	prev, cur []*series
}

// Collector gathers series from samples (in time order per host).
type Collector struct {
	origin time.Time
	series map[seriesKey]*series
	hosts  map[string]*hostState
}

// NewCollector returns an empty Collector.
func NewCollector() *Collector {
	return &Collector{series: map[seriesKey]*series{}, hosts: map[string]*hostState{}}
}

// Add records every row of s. It copies what it keeps: s may be reused.
func (c *Collector) Add(s *store.Sample) {
	if c.origin.IsZero() {
		c.origin = s.Time
	}
	h := c.hosts[s.Host]
	if h == nil {
		h = &hostState{first: s.Time}
		c.hosts[s.Host] = h
	}
	h.last = s.Time
	h.headroom = 0
	if s.Meminfo.MemTotal > 0 {
		h.headroom = s.Meminfo.MemAvailable + s.Meminfo.SwapFree
	}
	t := s.Time.Sub(c.origin).Hours()
	cur := h.cur[:0]
	j := 0 // where in h.prev the next row is looked for
	for i := range s.Rows {
		r := &s.Rows[i]
		var sr *series
		if j < len(h.prev) && h.prev[j].same(r, s.BootID) {
			sr = h.prev[j]
			j++
		} else {
			k := seriesKey{host: s.Host, kind: r.Kind, key: r.Key}
			if r.Kind == store.KindProcess {
				k.boot, k.pid, k.start = s.BootID, r.PID, r.StartTime
			}
			sr = c.series[k]
			if sr == nil {
				sr = &series{k: k, first: s.Time}
				c.series[k] = sr
			}
			// The rows after it are likely those after it before.
			if sr.at < len(h.prev) && h.prev[sr.at] == sr {
				j = sr.at + 1
			}
		}
		sr.at = len(cur)
		sr.pts = append(sr.pts, Point{T: t, V: float64(r.Footprint())})
		sr.last = s.Time
		sr.row = *r
		cur = append(cur, sr)
	}
	h.prev, h.cur = cur, h.prev
}

// Hosts returns the number of hosts seen.
func (c *Collector) Hosts() int { return len(c.hosts) }

// Rank fits every series and returns those that keep growing, fastest
// first by Fit.Growth (ties by kind, then key, then pid).
func (c *Collector) Rank(opt Options) []Leak {
	opt.defaults()
	var cands []*series
	for _, sr := range c.series {
		if len(sr.pts) < opt.MinPoints {
			continue
		}
		h := c.hosts[sr.k.host]
		if span := h.last.Sub(h.first); opt.MinCover > 0 && span > 0 &&
			float64(sr.last.Sub(sr.first)) < opt.MinCover*float64(span) {
			continue
		}
		cands = append(cands, sr)
	}
	// The fits are independent: one goroutine per core, each with its
	// own scratch space (a fleet's hour is 400,000 series of 60 points).
	fits := make([]Fit, len(cands))
	workers := min(runtime.GOMAXPROCS(0), max(len(cands)/256, 1))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var scratch []float64
			for i := w; i < len(cands); i += workers {
				fits[i], scratch = analyze(cands[i].pts, scratch)
			}
		}()
	}
	wg.Wait()
	var out []Leak
	for i, sr := range cands {
		f := fits[i]
		if f.Growth < opt.MinSlope {
			continue
		}
		k := &sr.k
		h := c.hosts[k.host]
		l := Leak{
			Host: k.host, Kind: k.kind, Key: k.key, PID: k.pid, StartTime: k.start,
			Count: sr.row.Count, Fit: f, First: sr.first, Last: sr.last,
			Footprint: sr.row.Footprint(), Headroom: h.headroom,
			Points: sr.pts, Origin: c.origin,
		}
		// A series that ended before its host's last sample (a process
		// that exited) is judged with the host's latest headroom anyway.
		if sr.row.MemLimit > 0 && (l.Headroom == 0 || sr.row.MemLimitFree < l.Headroom) {
			l.Headroom, l.Limited, l.Limit = sr.row.MemLimitFree, true, sr.row.MemLimit
		}
		if f.Growth > 0 && (l.Headroom > 0 || l.Limited) {
			l.Fills = true
			hours := float64(l.Headroom) / f.Growth
			if hours*float64(time.Hour) < math.MaxInt64 {
				l.TimeToFull = time.Duration(hours * float64(time.Hour))
			} else {
				l.TimeToFull = time.Duration(math.MaxInt64)
			}
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Leak) int {
		if c := cmp.Compare(b.Growth, a.Growth); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Host, b.Host); c != 0 {
			return c
		}
		return cmp.Compare(a.PID, b.PID)
	})
	return out
}
