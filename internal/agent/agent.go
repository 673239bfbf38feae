// Package agent serves memwho's figures to Prometheus: per-group memory
// and TCP connections, optionally the largest processes, the host's
// meminfo and the agent's own cost.
//
// # Walks and scrapes
//
// With [Agent.Run] (memwho serve) the agent walks on its own clock: one
// walk (one tick of the sampling engine, package engine) every
// MinInterval, in its own goroutine, and every scrape is served from the
// last complete walk without waiting, whatever the walk in progress
// does; memwho_snapshot_age_seconds says how old it is. Only a scrape
// that finds no snapshot yet (the first walk runs) waits for one, at
// most ScrapeTimeout (or the timeout Prometheus announces in
// X-Prometheus-Scrape-Timeout-Seconds, less half a second).
//
// An agent nobody reads pauses: after IdleAfter (default 5 minutes,
// Prometheus' staleness window, longer than any usual scrape interval)
// with neither a scrape nor a snapshot read ([Agent.Latest]), Run stops
// walking until the next one. That first scrape then starts a walk and
// waits for it as above, so it pays one walk; the next ones do not.
//
// Without Run (tests, --once) walks are driven by scrapes as before: a
// scrape starts a walk when the last one started at least MinInterval
// ago and none is running, and waits for it up to the timeout.
//
// The metrics that change only with a walk are rendered once per walk
// into a buffer that scrapes copy; only the agent's own figures (snapshot
// age, scrape counts, CPU and memory) are rendered per scrape.
//
// Who may read the figures is decided where they are served: [ListenUnix]
// creates the unix socket whose permissions admit its owner and group,
// and [WebConfig] guards a TCP listener with TLS and basic auth. Flags,
// environment variables and the listeners' lifetimes are cmd/memwho's
// business.
package agent

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/memwho/memwho/internal/container"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/sample"
)

// Options configures an Agent.
type Options struct {
	// Engine configures the sampling engine. NeedUID and NeedCgroup are
	// set from By.
	Engine engine.Options
	// By is the grouping of the memwho_group_* series: ByProgram,
	// ByUser, ByCgroup, ByUnit, BySlice or ByContainer (ByPID would make
	// one series per process; use TopProcesses).
	By sample.By
	// TopProcesses adds memwho_process_* series for the K processes
	// using the most RAM; 0 adds none. It caps per-process cardinality.
	TopProcesses int
	// MinInterval is the time between the starts of two walks under
	// Run, and the least time between them without.
	MinInterval time.Duration
	// ScrapeTimeout is the longest a scrape waits for a walk in progress
	// before serving the last snapshot: under Run, only a scrape that
	// finds no snapshot yet, or Run paused, waits at all.
	ScrapeTimeout time.Duration
	// Version is reported in memwho_agent_info.
	Version string
	// IdleAfter pauses Run's walks after this long without a scrape or
	// a Latest call; 0 means DefaultIdleAfter, negative never pauses.
	IdleAfter time.Duration
	// FullDetail reads every process's UID and cgroup whatever By is
	// (engine NeedUID and NeedCgroup), so that a client of Latest can
	// group the snapshot any way.
	FullDetail bool
	// SysRoot, when set, is the sysfs tree whose zram devices every walk
	// adds to the snapshot's Meminfo.Zram (proc.ZramUsed: one directory
	// read and one small file per zram device), so that snapshots carry
	// the ledger's zram line.
	SysRoot string
	// Source, when set, is walked instead of a sampling engine built
	// from Engine (which is then ignored, but for Conns, which says
	// whether the TCP series are served): a fleet simulator
	// (tools/fleetsim) serves many simulated hosts through this
	// package's exposition this way.
	Source Source
}

// Source is what an Agent walks: the sampling engine (*engine.Engine),
// or anything that keeps its contract. Details returns one Detail per
// process of the last snapshot Scan filled, in the same order.
type Source interface {
	Scan(*sample.Snapshot) error
	Stats() engine.Stats
	Details() []engine.Detail
	Close() error
}

