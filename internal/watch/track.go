package watch

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/trend"
)

// Sampler fills a snapshot with one walk of /proc. The sampling engine
// implements it; Scan may reuse snap.Procs.
type Sampler interface {
	Scan(snap *sample.Snapshot) error
}

const miB = 1 << 20

// Config tunes the history and the leak rule (see the package doc). Zero
// fields take the defaults.
type Config struct {
	// Window is the number of samples per group used for the rate, the
	// leak rule and kept for the sparkline. Default 30 (one minute at the
	// default 2 s interval).
	Window int
	// LeakMinSamples is the fewest samples in the window for a leak flag.
	// Default 10.
	LeakMinSamples int
	// LeakMinRate is the lowest Theil–Sen slope for a leak flag, in bytes
	// per second. Default 0.5 MiB/min.
	LeakMinRate float64
	// LeakMonotone is the least fraction of non-decreasing steps for a
	// leak flag. Default 0.8.
	LeakMonotone float64
	// LeakMaxStep is the largest share of the window's growth that one
	// step may account for in a leak. Default 0.5.
	LeakMaxStep float64
}

// Defaults of Config.
const (
	DefaultWindow         = 30
	DefaultLeakMinSamples = 10
	DefaultLeakMinRate    = 0.5 * miB / 60 // bytes per second
	DefaultLeakMonotone   = 0.8
	DefaultLeakMaxStep    = 0.5
)

// SparkWidth is the number of samples a sparkline shows.
const SparkWidth = 10

func (c Config) withDefaults() Config {
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	c.Window = max(c.Window, 2, SparkWidth)
	if c.LeakMinSamples <= 0 {
		c.LeakMinSamples = DefaultLeakMinSamples
	}
	c.LeakMinSamples = max(min(c.LeakMinSamples, c.Window), 3)
	if c.LeakMinRate <= 0 {
		c.LeakMinRate = DefaultLeakMinRate
	}
	if c.LeakMonotone <= 0 {
		c.LeakMonotone = DefaultLeakMonotone
	}
	if c.LeakMaxStep <= 0 {
		c.LeakMaxStep = DefaultLeakMaxStep
	}
	return c
}

// Info is what the last snapshot says beyond its groups.
type Info struct {
	// Time is when the snapshot was taken.
	Time time.Time
	// Meminfo holds the host's figures, valid when MeminfoOK.
	Meminfo   sample.Meminfo
	MeminfoOK bool
	// Procs is the number of processes read; Gone, Denied, Kernel,
	// Broken and Malformed are the snapshot's counts.
	Procs, Gone, Denied, Kernel, Broken, Malformed int
	// Total sums every process (no filter), in bytes.
	Total sample.Group
	// ConnsOK says the processes' ESTABLISHED TCP sockets were counted
	// (Group.Conns is valid).
	ConnsOK bool
	// HeldBack counts the processes whose figures are older than the
	// snapshot (see Tracker.AddSampled).
	HeldBack int
}

// Tracker keeps the recent history of every group in the groupings it
// tracks. It is not safe for concurrent use.
type Tracker struct {
	cfg Config
	// n is the number of samples added; sample i (1-based) is stored at
	// index i % Window of every ring.
	n       uint64
	times   []int64 // snapshot times, Unix nanoseconds
	views   [sample.ByContainer + 1]*view
	names   sample.Namer
	info    Info
	scratch []float64     // the slopes of one fit, reused
	pts     []trend.Point // the series of one fit, reused
	// stale holds, during Add, the processes whose figures are older
	// than the snapshot.
	stale map[int]stale
}

// stale is a process whose figures were read before its snapshot.
type stale struct {
	ram uint64
	age int64 // snapshot time minus the time the figures were read, ns
}

// view is the history of one grouping.
type view struct {
	series map[string]*series
	groups []sample.Group
	rows   []Row
	rowsAt uint64 // sample number rows were computed at; 0 for never
	arena  []uint64
}

