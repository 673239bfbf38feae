package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/store"
	_ "github.com/memwho/memwho/internal/store/sqlite" // the default history database
)

const recordUsage = `Usage: memwho record [flags]

Samples every process's memory at a fixed interval and stores it: one row
per process (pid, start time, PSS, private, shared, swap, accuracy, cgroup
limit) and one per program, user and cgroup, plus the host's
/proc/meminfo. 'memwho leaks' ranks what grows; 'memwho export' writes it
out as CSV. The schema is in docs/history.md.

Runs until interrupted (SIGINT, SIGTERM), or for --count samples. A
sample is written in one transaction: killing memwho loses at most the
sample being written.

Flags:
  --db PATH|URL       SQLite file, or postgres://USER@HOST/DB for a shared
                      fleet database (default: see below)
  --interval D        time between samples (default 60s)
  --count N           stop after N samples (default 0: run until stopped)
  --once              take one sample and stop (--count 1)
  --keep D            delete samples older than D (default 30d; 0 keeps all)
  --max-size SIZE     SQLite: delete the oldest samples when the database
                      grows beyond SIZE (default 1GiB; 0: no bound)
  --host NAME         host name stored with each sample (default: this
                      host's name)
  --groups LIST       group rows to store besides processes: any of
                      program,user,cgroup (default all three), or none
  --spool DIR         PostgreSQL: where samples wait while the server is
                      unreachable (default: spool/ in memwho's state
                      directory)
  --spool-max SIZE    PostgreSQL: bound of the spool; the oldest samples
                      are dropped beyond it (default 64MiB)
  -p, --pid PIDS      only these processes (comma-separated)
  --fast              RSS-based estimates only (no page-table walks)
  --proc DIR          procfs tree to read (default /proc)
  --cgroup-root DIR   cgroup file system, for memory limits (default
                      /sys/fs/cgroup)
  -v, --verbose       print one line per sample on standard error

Sizes take a unit (B, KiB, MiB, GiB, TiB); durations are Go durations
(90s, 15m, 12h) or whole days (30d).

Default database: ` + store.DefaultDBHelp + `

Examples:
  memwho record                                 every minute, until stopped
  memwho record --interval 10s --keep 7d --max-size 200MiB
  memwho record --db postgres://memwho@db.example.com/memwho
  memwho record --once --db /tmp/h.db && memwho leaks --db /tmp/h.db
`

type recordFlags struct {
	db, host, groups, spool, procDir, cgroupRoot string
	pids                                         string
	interval                                     time.Duration
	count                                        int
	once, fast, verbose                          bool
	keep, maxSize, spoolMax                      string
}

func (f *recordFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.db, "db", "", "")
	fs.DurationVar(&f.interval, "interval", time.Minute, "")
	fs.IntVar(&f.count, "count", 0, "")
	fs.BoolVar(&f.once, "once", false, "")
	fs.StringVar(&f.keep, "keep", "30d", "")
	fs.StringVar(&f.maxSize, "max-size", "1GiB", "")
	fs.StringVar(&f.host, "host", "", "")
	fs.StringVar(&f.groups, "groups", "program,user,cgroup", "")
	fs.StringVar(&f.spool, "spool", "", "")
	fs.StringVar(&f.spoolMax, "spool-max", "64MiB", "")
	fs.BoolVar(&f.fast, "fast", false, "")
	fs.StringVar(&f.pids, "p", "", "")
	fs.StringVar(&f.pids, "pid", "", "")
	fs.StringVar(&f.procDir, "proc", "/proc", "")
	fs.StringVar(&f.cgroupRoot, "cgroup-root", "/sys/fs/cgroup", "")
	fs.BoolVar(&f.verbose, "v", false, "")
	fs.BoolVar(&f.verbose, "verbose", false, "")
}

// recordPlan is the validated form of the flags.
type recordPlan struct {
	db       string
	postgres bool
	kinds    []store.Kind
	keep     time.Duration
	maxSize  int64
	spoolMax int64
	host     string
	pids     []int
}

func (f *recordFlags) plan() (*recordPlan, error) {
	p := &recordPlan{db: f.db, host: f.host}
	var err error
	if p.db == "" {
		if p.db, err = store.DefaultDB(); err != nil {
			return nil, err
		}
	}
	p.postgres = strings.Contains(p.db, "://")
	if f.interval <= 0 {
		return nil, usagef("--interval: must be positive")
	}
	if f.count < 0 {
		return nil, usagef("--count: must not be negative")
	}
	if f.once {
		if f.count > 1 {
			return nil, usagef("--once and --count %d exclude each other", f.count)
		}
		f.count = 1
	}
	if p.kinds, err = store.ParseKinds(f.groups); err != nil {
		return nil, usagef("--groups: %v", err)
	}
	if p.keep, err = parseDays(f.keep); err != nil {
		return nil, usagef("--keep: %v", err)
	}
	if p.maxSize, err = parseSize(f.maxSize); err != nil {
		return nil, usagef("--max-size: %v", err)
	}
	if p.spoolMax, err = parseSize(f.spoolMax); err != nil {
		return nil, usagef("--spool-max: %v", err)
	}
	if f.pids != "" {
		for _, s := range strings.Split(f.pids, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n <= 0 {
				return nil, usagef("-p: %q is not a process id", s)
			}
			p.pids = append(p.pids, n)
		}
	}
	if p.host == "" {
		if p.host, err = os.Hostname(); err != nil {
			return nil, fmt.Errorf("host name: %w (use --host)", err)
		}
	}
	return p, nil
}