// Defaults for Options.
const (
	DefaultMinInterval   = 10 * time.Second
	DefaultScrapeTimeout = 5 * time.Second
	// DefaultIdleAfter is Prometheus' staleness window: a series not
	// scraped for that long is stale anyway.
	DefaultIdleAfter = 5 * time.Minute
	// MinFreshAge is the youngest snapshot Fresh insists on: however
	// often clients ask, forced walks happen at most once per second.
	MinFreshAge = time.Second
	// MaxTopProcesses bounds TopProcesses.
	MaxTopProcesses = 1000
)

// Agent samples on demand and renders metrics. Its methods are safe for
// concurrent use.
type Agent struct {
	opt Options
	src Source
	eng *engine.Engine // src, unless Options.Source was set
	// beforeWalk, when set (by tests), runs at the start of every walk:
	// a walk that hangs, which no file in a procfs tree can make happen
	// since memwho never opens a FIFO or blocks on a read.
	beforeWalk func()

	// onPause, when set (by tests), runs when Run pauses.
	onPause func()
	// freshMin is MinFreshAge (shorter in tests).
	freshMin time.Duration

	mu        sync.Mutex
	cur       *state    // last complete walk; nil before the first
	flight    *flight   // walk in progress, or nil
	lastStart time.Time // start of the last walk
	running   bool      // Run drives the walks
	closed    bool      // Close was called: no more walks
	paused    bool      // Run waits for a reader (IdleAfter)
	lastUse   time.Time // last scrape or Latest
	wake      chan struct{}

	// Cumulative figures, guarded by mu.
	walks, walkErrors, connErrors uint64
	walkSeconds                   float64
	pageWalks                     [4]uint64 // by reason: new, changed, related, forced
	deferred                      uint64
	pageWalkSeconds               float64
	scrapes, scrapeTimeouts       uint64 // scrapes completed, timed out
	scrapeSeconds                 float64

	// Used only by the walking goroutine (one at a time): a snapshot
	// buffer to reuse, and the one the current walk replaced, reused
	// one walk later (a scrape may still read it) unless lent.
	spare, retired *snapBuf
	lastLen        int
	names          sample.Namer
	ex             expo

	bufs sync.Pool // *[]byte for the per-scrape part
	self selfStats
}

// flight is one walk that scrapes can wait for.
type flight struct{ done chan struct{} }

// snapBuf is a snapshot and whether Latest has handed it out: then it is
// never written again.
type snapBuf struct {
	s    sample.Snapshot
	lent bool // guarded by Agent.mu
}

// state is one complete walk, immutable once published. snap is nil
// while no walk has succeeded.
type state struct {
	snap    *sample.Snapshot
	buf     *snapBuf  // holds snap
	time    time.Time // when the walk started
	oldest  time.Time // oldest figure (min SampledAt)
	body    []byte    // the per-walk metrics, rendered
	err     error     // of the last walk, when it failed and this is the one before
	walkDur time.Duration
}

// New starts the sampling engine. The first walk runs when Run starts, or
// at the first scrape (or Refresh).
func New(opt Options) (*Agent, error) {
	switch opt.By {
	case sample.ByProgram, sample.ByUser, sample.ByCgroup, sample.ByUnit, sample.BySlice, sample.ByContainer:
	default:
		return nil, fmt.Errorf("agent: cannot group by %s (one series per process): use TopProcesses", opt.By)
	}
	if opt.MinInterval <= 0 {
		opt.MinInterval = DefaultMinInterval
	}
	if opt.ScrapeTimeout <= 0 {
		opt.ScrapeTimeout = DefaultScrapeTimeout
	}
	if opt.IdleAfter == 0 {
		opt.IdleAfter = DefaultIdleAfter
	}
	opt.TopProcesses = min(max(opt.TopProcesses, 0), MaxTopProcesses)
	eo := opt.Engine
	eo.NeedUID = eo.NeedUID || opt.By == sample.ByUser || opt.FullDetail
	eo.NeedCgroup = eo.NeedCgroup || opt.By.NeedsCgroup() || opt.FullDetail
	a := &Agent{opt: opt, src: opt.Source, wake: make(chan struct{}, 1), freshMin: MinFreshAge}
	if a.src == nil {
		eng, err := engine.New(eo)
		if err != nil {
			return nil, err
		}
		a.eng, a.src = eng, eng
	}
	if eo.FS != nil && opt.By == sample.ByContainer {
		// Read with the agent's own rights only: under a unit's
		// ambient capabilities containers keep their short ids. The
		// names are published to the socket's and the endpoint's
		// readers: only from state they could read themselves
		// (container.Names.Public), also when the agent runs as root.
		names := container.NewNames(container.RootFor(eo.FS.Root()))
		names.Public = true
		a.names.Containers = names
	}
	a.bufs.New = func() any { b := make([]byte, 0, 8<<10); return &b }
	return a, nil
}