// series is one group's history. It covers the consecutive samples
// first..seen; a group missing from a sample is dropped.
type series struct {
	first uint64   // number of the group's first sample
	start uint64   // RAM at the first sample, bytes
	since int64    // time of the first sample, Unix nanoseconds
	seen  uint64   // number of the last sample holding the group
	vals  []uint64 // ring of RAM, bytes, by sample number % Window
	// ts is the ring of the times the values describe, Unix
	// nanoseconds: the snapshot's time, or earlier when the sampler
	// reported older figures (see AddSampled).
	ts []int64
}

// NewTracker returns a Tracker that follows the groupings in bys.
func NewTracker(cfg Config, bys ...sample.By) *Tracker {
	cfg = cfg.withDefaults()
	t := &Tracker{cfg: cfg, times: make([]int64, cfg.Window), stale: make(map[int]stale)}
	for _, by := range bys {
		if t.views[by] == nil {
			t.views[by] = &view{series: make(map[string]*series)}
		}
	}
	return t
}

// SetContainers sets what names containers (sample.Namer.Containers).
func (t *Tracker) SetContainers(c interface{ Key(string) string }) { t.names.Containers = c }

// Config returns the configuration in use, defaults filled in.
func (t *Tracker) Config() Config { return t.cfg }

// Samples returns the number of snapshots added so far.
func (t *Tracker) Samples() int { return int(t.n) }

// Info returns what the last snapshot said beyond its groups.
func (t *Tracker) Info() *Info { return &t.info }

// Tracks reports whether the tracker follows grouping by.
func (t *Tracker) Tracks(by sample.By) bool { return t.views[by] != nil }

// Add records snap, every figure of which is taken to describe
// snap.Time. It keeps nothing that points into snap.Procs (names are
// immutable strings), so the caller may reuse snap for the next scan.
func (t *Tracker) Add(snap *sample.Snapshot) { t.AddSampled(snap, nil) }

// AddSampled records snap like Add, where at[i] (when at is not nil) is
// the time snap.Procs[i]'s figures were read: a sampler that defers
// expensive reads (the engine's cost budget) hands on older figures, and
// fitting them at the snapshot's time would show a staircase (flat, then
// a jump) instead of the steady line it is. A group's time is the mean
// of its processes' times weighted by their RAM.
//
// A snapshot with the same Time as the last one is the same snapshot
// again (the agent's, asked for more often than it walks) and is not
// recorded twice: it would weigh one moment double in the rates.
func (t *Tracker) AddSampled(snap *sample.Snapshot, at []time.Time) {
	w := uint64(t.cfg.Window)
	now := snap.Time.UnixNano()
	if t.n > 0 && t.times[t.n%w] == now {
		return
	}
	t.n++
	t.times[t.n%w] = now
	t.info = Info{
		Time: snap.Time, Meminfo: snap.Meminfo, MeminfoOK: snap.MeminfoOK,
		Procs: len(snap.Procs), Gone: snap.Gone, Denied: snap.Denied, Kernel: snap.Kernel,
		Broken: snap.Broken, Malformed: snap.Malformed, ConnsOK: snap.ConnsOK,
	}
	clear(t.stale)
	if len(at) == len(snap.Procs) {
		for i := range snap.Procs {
			if age := now - at[i].UnixNano(); age > 0 && !at[i].IsZero() {
				p := &snap.Procs[i]
				t.stale[p.PID] = stale{ram: p.RAM, age: age}
			}
		}
	}
	t.info.HeldBack = len(t.stale)
	totalDone := false
	for by, v := range t.views {
		if v == nil {
			continue
		}
		v.groups = sample.GroupProcs(snap.Procs, sample.By(by), &t.names)
		if !totalDone {
			t.info.Total = sample.Total(v.groups)
			totalDone = true
		}
		v.rowsAt = 0
		for i := range v.groups {
			g := &v.groups[i]
			at := now - t.groupAge(g)
			s := v.series[g.Key]
			switch {
			case s == nil:
				s = &series{vals: make([]uint64, w), ts: make([]int64, w)}
				v.series[g.Key] = s
				fallthrough
			case s.seen != t.n-1:
				s.first, s.start, s.since = t.n, g.RAM, now
			}
			s.vals[t.n%w] = g.RAM
			s.ts[t.n%w] = at
			s.seen = t.n
		}
		for k, s := range v.series {
			if s.seen != t.n {
				delete(v.series, k)
			}
		}
	}
}

