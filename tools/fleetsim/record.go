package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/progress"
	"github.com/memwho/memwho/internal/record"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/store"

	// The back ends register themselves with store.Open.
	_ "github.com/memwho/memwho/internal/store/postgres"
	_ "github.com/memwho/memwho/internal/store/sqlite"
)

type recordFlags struct {
	fleet    fleetFlags
	db       string
	interval time.Duration
	duration time.Duration
	realtime bool
	workers  int
	keep     time.Duration
	groups   string
	dir      string
	quiet    bool
	cpuUser  string
}

func runRecord(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fleetsim record", flag.ContinueOnError)
	var rf recordFlags
	rf.fleet.register(fs)
	fs.StringVar(&rf.db, "db", "", "the history every host records into (postgres://… or a SQLite path)")
	fs.DurationVar(&rf.interval, "interval", time.Minute, "each host's sampling interval (record --interval)")
	fs.DurationVar(&rf.duration, "duration", 10*time.Minute, "simulated time to record")
	fs.BoolVar(&rf.realtime, "realtime", false, "record at the real interval (record.Run per host) instead of as fast as the database takes it")
	fs.IntVar(&rf.workers, "workers", 8, "hosts writing at once when time-compressed")
	fs.DurationVar(&rf.keep, "keep", 0, "record --keep of every host (0 keeps everything)")
	fs.StringVar(&rf.groups, "groups", "program,user,cgroup", "record --groups")
	fs.StringVar(&rf.dir, "dir", "", "where the hosts' spools and boot ids go (default: a temporary directory, removed at the end)")
	fs.BoolVar(&rf.quiet, "quiet", false, "no progress line")
	fs.StringVar(&rf.cpuUser, "db-cpu-user", "", "report the CPU time the processes of this user (the database server's) used during the run")
	if err := parse(fs, args); err != nil {
		return err
	}
	if rf.db == "" {
		return fmt.Errorf("%w: --db is required", errUsage)
	}
	if rf.interval <= 0 || rf.duration < rf.interval || rf.workers < 1 {
		return fmt.Errorf("%w: --interval must be positive, --duration at least one interval, --workers at least 1", errUsage)
	}
	kinds, err := store.ParseKinds(rf.groups)
	if err != nil {
		return fmt.Errorf("%w: --groups: %v", errUsage, err)
	}
	now := time.Now().Truncate(time.Second)
	def := now.Add(-rf.duration)
	if rf.realtime {
		def = now
	}
	f, err := rf.fleet.fleet(def)
	if err != nil {
		return err
	}
	dir := rf.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "fleetsim-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	steps := int(rf.duration / rf.interval)
	r := &recorders{f: f, rf: &rf, kinds: kinds, dir: dir, stderr: stderr}
	fmt.Fprintf(stdout, "fleetsim: %d hosts, %d samples each every %v from %s (%s), into %s\n",
		f.Hosts, steps, rf.interval, f.Start.UTC().Format(time.RFC3339), map[bool]string{true: "real time", false: "time-compressed"}[rf.realtime], redact(rf.db))
	t0 := time.Now()
	if err := r.open(ctx); err != nil {
		r.close()
		return err
	}
	fmt.Fprintf(stdout, "fleetsim: opened %d histories in %v\n", f.Hosts, time.Since(t0).Round(time.Millisecond))
	cpu0, _ := userCPU(rf.cpuUser)
	self0 := selfCPU()
	start := time.Now()
	meter := progress.Start(stderr, progress.Show(stderr, rf.quiet), "fleetsim", "samples", int64(f.Hosts*steps))
	r.meter = meter
	if rf.realtime {
		err = r.runRealtime(ctx, steps)
	} else {
		err = r.runCompressed(ctx, steps)
	}
	meter.Done()
	wall := time.Since(start)
	cpu1, cpuErr := userCPU(rf.cpuUser)
	self1 := selfCPU()
	r.close()
	if err != nil {
		return err
	}
	samples, rows := r.samples.Load(), r.rows.Load()
	fmt.Fprintf(stdout, "fleetsim: %d samples, %d rows in %v: %.0f samples/s, %.0f rows/s (%.1f rows per sample, %.1f processes per sample)\n",
		samples, rows, wall.Round(time.Millisecond), float64(samples)/wall.Seconds(), float64(rows)/wall.Seconds(),
		float64(rows)/float64(max(samples, 1)), float64(r.procs.Load())/float64(max(samples, 1)))
	simulated := time.Duration(steps) * rf.interval
	fmt.Fprintf(stdout, "fleetsim: %v of simulated time in %v of wall time (%.1fx real time); real time needs %.0f rows/s\n",
		simulated, wall.Round(time.Millisecond), simulated.Seconds()/wall.Seconds(), float64(rows)/simulated.Seconds())
	fmt.Fprintf(stdout, "fleetsim: fleetsim's own CPU %.1f s (%.2f cores)\n", self1-self0, (self1-self0)/wall.Seconds())
	if p := &r.prunes; p.n > 0 {
		fmt.Fprintf(stdout, "fleetsim: retention: %d prunes, %v in all, %v each on average, the longest %v (at %s); %d samples deleted\n",
			p.n, p.total.Round(time.Millisecond), (p.total / time.Duration(p.n)).Round(time.Microsecond), p.max.Round(time.Microsecond),
			p.maxAt.UTC().Format(time.RFC3339), p.deleted)
		if p.dropN > 0 {
			fmt.Fprintf(stdout, "fleetsim: retention: %d prunes deleted samples (%d), %v in all, the longest %v (at %s)\n",
				p.dropN, p.deleted, p.dropTotal.Round(time.Microsecond), p.dropMax.Round(time.Microsecond), p.dropAt.UTC().Format(time.RFC3339))
		}
	}
	if rf.cpuUser != "" {
		if cpuErr != nil {
			return cpuErr
		}
		fmt.Fprintf(stdout, "fleetsim: CPU of user %s's processes (the database): %.1f s (%.2f cores)\n", rf.cpuUser, cpu1-cpu0, (cpu1-cpu0)/wall.Seconds())
	}
	return nil
}