// Close stops the engine once any walk in progress has finished; no walk
// starts after it (cancel Run's context first).
func (a *Agent) Close() error {
	a.mu.Lock()
	a.closed = true
	f := a.flight
	a.mu.Unlock()
	if f != nil {
		<-f.done
	}
	return a.src.Close()
}

// Walks returns how many walks have completed.
func (a *Agent) Walks() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.walks
}

// Refresh starts a walk if one is due (or none has run) and waits up to
// timeout for the walk in progress, as a scrape without Run does. It
// reports whether a complete snapshot is available.
func (a *Agent) Refresh(ctx context.Context, timeout time.Duration) bool {
	a.await(ctx, timeout, false)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur != nil
}

// Run walks every MinInterval until ctx is done, pausing after IdleAfter
// without a reader (see "Walks and scrapes" in the package
// documentation). Scrapes are then served from the last walk without
// waiting. It returns nil when ctx is done, at once if Run is already
// running.
func (a *Agent) Run(ctx context.Context) error {
	a.mu.Lock()
	if a.running {
		a.mu.Unlock()
		return nil
	}
	a.running = true
	a.lastUse = time.Now()
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.running, a.paused = false, false
		a.mu.Unlock()
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-a.wake:
		}
		now := time.Now()
		a.mu.Lock()
		if a.flight == nil && a.opt.IdleAfter > 0 && now.Sub(a.lastUse) >= a.opt.IdleAfter {
			// Nobody reads: wait for a reader's wake, not the timer.
			a.paused = true
			a.mu.Unlock()
			if a.onPause != nil {
				a.onPause()
			}
			continue
		}
		if a.closed {
			a.mu.Unlock()
			return nil
		}
		f := a.flight
		if f == nil {
			if next := a.lastStart.Add(a.opt.MinInterval); !a.lastStart.IsZero() && now.Before(next) {
				a.mu.Unlock()
				timer.Reset(next.Sub(now))
				continue
			}
			f = a.startLocked(now)
		}
		a.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil
		}
		a.mu.Lock()
		next := a.lastStart.Add(a.opt.MinInterval)
		a.mu.Unlock()
		timer.Reset(max(time.Until(next), 0))
	}
}

// Latest returns the last complete snapshot and when its walk started.
// The snapshot is never written again (the agent takes a new buffer for
// later walks), so it may be read concurrently and kept; its Procs are
// sorted by PID. ok is false before the first complete walk. A call
// counts as a reader for IdleAfter and wakes a paused Run; a caller that
// needs a younger snapshot uses Fresh.
func (a *Agent) Latest() (snap *sample.Snapshot, taken time.Time, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.usedLocked(time.Now())
	return a.lendLocked()
}

func (a *Agent) lendLocked() (*sample.Snapshot, time.Time, bool) {
	st := a.cur
	if st == nil || st.snap == nil {
		return nil, time.Time{}, false
	}
	st.buf.lent = true
	return st.snap, st.time, true
}