// groupAge is how much older than the snapshot g's figures are, in
// nanoseconds: its processes' ages weighted by their RAM.
func (t *Tracker) groupAge(g *sample.Group) int64 {
	if len(t.stale) == 0 || g.RAM == 0 {
		return 0
	}
	var sum float64
	for _, pid := range g.PIDs {
		if st, ok := t.stale[pid]; ok {
			sum += float64(st.ram) * float64(st.age)
		}
	}
	return int64(sum / float64(g.RAM))
}

// Row is one group with its history.
type Row struct {
	sample.Group
	// Change is RAM now minus RAM at the group's first sample, in bytes.
	Change int64
	// Since is the time of the group's first sample.
	Since time.Time
	// History is RAM over the last samples in the window, oldest first,
	// in bytes; its last element is the current RAM.
	History []uint64
	// Rate is the Theil–Sen slope of RAM over History, in bytes per
	// second; 0 with fewer than two samples.
	Rate float64
	// Leak is true when the group has grown steadily (see the package
	// doc).
	Leak bool
	// RateOK is true when History spans some time: at least two samples
	// read at different times. Rate is 0 otherwise.
	RateOK bool
	// Age is how much older than the snapshot the group's figures are
	// (RAM-weighted), 0 unless the sampler held figures back.
	Age time.Duration
}

// RateMiBPerMin is r.Rate in MiB per minute.
func (r Row) RateMiBPerMin() float64 { return r.Rate * 60 / miB }

// Rows returns the groups of grouping by in the last snapshot, with their
// history, in no particular order. The slice and the rows' History are
// reused by the next call after an Add; callers sort and filter it in
// place. It returns nil for a grouping the tracker does not follow.
func (t *Tracker) Rows(by sample.By) []Row {
	v := t.views[by]
	if v == nil {
		return nil
	}
	if v.rowsAt == t.n && v.rows != nil {
		return v.rows
	}
	w := uint64(t.cfg.Window)
	v.rows = v.rows[:0]
	v.arena = v.arena[:0]
	var ts []int64
	for i := range v.groups {
		g := &v.groups[i]
		s := v.series[g.Key]
		k := min(w, t.n-s.first+1)
		from := len(v.arena)
		ts = ts[:0]
		for j := t.n - k + 1; j <= t.n; j++ {
			v.arena = append(v.arena, s.vals[j%w])
			ts = append(ts, s.ts[j%w])
		}
		r := Row{
			Group:   *g,
			Change:  int64(g.RAM) - int64(s.start),
			Since:   time.Unix(0, s.since),
			History: v.arena[from:len(v.arena):len(v.arena)],
		}
		t.pts = t.pts[:0]
		for j, v := range r.History {
			// Times relative to the first keep float64 exact, so
			// that every pair's interval is the integer one.
			t.pts = append(t.pts, trend.Point{T: float64(ts[j] - ts[0]), V: float64(v)})
		}
		r.Rate, t.scratch = trend.Slope(t.pts, float64(time.Second), t.scratch)
		r.RateOK = len(ts) >= 2 && slices.Max(ts) > slices.Min(ts)
		r.Age = time.Duration(t.times[t.n%w] - s.ts[t.n%w])
		r.Leak = t.leak(ts, r.History, r.Rate)
		v.rows = append(v.rows, r)
	}
	v.rowsAt = t.n
	return v.rows
}

// leak applies the leak rule of the package doc to a window of RAM
// values vs (oldest first) read at times ts (ns), whose Theil–Sen slope
// is rate (bytes per second).
func (t *Tracker) leak(ts []int64, vs []uint64, rate float64) bool {
	c := &t.cfg
	n := len(vs)
	if n < c.LeakMinSamples || rate < c.LeakMinRate || vs[n-1] <= vs[0] {
		return false
	}
	rise := float64(vs[n-1] - vs[0])
	up := 0
	for i := 1; i < n; i++ {
		if vs[i] < vs[i-1] {
			continue
		}
		up++
		// A step may carry the growth the fit predicts over the time
		// it spans (a long one after figures were held back) but no
		// more than LeakMaxStep of the window's growth beyond that.
		dt := float64(ts[i]-ts[i-1]) / 1e9
		if float64(vs[i]-vs[i-1])-max(rate*dt, 0) > c.LeakMaxStep*rise {
			return false
		}
	}
	return float64(up) >= c.LeakMonotone*float64(n-1)
}