// recorders are the fleet's history writers.
type recorders struct {
	f      *Fleet
	rf     *recordFlags
	kinds  []store.Kind
	dir    string
	stderr io.Writer
	meter  *progress.Meter

	hosts   []*Host
	clocks  []time.Time // each host's simulated time, set before its sample
	stores  []store.Store
	recs    []*record.Recorder
	cfgs    []*record.Config
	warns   []*record.Warner
	samples atomic.Int64
	rows    atomic.Int64
	procs   atomic.Int64
	prunes  pruneStats
}

// pruneStats is what retention cost: record prunes after every sample.
type pruneStats struct {
	mu      sync.Mutex
	n       int
	total   time.Duration
	max     time.Duration
	maxAt   time.Time
	deleted int64
	// The prunes that deleted samples: with one --keep, the drops of a
	// day's partition.
	dropN     int
	dropTotal time.Duration
	dropMax   time.Duration
	dropAt    time.Time
}

// timedStore times its store's Prune.
type timedStore struct {
	store.Store
	st *pruneStats
}

func (t timedStore) Prune(ctx context.Context, r store.Retention) (store.Pruned, error) {
	start := time.Now()
	p, err := t.Store.Prune(ctx, r)
	d := time.Since(start)
	t.st.mu.Lock()
	defer t.st.mu.Unlock()
	t.st.n++
	t.st.total += d
	t.st.deleted += p.Samples
	if d > t.st.max {
		t.st.max, t.st.maxAt = d, r.Now
	}
	if p.Samples > 0 {
		t.st.dropN++
		t.st.dropTotal += d
		if d > t.st.dropMax {
			t.st.dropMax, t.st.dropAt = d, r.Now
		}
	}
	return p, err
}

// warnings collects a host's warnings; the first of each is printed.
type warnings struct {
	host   string
	stderr io.Writer
	mu     *sync.Mutex
	seen   map[string]bool
}