// Fresh returns, as Latest, a snapshot no older than maxAge (at least
// MinFreshAge), starting a walk now if the last one is older and none
// is in progress, whatever MinInterval says, and waiting up to timeout
// for it; after the timeout it returns the last complete snapshot, which
// may be older. It is the --fresh of a snapshot client.
func (a *Agent) Fresh(ctx context.Context, maxAge, timeout time.Duration) (snap *sample.Snapshot, taken time.Time, ok bool) {
	maxAge = max(maxAge, a.freshMin)
	now := time.Now()
	a.mu.Lock()
	a.usedLocked(now)
	f := a.flight
	if f == nil && !a.closed && (a.lastStart.IsZero() || now.Sub(a.lastStart) >= maxAge) {
		f = a.startLocked(now)
	}
	a.mu.Unlock()
	if f != nil {
		wait(ctx, f, timeout)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lendLocked()
}

// usedLocked records a reader and wakes a paused Run.
func (a *Agent) usedLocked(now time.Time) {
	a.lastUse = now
	if a.paused {
		a.paused = false
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
}

// startLocked starts a walk; a.mu is held and no walk is in flight.
func (a *Agent) startLocked(now time.Time) *flight {
	a.flight = &flight{done: make(chan struct{})}
	a.lastStart = now
	go a.walk(a.flight, now)
	return a.flight
}

// await serves a scrape (scrape set) or Refresh: under Run a scrape
// waits only while no snapshot exists or Run is paused; otherwise it
// starts a walk when due and waits for the one in progress, up to
// timeout. It reports whether it gave up waiting.
func (a *Agent) await(ctx context.Context, timeout time.Duration, scrape bool) (timedOut bool) {
	now := time.Now()
	a.mu.Lock()
	if scrape {
		if a.running && a.cur != nil && !a.paused {
			a.lastUse = now
			a.mu.Unlock()
			return false
		}
		a.usedLocked(now)
	}
	if a.flight == nil && !a.closed && (a.lastStart.IsZero() || now.Sub(a.lastStart) >= a.opt.MinInterval) {
		a.startLocked(now)
	}
	f := a.flight
	a.mu.Unlock()
	if f == nil {
		return false
	}
	return wait(ctx, f, timeout)
}

// wait waits for f up to timeout and reports whether it gave up.
func wait(ctx context.Context, f *flight, timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-f.done:
		return false
	case <-t.C:
		return true
	case <-ctx.Done():
		return true
	}
}

// walk runs one engine tick and publishes the result.
func (a *Agent) walk(f *flight, start time.Time) {
	buf := a.spare
	a.spare = nil
	if buf == nil {
		buf = &snapBuf{}
		buf.s.Procs = make([]sample.Process, 0, a.lastLen+a.lastLen/8)
	}
	snap := &buf.s
	if a.beforeWalk != nil {
		a.beforeWalk()
	}
	err := a.src.Scan(snap)
	if err == nil && snap.MeminfoOK && a.opt.SysRoot != "" {
		// A malformed mm_stat leaves the devices read before it: the
		// ledger's zram line is informational, the walk stands.
		snap.Meminfo.Zram, _ = proc.ZramUsed(a.opt.SysRoot)
	}
	dur := time.Since(start)
	st := &state{snap: snap, buf: buf, time: start, err: err, walkDur: dur, oldest: start}
	stats := a.src.Stats()
	for _, d := range a.src.Details() {
		if d.SampledAt.Before(st.oldest) {
			st.oldest = d.SampledAt
		}
	}
	if snap != nil && stats.StaleBound > 0 {
		// What memwho answering from this snapshot must say: some
		// figures are older than the walk, and by how much their sum
		// can be off (they are not exact).
		snap.Oldest, snap.StaleBound = st.oldest, stats.StaleBound
	}

	a.mu.Lock()
	a.walks++
	a.walkSeconds += dur.Seconds()
	if err != nil {
		a.walkErrors++
	} else {
		a.pageWalks[0] += uint64(stats.New)
		a.pageWalks[1] += uint64(stats.Changed)
		a.pageWalks[2] += uint64(stats.Related)
		a.pageWalks[3] += uint64(stats.Forced)
		a.deferred += uint64(stats.Deferred)
		a.pageWalkSeconds += stats.WalkTime.Seconds()
		if stats.ConnsErr != nil && a.opt.Engine.Conns {
			a.connErrors++
		}
	}
	prev := a.cur
	a.mu.Unlock()

	switch {
	case err != nil && prev != nil:
		// Keep serving the last good snapshot; the error counter and
		// the snapshot's age tell what happened.
		kept := *prev
		kept.err = err
		st = &kept
		a.spare = buf // never published
	case err != nil:
		// Nothing to show yet but the agent's own figures.
		st = &state{err: err}
		a.spare = buf
	default:
		a.lastLen = len(snap.Procs)
		size := 16 << 10
		if prev != nil {
			size = len(prev.body) + len(prev.body)/8
		}
		a.ex.b = make([]byte, 0, size)
		a.renderWalk(&a.ex, st, &stats)
		st.body = a.ex.b
		a.ex.b = nil
	}

	a.mu.Lock()
	a.cur = st
	if err == nil && prev != nil && prev.buf != nil {
		// prev's buffer may still be read by a scrape that took it
		// before this swap: it is reused one walk later, if not lent.
		if r := a.retired; r != nil && !r.lent {
			a.spare = r
		}
		a.retired = prev.buf
	}
	a.flight = nil
	a.mu.Unlock()
	close(f.done)
}

// counters is a copy of the cumulative figures for rendering.
type counters struct {
	walks, walkErrors, connErrors uint64
	walkSeconds                   float64
	pageWalks                     [4]uint64
	deferred                      uint64
	pageWalkSeconds               float64
}

func (a *Agent) countersLocked() counters {
	return counters{a.walks, a.walkErrors, a.connErrors, a.walkSeconds, a.pageWalks, a.deferred, a.pageWalkSeconds}
}

// ServeHTTP serves /metrics.
func (a *Agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	timeout := a.opt.ScrapeTimeout
	if h := r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"); h != "" {
		if s, err := strconv.ParseFloat(h, 64); err == nil && s > 0 {
			// Leave half a second to render and send.
			timeout = min(timeout, max(time.Duration((s-0.5)*float64(time.Second)), 0))
		}
	}
	timedOut := a.await(r.Context(), timeout, true)

	bp := a.bufs.Get().(*[]byte)
	a.mu.Lock()
	st := a.cur
	if timedOut {
		a.scrapeTimeouts++
	}
	sc := scrapeCounters{a.scrapes, a.scrapeTimeouts, a.scrapeSeconds}
	c := a.countersLocked()
	a.mu.Unlock()

	ex := expo{b: (*bp)[:0]}
	a.renderScrape(&ex, st, &c, sc, time.Now())
	h := w.Header()
	h.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	n := len(ex.b)
	if st != nil {
		n += len(st.body)
	}
	h.Set("Content-Length", strconv.Itoa(n))
	if st != nil {
		w.Write(st.body)
	}
	w.Write(ex.b)
	*bp = ex.b
	a.bufs.Put(bp)

	a.mu.Lock()
	a.scrapes++
	a.scrapeSeconds += time.Since(start).Seconds()
	a.mu.Unlock()
}

