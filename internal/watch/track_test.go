package watch

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/sample"
)

const (
	kiB = 1 << 10
	giB = 1 << 30
)

// t0 is the time of the first synthetic snapshot.
var t0 = time.Date(2026, 11, 7, 12, 0, 0, 0, time.UTC)

// proc is a synthetic process: ram(i) gives its RAM in the i-th
// snapshot (0-based); private is that minus a fixed shared part.
type proc struct {
	pid    int
	name   string
	uid    uint32
	cgroup string
	shared uint64
	swap   uint64
	conns  uint32
	est    bool
	ram    func(i int) uint64
}

func constant(v uint64) func(int) uint64 { return func(int) uint64 { return v } }

func linear(base, step uint64) func(int) uint64 {
	return func(i int) uint64 { return base + uint64(i)*step }
}

// snapshot builds the i-th snapshot of procs, taken at t0 + i·every.
func snapshot(i int, every time.Duration, procs []proc) *sample.Snapshot {
	s := &sample.Snapshot{
		Time:      t0.Add(time.Duration(i) * every),
		MeminfoOK: true,
		ConnsOK:   true,
		Meminfo:   sample.Meminfo{MemTotal: 16 * giB, MemAvailable: 12 * giB, SwapTotal: 4 * giB, SwapFree: 4 * giB},
	}
	for _, p := range procs {
		if p.ram == nil {
			continue
		}
		ram := p.ram(i)
		if ram == 0 {
			continue // not running in this snapshot
		}
		pr := sample.Process{
			PID: p.pid, Name: p.name, Comm: p.name, UID: p.uid, UIDKnown: true, Cgroup: p.cgroup,
			RAM: ram, Shared: min(p.shared, ram), Swap: p.swap, Conns: p.conns,
		}
		pr.Private = ram - pr.Shared
		if p.est {
			pr.Accuracy = sample.Estimate
			s.Denied++
		}
		s.Procs = append(s.Procs, pr)
	}
	return s
}

// feed adds n snapshots of procs to t, one every interval.
func feed(t *Tracker, n int, every time.Duration, procs []proc) {
	for i := range n {
		t.Add(snapshot(i, every, procs))
	}
}

func rowOf(t *testing.T, rows []Row, key string) Row {
	t.Helper()
	for _, r := range rows {
		if r.Key == key {
			return r
		}
	}
	t.Fatalf("no row %q in %d rows", key, len(rows))
	return Row{}
}

func TestRateOneMiBPerSecond(t *testing.T) {
	tr := NewTracker(Config{}, sample.ByProgram)
	feed(tr, 20, time.Second, []proc{{pid: 1, name: "grow", ram: linear(100*miB, miB)}})
	r := rowOf(t, tr.Rows(sample.ByProgram), "grow")
	if got := r.RateMiBPerMin(); math.Abs(got-60) > 0.1 {
		t.Errorf("rate = %.3f MiB/min, want 60.0 ±0.1", got)
	}
	if got, want := r.Change, int64(19*miB); got != want {
		t.Errorf("change = %d, want %d", got, want)
	}
	if !r.Leak {
		t.Error("a group growing 1 MiB every second is not a leak suspect")
	}
	if got, want := len(r.History), 20; got != want {
		t.Errorf("history holds %d samples, want %d", got, want)
	}
	if !r.Since.Equal(t0) {
		t.Errorf("since = %v, want %v", r.Since, t0)
	}
}

func TestRateIrregularSamples(t *testing.T) {
	// Samples at uneven times (a pause, a slow scan) on a steady 2 MiB/min
	// line: the fit uses the sample times, not their count.
	tr := NewTracker(Config{}, sample.ByProgram)
	at := []time.Duration{0, 1, 2, 7, 8, 9, 30, 31, 33, 34, 40, 41}
	for _, s := range at {
		snap := &sample.Snapshot{Time: t0.Add(s * time.Second), Procs: []sample.Process{
			{PID: 1, Name: "a", RAM: 50*miB + uint64(s)*2*miB/60},
		}}
		tr.Add(snap)
	}
	r := rowOf(t, tr.Rows(sample.ByProgram), "a")
	if got := r.RateMiBPerMin(); math.Abs(got-2) > 0.01 {
		t.Errorf("rate = %.4f MiB/min, want 2", got)
	}
}