func (w *warnings) Write(p []byte) (int, error) {
	msg := string(bytes.TrimSpace(p))
	w.mu.Lock()
	defer w.mu.Unlock()
	// One line per distinct message across the fleet, not 1,000.
	key := strings.ReplaceAll(msg, w.host, "HOST")
	if !w.seen[key] {
		w.seen[key] = true
		fmt.Fprintf(w.stderr, "fleetsim: %s: %s\n", w.host, msg)
	}
	return len(p), nil
}

// open opens every host's history as memwho record does, with a spool
// and a boot id of its own.
func (r *recorders) open(ctx context.Context) error {
	n := r.f.Hosts
	r.hosts = make([]*Host, n)
	r.clocks = make([]time.Time, n)
	r.stores = make([]store.Store, n)
	r.recs = make([]*record.Recorder, n)
	r.cfgs = make([]*record.Config, n)
	r.warns = make([]*record.Warner, n)
	var mu sync.Mutex
	seen := map[string]bool{}
	// Hosts are built and opened in parallel: a migration takes a lock,
	// the rest is a connection each.
	var wg sync.WaitGroup
	errs := make([]error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = r.openHost(ctx, i, &mu, seen)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *recorders) openHost(ctx context.Context, i int, mu *sync.Mutex, seen map[string]bool) error {
	h := r.f.NewHost(i)
	r.hosts[i] = h
	hostDir := filepath.Join(r.dir, h.Name)
	root := filepath.Join(hostDir, "root")
	if err := os.MkdirAll(filepath.Join(root, "sys/kernel/random"), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "sys/kernel/random/boot_id"), []byte(h.BootID+"\n"), 0o600); err != nil {
		return err
	}
	cfg := &record.Config{DB: r.rf.db, Host: h.Name, Kinds: r.kinds, Interval: r.rf.interval, Keep: r.rf.keep,
		Spool: filepath.Join(hostDir, "spool"), CgroupRoot: filepath.Join(hostDir, "cgroup")}
	if r.rf.realtime {
		cfg.Count = int(r.rf.duration / r.rf.interval)
	}
	warn := record.NewWarner(&warnings{host: h.Name, stderr: r.stderr, mu: mu, seen: seen})
	opened, err := record.Open(ctx, cfg, warn)
	if err != nil {
		return fmt.Errorf("host %s: %w", h.Name, err)
	}
	st := store.Store(timedStore{opened, &r.prunes})
	if _, ok := opened.(store.Spooler); ok {
		st = spoolingStore{timedStore{opened, &r.prunes}, opened.(store.Spooler)}
	}
	r.stores[i], r.cfgs[i], r.warns[i] = st, cfg, warn
	if r.rf.realtime {
		return nil
	}
	fs, err := proc.Open(root)
	if err != nil {
		return err
	}
	defer fs.Close()
	r.recs[i] = record.New(st, h.Scanner(func() time.Time { return r.clocks[i] }), fs, cfg, io.Discard, warn)
	return nil
}

func (r *recorders) close() {
	for i, rec := range r.recs {
		if rec != nil {
			rec.Close()
		}
		if st := r.stores[i]; st != nil {
			st.Close()
		}
	}
}

// phase is host i's offset within the interval: recorders started at
// different times sample at different seconds of the minute.
func (r *recorders) phase(i int) time.Duration {
	return time.Duration(int64(r.rf.interval) * int64(i) / int64(r.f.Hosts)).Truncate(time.Millisecond)
}

func (r *recorders) count(s *store.Sample) {
	r.samples.Add(1)
	r.rows.Add(int64(len(s.Rows)))
	r.procs.Add(int64(s.Procs))
	r.meter.Add(1)
}