// SortKey names a column to sort rows by.
type SortKey uint8

// Sort columns: the report's (the same values as sample.SortKey, whose
// Compare defines them), then the change since the start, the growth rate
// and the ESTABLISHED TCP connections.
const (
	SortRAM     = SortKey(sample.SortRAM)
	SortPrivate = SortKey(sample.SortPrivate)
	SortShared  = SortKey(sample.SortShared)
	SortSwap    = SortKey(sample.SortSwap)
	SortCount   = SortKey(sample.SortCount)
	SortName    = SortKey(sample.SortName)
)

// The live view's own columns follow the report's.
const (
	SortChange = SortName + 1 + iota
	SortRate
	SortConns
	numSortKeys
)

var sortNames = [numSortKeys]string{"ram", "private", "shared", "swap", "count", "name", "change", "rate", "conns"}

// String returns the flag spelling of k.
func (k SortKey) String() string { return sortNames[k] }

// ParseSort parses a --sort value.
func ParseSort(s string) (SortKey, error) {
	for i, n := range sortNames {
		if s == n {
			return SortKey(i), nil
		}
	}
	return 0, fmt.Errorf("unknown sort column %q (want %s)", s, strings.Join(sortNames[:], ", "))
}

// SortRows orders rows by key, largest first when desc, ties broken by
// name (ascending, unless sorting by name descending): unlike the
// report's Sort, a live view keeps equal rows in reading order whichever
// way it sorts.
func SortRows(rows []Row, key SortKey, desc bool) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		var c int
		switch key {
		case SortChange:
			c = cmp.Compare(a.Change, b.Change)
		case SortRate:
			c = cmp.Compare(a.Rate, b.Rate)
		case SortConns:
			c = cmp.Compare(a.Conns, b.Conns)
		default:
			c = sample.SortKey(key).Compare(&a.Group, &b.Group)
		}
		if desc {
			c = -c
		}
		if c == 0 {
			c = strings.Compare(a.Key, b.Key)
			if key == SortName && desc {
				c = -c
			}
		}
		return c
	})
}

// FilterRows keeps the rows whose key matches re (all of them for nil),
// in place.
func FilterRows(rows []Row, re *regexp.Regexp) []Row {
	if re == nil {
		return rows
	}
	return slices.DeleteFunc(rows, func(r Row) bool { return !re.MatchString(r.Key) })
}

// sparkMinSpan is the smallest range of values a sparkline draws as a
// shape, in bytes: below it (or below 0.1% of the highest value) PSS
// moves with what other processes map and unmap, which is noise here.
const sparkMinSpan = 64 << 10

// sparkLevels are the eight heights of a sparkline.
var sparkLevels = [8]string{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}

// AppendSpark appends a sparkline of the last width values of hist
// (oldest first) to dst: one block character per value, scaled from the
// lowest to the highest of them, right-aligned with spaces when there
// are fewer than width values. A range under 64 KiB or under 0.1% of the
// highest value is drawn flat.
func AppendSpark(dst []byte, hist []uint64, width int) []byte {
	if len(hist) > width {
		hist = hist[len(hist)-width:]
	}
	for range width - len(hist) {
		dst = append(dst, ' ')
	}
	if len(hist) == 0 {
		return dst
	}
	lo, hi := slices.Min(hist), slices.Max(hist)
	span := hi - lo
	if span < sparkMinSpan || span < hi/1000 {
		span = 0
	}
	for _, v := range hist {
		l := 0
		if span > 0 {
			l = int((float64(v-lo)/float64(span))*7 + 0.5)
		}
		dst = append(dst, sparkLevels[l]...)
	}
	return dst
}