func TestLeakRule(t *testing.T) {
	const n = 30
	every := 2 * time.Second
	for _, tc := range []struct {
		name string
		ram  func(int) uint64
		leak bool
	}{
		{"flat", constant(100 * miB), false},
		{"steady growth", linear(100*miB, 64*kiB), true}, // 1.9 MiB/min
		{"too slow", linear(100*miB, 4*kiB), false},      // 0.12 MiB/min
		{"shrinking", func(i int) uint64 { return 200*miB - uint64(i)*miB }, false},
		{"one jump in the middle", func(i int) uint64 {
			if i < n/2 {
				return 100 * miB
			}
			return 300 * miB
		}, false},
		{"staircase of a few steps", func(i int) uint64 {
			return 100*miB + uint64(i/10)*10*miB // three steps of 10 MiB
		}, true},
		{"growth with a few dips", func(i int) uint64 {
			v := 100*miB + uint64(i)*miB
			if i%6 == 5 {
				v -= 1536 * kiB // a step down, 5 of 29 steps
			}
			return v
		}, true},
		{"sawtooth", func(i int) uint64 {
			// Grows, is collected, grows again: half the steps go down.
			if i%2 == 0 {
				return 100*miB + uint64(i)*miB
			}
			return 100*miB + uint64(i-1)*miB - 512*kiB
		}, false},
		{"noise around a level", func(i int) uint64 {
			return 100*miB + uint64((i*7919)%13)*kiB
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(Config{}, sample.ByProgram)
			feed(tr, n, every, []proc{{pid: 1, name: "x", ram: tc.ram}})
			r := rowOf(t, tr.Rows(sample.ByProgram), "x")
			if r.Leak != tc.leak {
				t.Errorf("leak = %v, want %v (rate %.2f MiB/min, history %v)", r.Leak, tc.leak, r.RateMiBPerMin(), r.History)
			}
		})
	}
}

func TestLeakNeedsMinSamples(t *testing.T) {
	tr := NewTracker(Config{}, sample.ByProgram)
	for i := range DefaultLeakMinSamples {
		tr.Add(snapshot(i, time.Second, []proc{{pid: 1, name: "x", ram: linear(miB, miB)}}))
		leak := rowOf(t, tr.Rows(sample.ByProgram), "x").Leak
		if want := i+1 >= DefaultLeakMinSamples; leak != want {
			t.Errorf("after %d samples: leak = %v, want %v", i+1, leak, want)
		}
	}
}

func TestWindowSlides(t *testing.T) {
	// Flat for 40 samples, then growing: once the window holds only the
	// growth, the rate is the growth's.
	tr := NewTracker(Config{Window: 10}, sample.ByProgram)
	ram := func(i int) uint64 {
		if i < 40 {
			return 10 * miB
		}
		return 10*miB + uint64(i-39)*miB
	}
	feed(tr, 50, time.Second, []proc{{pid: 1, name: "x", ram: ram}})
	r := rowOf(t, tr.Rows(sample.ByProgram), "x")
	if len(r.History) != 10 {
		t.Fatalf("history has %d samples, want the window of 10", len(r.History))
	}
	if got := r.RateMiBPerMin(); math.Abs(got-60) > 0.1 {
		t.Errorf("rate = %.2f MiB/min, want 60", got)
	}
	if got, want := r.Change, int64(10*miB); got != want {
		t.Errorf("change since start = %d, want %d (start is kept after it leaves the window)", got, want)
	}
}