// runCompressed takes the samples of steps intervals as fast as the
// database takes them: every host's sample of one interval, from
// --workers goroutines, before the next interval's.
func (r *recorders) runCompressed(ctx context.Context, steps int) error {
	w := min(r.rf.workers, r.f.Hosts)
	for k := range steps {
		var wg sync.WaitGroup
		errs := make([]error, w)
		for j := range w {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := j; i < r.f.Hosts; i += w {
					if ctx.Err() != nil {
						return
					}
					r.clocks[i] = r.f.Start.Add(time.Duration(k)*r.rf.interval + r.phase(i))
					stored, err := r.recs[i].Sample(ctx)
					if err != nil {
						errs[j] = fmt.Errorf("host %s: %w", r.hosts[i].Name, err)
						return
					}
					if stored {
						r.count(r.recs[i].Last())
					}
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// runRealtime runs memwho record's own loop (record.Run) for every
// host, started at its phase of the interval.
func (r *recorders) runRealtime(ctx context.Context, steps int) error {
	var wg sync.WaitGroup
	errs := make([]error, r.f.Hosts)
	start := time.Now()
	for i := range r.f.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-time.After(time.Until(start.Add(r.phase(i)))):
			case <-ctx.Done():
				return
			}
			root := filepath.Join(r.dir, r.hosts[i].Name, "root")
			fs, err := proc.Open(root)
			if err != nil {
				errs[i] = err
				return
			}
			defer fs.Close()
			sc := &countingScanner{Scanner: r.hosts[i].Scanner(time.Now), r: r}
			errs[i] = record.Run(ctx, r.stores[i], sc, fs, r.cfgs[i], io.Discard, r.warns[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("host %s: %w", r.hosts[i].Name, err)
		}
	}
	return nil
}

// spoolingStore keeps the Spooler of a timed store visible to record.
type spoolingStore struct {
	timedStore
	store.Spooler
}

// countingScanner counts what record.Run samples: one scan is one
// sample, its rows the processes and the groups Fill adds.
type countingScanner struct {
	*Scanner
	r *recorders
}

func (c *countingScanner) Scan(s *sample.Snapshot) error {
	err := c.Scanner.Scan(s)
	if err == nil {
		var b store.Builder
		b.Kinds = c.r.kinds
		var out store.Sample
		b.Fill(&out, s)
		c.r.count(&out)
	}
	return err
}

// userCPU returns the CPU seconds used so far by the processes of user
// (a name or uid), those running and, through their parents' cutime and
// cstime, those that exited; 0 for "".
func userCPU(user string) (float64, error) {
	if user == "" {
		return 0, nil
	}
	uid, err := lookupUID(user)
	if err != nil {
		return 0, err
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var ticks uint64
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+e.Name(), &st) != nil || st.Uid != uid {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		// utime, stime, cutime, cstime: fields 14-17 of stat, 12-15
		// after the command.
		for _, k := range []int{11, 12, 13, 14} {
			if k < len(f) {
				n, _ := strconv.ParseUint(f[k], 10, 64)
				ticks += n
			}
		}
	}
	return float64(ticks) / 100, nil
}

func lookupUID(user string) (uint32, error) {
	if n, err := strconv.ParseUint(user, 10, 32); err == nil {
		return uint32(n), nil
	}
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ":")
		if len(f) > 2 && f[0] == user {
			n, err := strconv.ParseUint(f[2], 10, 32)
			return uint32(n), err
		}
	}
	return 0, fmt.Errorf("--db-cpu-user: no user %q", user)
}

// selfCPU returns this process's CPU seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// redact drops a password from a database URL for printing.
func redact(db string) string {
	if i := strings.Index(db, "://"); i >= 0 {
		if at := strings.IndexByte(db[i+3:], '@'); at >= 0 {
			cred := db[i+3 : i+3+at]
			if c := strings.IndexByte(cred, ':'); c >= 0 {
				return db[:i+3] + cred[:c] + ":xxx" + db[i+3+at:]
			}
		}
	}
	return db
}

func sortLeaks(l []Leak) {
	slices.SortFunc(l, func(a, b Leak) int {
		if a.Rate != b.Rate {
			if a.Rate > b.Rate {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Host, b.Host)
	})
}