// WriteMetrics renders what a scrape would get now, without waiting for
// or starting a walk (for tests and tools).
func (a *Agent) WriteMetrics(dst []byte) []byte {
	a.mu.Lock()
	st := a.cur
	sc := scrapeCounters{a.scrapes, a.scrapeTimeouts, a.scrapeSeconds}
	c := a.countersLocked()
	a.mu.Unlock()
	if st != nil {
		dst = append(dst, st.body...)
	}
	ex := expo{b: dst}
	a.renderScrape(&ex, st, &c, sc, time.Now())
	return ex.b
}

type scrapeCounters struct {
	scrapes, timeouts uint64
	seconds           float64
}

// Handler returns the agent's HTTP routes: /metrics and a landing page.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>memwho</title><h1>memwho agent</h1><p><a href="metrics">metrics</a></p>`)
	})
	return mux
}

// topProcesses returns the indexes of the k processes with the most RAM,
// ties broken by PID, reusing idx.
func topProcesses(procs []sample.Process, k int, idx []int) []int {
	idx = idx[:0]
	for i := range procs {
		idx = append(idx, i)
	}
	slices.SortFunc(idx, func(x, y int) int {
		a, b := &procs[x], &procs[y]
		if a.RAM != b.RAM {
			if a.RAM > b.RAM {
				return -1
			}
			return 1
		}
		return a.PID - b.PID
	})
	return idx[:min(k, len(idx))]
}