func TestGroupComesAndGoes(t *testing.T) {
	// A group missing from a snapshot starts afresh when it returns.
	ram := func(i int) uint64 {
		if i == 5 {
			return 0
		}
		return 10*miB + uint64(i)*miB
	}
	tr := NewTracker(Config{}, sample.ByProgram, sample.ByPID)
	feed(tr, 8, time.Second, []proc{{pid: 1, name: "x", ram: ram}, {pid: 2, name: "y", ram: constant(miB)}})
	r := rowOf(t, tr.Rows(sample.ByProgram), "x")
	if got, want := len(r.History), 2; got != want {
		t.Errorf("history after a gap holds %d samples, want %d", got, want)
	}
	if got, want := r.Change, int64(miB); got != want {
		t.Errorf("change = %d, want %d (since it came back)", got, want)
	}
	if got := len(tr.Rows(sample.ByPID)); got != 2 {
		t.Errorf("by pid: %d rows, want 2", got)
	}
	if tr.Rows(sample.ByUser) != nil {
		t.Error("rows for a grouping that is not tracked")
	}
}

func TestGroupingsTrackedTogether(t *testing.T) {
	procs := []proc{
		{pid: 1, name: "a", uid: 0, cgroup: "/system.slice/a.service", ram: linear(10*miB, miB)},
		{pid: 2, name: "b", uid: 0, cgroup: "/system.slice/b.service", ram: linear(10*miB, miB)},
		{pid: 3, name: "b", uid: 1000, cgroup: "/user.slice", ram: constant(5 * miB)},
	}
	tr := NewTracker(Config{}, sample.ByProgram, sample.ByUser, sample.ByCgroup, sample.ByPID)
	feed(tr, 12, time.Second, procs)
	if r := rowOf(t, tr.Rows(sample.ByUser), "root"); math.Abs(r.RateMiBPerMin()-120) > 0.1 || !r.Leak {
		t.Errorf("user root: rate %.2f, leak %v; want 120 MiB/min and a leak", r.RateMiBPerMin(), r.Leak)
	}
	if r := rowOf(t, tr.Rows(sample.ByProgram), "b"); math.Abs(r.RateMiBPerMin()-60) > 0.1 {
		t.Errorf("program b: rate %.2f, want 60 MiB/min", r.RateMiBPerMin())
	}
	if r := rowOf(t, tr.Rows(sample.ByCgroup), "/user.slice"); r.Rate != 0 || r.Leak {
		t.Errorf("cgroup /user.slice: rate %v, leak %v; want 0 and none", r.Rate, r.Leak)
	}
	if r := rowOf(t, tr.Rows(sample.ByPID), "a [1]"); r.Change != 11*miB {
		t.Errorf("pid 1: change %d, want %d", r.Change, 11*miB)
	}
	if got, want := tr.Info().Total.RAM, uint64(21*miB+21*miB+5*miB); got != want {
		t.Errorf("total RAM %d, want %d", got, want)
	}
}