// parseDays parses a Go duration or a whole number of days ("30d"); "0"
// is zero.
func parseDays(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || n > 100*365 {
			return 0, fmt.Errorf("bad number of days %q", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration %q (want 90s, 15m, 12h or 30d)", s)
	}
	return d, nil
}

// parseSize parses a byte count with an optional binary unit: 512, 4KiB,
// 64MiB, 1GiB, 1TiB (K, M, G, T, KB, MB, ... are taken as binary too).
func parseSize(s string) (int64, error) {
	num := strings.TrimRight(s, "BbiKMGTkmgt")
	unit := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(s[len(num):], "B"), "b"))
	unit = strings.TrimSuffix(unit, "I")
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q (want a number with B, KiB, MiB, GiB or TiB)", s)
	}
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
	sh, ok := shift[unit]
	if !ok {
		return 0, fmt.Errorf("bad size unit in %q (want B, KiB, MiB, GiB or TiB)", s)
	}
	v := n * float64(uint64(1)<<sh)
	if v >= 1<<62 {
		return 0, fmt.Errorf("size %q too large", s)
	}
	return int64(v), nil
}

// recordScanner is what record samples with: the sampling engine
// (internal/engine), incremental as for the live view.
type recordScanner interface {
	Scan(*sample.Snapshot) error
	Close() error
}

var newRecordScanner = func(opt engine.Options) (recordScanner, error) { return engine.New(opt) }