func TestAppendSpark(t *testing.T) {
	for _, tc := range []struct {
		name string
		hist []uint64
		want string
	}{
		{"empty", nil, "          "},
		{"one", []uint64{5 * miB}, "         ▁"},
		{"rising", []uint64{0, miB, 2 * miB, 3 * miB, 4 * miB, 5 * miB, 6 * miB, 7 * miB}, "  ▁▂▃▄▅▆▇█"},
		{"last ten of twelve", []uint64{99 * miB, 99 * miB, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7 * miB}, "▁▁▁▁▁▁▁▁▁█"},
		{"noise under 64 KiB", []uint64{miB, miB + 60*kiB, miB}, "       ▁▁▁"},
		{"noise under 0.1%", []uint64{10 * giB, 10*giB + 5*miB, 10 * giB}, "       ▁▁▁"},
		{"dip", []uint64{10 * miB, 9 * miB, 10 * miB}, "       █▁█"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(AppendSpark(nil, tc.hist, SparkWidth)); got != tc.want {
				t.Errorf("spark = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSortAndFilterRows(t *testing.T) {
	rows := []Row{
		{Group: sample.Group{Key: "b", RAM: 2, Swap: 9}, Rate: 3},
		{Group: sample.Group{Key: "a", RAM: 2, Swap: 1}, Rate: -1},
		{Group: sample.Group{Key: "c", RAM: 5}, Rate: 0},
	}
	keys := func() string {
		var ks []string
		for _, r := range rows {
			ks = append(ks, r.Key)
		}
		return strings.Join(ks, "")
	}
	for _, tc := range []struct {
		key  SortKey
		desc bool
		want string
	}{
		{SortRAM, true, "cab"}, // ties by name
		{SortRAM, false, "abc"},
		{SortSwap, true, "bac"},
		{SortRate, true, "bca"},
		{SortName, false, "abc"},
		{SortName, true, "cba"},
	} {
		SortRows(rows, tc.key, tc.desc)
		if got := keys(); got != tc.want {
			t.Errorf("SortRows(%v, desc %v) = %s, want %s", tc.key, tc.desc, got, tc.want)
		}
	}
	for _, name := range sortNames {
		if k, err := ParseSort(name); err != nil || k.String() != name {
			t.Errorf("ParseSort(%q) = %v, %v", name, k, err)
		}
	}
	if _, err := ParseSort("colour"); err == nil {
		t.Error("ParseSort(colour) succeeded")
	}
}

func BenchmarkTrackerAddRows(b *testing.B) {
	// 1000 processes, about 300 programs, 30-sample window: the cost of
	// one refresh of the live view (all four groupings followed, rows of
	// one computed).
	var procs []proc
	for i := range 1000 {
		procs = append(procs, proc{
			pid: 1000 + i, name: "prog" + string(rune('a'+i%26)) + string(rune('a'+i%12)),
			uid: uint32(i % 20), cgroup: "/system.slice/s" + string(rune('a'+i%26)) + ".service",
			ram: linear(uint64(i)*miB, uint64(i%7)*4*kiB),
		})
	}
	snaps := make([]*sample.Snapshot, 64)
	for i := range snaps {
		snaps[i] = snapshot(i, 2*time.Second, procs)
	}
	tr := NewTracker(Config{}, sample.ByProgram, sample.ByUser, sample.ByCgroup, sample.ByPID)
	for i := range 30 {
		tr.Add(snaps[i])
	}
	i := 0
	for b.Loop() {
		s := snaps[i%len(snaps)]
		s.Time = t0.Add(time.Duration(30+i) * 2 * time.Second)
		tr.Add(s)
		tr.Rows(sample.ByPID)
		i++
	}
}

func TestRateWithHeldBackFigures(t *testing.T) {
	// A process grows 1 MiB a second, but the sampler re-reads it only
	// every 16 seconds (the engine's cost budget), handing on the old
	// figure in between. Fitted at the times the figures were read, the
	// rate is exact and the staircase is still a leak; fitted at the
	// snapshots' times, the window holds one jump, which the leak rule
	// rejects as a one-off allocation.
	const n, every = 30, 16
	withTimes := NewTracker(Config{}, sample.ByProgram)
	without := NewTracker(Config{}, sample.ByProgram)
	for i := range n {
		read := i - i%every
		snap := &sample.Snapshot{Time: t0.Add(time.Duration(i) * time.Second), Procs: []sample.Process{
			{PID: 1, Name: "big", RAM: 10*giB + uint64(read)*miB},
			{PID: 2, Name: "small", RAM: 10 * miB},
		}}
		at := []time.Time{t0.Add(time.Duration(read) * time.Second), snap.Time}
		withTimes.AddSampled(snap, at)
		without.Add(snap)
	}
	r := rowOf(t, withTimes.Rows(sample.ByProgram), "big")
	if got := r.RateMiBPerMin(); math.Abs(got-60) > 0.1 {
		t.Errorf("rate with read times = %.2f MiB/min, want 60", got)
	}
	if !r.Leak {
		t.Error("steady growth read every 8 s is not a leak suspect")
	}
	if r := rowOf(t, without.Rows(sample.ByProgram), "big"); r.Leak {
		t.Errorf("without read times: leak at %.2f MiB/min; the test expects the staircase to hide it", r.RateMiBPerMin())
	}
	if r := rowOf(t, withTimes.Rows(sample.ByProgram), "small"); r.Rate != 0 || r.Leak {
		t.Errorf("small: rate %v leak %v, want 0 and none", r.Rate, r.Leak)
	}
}

func TestGroupAgeWeightedByRAM(t *testing.T) {
	// Two processes in one group, one read 10 s before the snapshot:
	// the group's figures are 10 s × 3/4 old (weighted by RAM).
	tr := NewTracker(Config{}, sample.ByProgram)
	snap := &sample.Snapshot{Time: t0, Procs: []sample.Process{
		{PID: 1, Name: "g", RAM: 30 * miB},
		{PID: 2, Name: "g", RAM: 10 * miB},
	}}
	tr.AddSampled(snap, []time.Time{t0.Add(-10 * time.Second), t0})
	g := &tr.views[sample.ByProgram].groups[0]
	if got, want := tr.groupAge(g), int64(7500*time.Millisecond); got != want {
		t.Errorf("group age %v, want %v", time.Duration(got), time.Duration(want))
	}
}

// fakeEngine reports details as the engine does.
type fakeEngine struct{ d []engine.Detail }

func (f *fakeEngine) Scan(*sample.Snapshot) error { return nil }
func (f *fakeEngine) Details() []engine.Detail    { return f.d }

func TestReadTimes(t *testing.T) {
	snap := &sample.Snapshot{Time: t0, Procs: []sample.Process{{PID: 1}, {PID: 2}}}
	old := t0.Add(-5 * time.Second)
	if at := readTimes(&seqSampler{}, snap); at != nil {
		t.Errorf("a sampler without details: %v, want nil", at)
	}
	fresh := &fakeEngine{d: []engine.Detail{{PID: 1, SampledAt: old}, {PID: 2, SampledAt: t0}}}
	if at := readTimes(fresh, snap); at != nil {
		t.Errorf("nothing deferred: %v, want nil (an unchanged figure is current)", at)
	}
	deferred := &fakeEngine{d: []engine.Detail{{PID: 1, SampledAt: old, Deferred: true}, {PID: 2, SampledAt: t0}}}
	at := readTimes(deferred, snap)
	if len(at) != 2 || !at[0].Equal(old) || !at[1].Equal(t0) {
		t.Errorf("one deferred: %v, want [%v %v]", at, old, t0)
	}
	short := &fakeEngine{d: []engine.Detail{{PID: 1, SampledAt: old, Deferred: true}}}
	if at := readTimes(short, snap); at != nil {
		t.Errorf("details not matching the snapshot: %v, want nil", at)
	}
}

// Another user renames processes (comm, cgroups) at every scan:
// every grouping's history keeps only the groups of the last snapshot,
// so a watch that runs for days does not grow with names long gone.
func TestTrackerForgetsChurningNames(t *testing.T) {
	// Every grouping the live view tracks; the Tracker alone, so that
	// this test builds with -tags notui too.
	tr := NewTracker(Config{}, sample.ByProgram, sample.ByUser, sample.ByCgroup, sample.ByUnit, sample.BySlice, sample.ByContainer, sample.ByPID)
	for i := range 300 {
		var procs []proc
		for j := range 20 {
			n := strconv.Itoa(i) + "-" + strconv.Itoa(j)
			procs = append(procs, proc{pid: 100 + j, name: "churn-" + n, uid: uint32(i*20 + j), cgroup: "/user.slice/u" + n + ".scope", ram: constant(miB)})
		}
		tr.Add(snapshot(i, time.Second, procs))
	}
	for by, v := range tr.views {
		if v != nil && len(v.series) > 20 {
			t.Errorf("grouping %v keeps %d series after 300 snapshots of 20 new names each, want at most 20", sample.By(by), len(v.series))
		}
	}
}