func runRecord(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlagSet("memwho record", recordUsage, stderr)
	var f recordFlags
	f.register(fs)
	if err := parseFlags(fs, recordUsage, args, stdout); err != nil {
		return err
	}
	plan, err := f.plan()
	if err != nil {
		return err
	}

	warn := newWarner(stderr)
	opt := store.OpenOptions{SpoolMax: plan.spoolMax, Warn: warn.print}
	if plan.postgres {
		opt.SpoolDir = f.spool
		if opt.SpoolDir == "" {
			dir, err := store.DefaultDir()
			if err != nil {
				return err
			}
			opt.SpoolDir = filepath.Join(dir, "spool")
		}
	}
	st, err := store.Open(ctx, plan.db, opt)
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	defer func() {
		if cerr := st.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close history: %w", cerr)
		}
	}()

	procFS, err := enterScan("record", f.procDir, false, stderr)
	if err != nil {
		return err
	}
	defer procFS.Close()
	sc, err := newRecordScanner(engine.Options{
		FS:            procFS,
		Fast:          f.fast,
		NeedStartTime: true,
		PIDs:          plan.pids,
		NeedUID:       hasKind(plan.kinds, store.KindUser),
		// Limits need every process's cgroup, not just cgroup groups.
		NeedCgroup: true,
	})
	if err != nil {
		return err
	}
	defer sc.Close()

	limits := newCgroupLimits(f.cgroupRoot)
	b := store.Builder{
		Host:   plan.host,
		BootID: readBootID(procFS),
		Kinds:  plan.kinds,
		Limit:  func(p *sample.Process) store.Limit { return limits.of(p.Cgroup) },
	}
	var (
		snap sample.Snapshot
		s    store.Sample
	)
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	for n := 0; f.count == 0 || n < f.count; n++ {
		if n > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
		start := time.Now()
		if err := sc.Scan(&snap); err != nil {
			warn.print(fmt.Sprintf("scan: %v", err))
			continue
		}
		limits.reset()
		b.Fill(&s, &snap)
		// The write runs to completion even when a signal arrives: a
		// sample is cheap to finish, and stopping is checked right after.
		if err := st.Write(context.WithoutCancel(ctx), &s); err != nil {
			// Only a database busy with another writer may clear up by
			// itself; a full disk, an I/O error or a refusal by the
			// server would lose every later sample as well, so it ends
			// the run with an error (and a non-zero exit) instead of a
			// warning nobody reads.
			if !errors.Is(err, store.ErrBusy) {
				return fmt.Errorf("sample of %s not stored: %w", s.Time.Format(time.TimeOnly), err)
			}
			warn.print(fmt.Sprintf("sample of %s not stored: %v", s.Time.Format(time.TimeOnly), err))
			continue
		}
		if plan.keep > 0 || (plan.maxSize > 0 && !plan.postgres) {
			r := store.Retention{Host: plan.host}
			if plan.keep > 0 {
				r.Before = s.Time.Add(-plan.keep)
			}
			if !plan.postgres {
				r.MaxSize = plan.maxSize
				// Each recorder prunes what it wrote; a SQLite file is
				// normally one host's, and the size bound is the file's.
				r.Host = ""
			}
			if p, err := st.Prune(context.WithoutCancel(ctx), r); err != nil {
				warn.print(fmt.Sprintf("retention: %v", err))
			} else if p.Samples > 0 && f.verbose {
				fmt.Fprintf(stderr, "memwho: retention deleted %d samples (database now %d bytes)\n", p.Samples, p.Size)
			}
		}
		warn.ok()
		if f.verbose {
			fmt.Fprintf(stderr, "memwho: sample %s: %d processes, %d rows, %v\n",
				s.Time.Format("15:04:05.000"), s.Procs, len(s.Rows), time.Since(start).Round(time.Millisecond))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil
}

func hasKind(kinds []store.Kind, k store.Kind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

// warner prints "memwho: warning:" lines, each distinct message once
// until a sample succeeds again, so that an outage does not write a line
// per sample.
type warner struct {
	w    io.Writer
	seen map[string]bool
}

func newWarner(w io.Writer) *warner { return &warner{w: w, seen: map[string]bool{}} }

func (w *warner) print(msg string) {
	if w.seen[msg] {
		return
	}
	w.seen[msg] = true
	fmt.Fprintf(w.w, "memwho: warning: %s\n", sanitizeMessage(msg))
}

func (w *warner) ok() { clear(w.seen) }

// readBootID returns sys/kernel/random/boot_id of the procfs tree, "" if
// unreadable.
func readBootID(fs *proc.FS) string {
	b, err := fs.ReadFile("sys/kernel/random/boot_id", nil, 4096)
	if err != nil {
		return ""
	}
	return store.CleanKey(string(bytes.TrimSpace(b)))
}

// cgroupLimits finds the memory limit that applies to a cgroup: the
// tightest over the cgroup and its ancestors, measured by the room left
// (limit minus usage). Answers are cached per directory for one sample.
type cgroupLimits struct {
	root string // memory hierarchy: /sys/fs/cgroup (v2) or /sys/fs/cgroup/memory (v1)
	v1   bool
	dirs map[string]store.Limit // one directory's own limit
	eff  map[string]store.Limit // effective limit of a cgroup path
}

// unlimitedV1 is where cgroup v1 reports "no limit": the largest page
// multiple below 2^63. Anything from 2^62 up is taken as unlimited.
const unlimitedV1 = 1 << 62

func newCgroupLimits(root string) *cgroupLimits {
	c := &cgroupLimits{root: root, dirs: map[string]store.Limit{}, eff: map[string]store.Limit{}}
	if root == "" {
		return c
	}
	if _, err := os.Stat(filepath.Join(root, "memory", "memory.limit_in_bytes")); err == nil {
		c.root, c.v1 = filepath.Join(root, "memory"), true
	}
	return c
}

func (c *cgroupLimits) reset() {
	clear(c.dirs)
	clear(c.eff)
}

// of returns the effective limit of the cgroup at path (as in
// /proc/PID/cgroup), the zero Limit when there is none.
func (c *cgroupLimits) of(path string) store.Limit {
	if c.root == "" || path == "" || !strings.HasPrefix(path, "/") {
		return store.Limit{}
	}
	if l, ok := c.eff[path]; ok {
		return l
	}
	best := c.own(path)
	if parent := filepath.Dir(path); parent != path {
		if l := c.of(parent); l.Limit > 0 && (best.Limit == 0 || l.Free < best.Free) {
			best = l
		}
	}
	c.eff[path] = best
	return best
}

// own reads one cgroup directory's limit and usage.
func (c *cgroupLimits) own(path string) store.Limit {
	if l, ok := c.dirs[path]; ok {
		return l
	}
	maxFile, curFile := "memory.max", "memory.current"
	if c.v1 {
		maxFile, curFile = "memory.limit_in_bytes", "memory.usage_in_bytes"
	}
	dir := filepath.Join(c.root, filepath.Clean(path))
	var l store.Limit
	if limit, ok := readUint(filepath.Join(dir, maxFile)); ok && limit < unlimitedV1 {
		if used, ok := readUint(filepath.Join(dir, curFile)); ok {
			l.Limit = limit
			if used < limit {
				l.Free = limit - used
			}
		}
	}
	c.dirs[path] = l
	return l
}

// readUint reads a file holding one decimal number; "max" and errors
// give false.
func readUint(name string) (uint64, bool) {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	return n, err == nil
}
