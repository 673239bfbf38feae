// Package record is memwho record's loop: every interval it scans every
// process, fills one history sample (processes and groups, each with the
// cgroup memory limit that applies to it, see package cgroup), writes it
// in one transaction and applies the retention policy.
//
// The caller opens the history (Open, with the user's own rights) and
// the scanner (with whatever privilege the scan keeps) before Run: the
// order of those two steps is the command's privilege policy, not this
// package's.
package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memwho/memwho/internal/cgroup"
	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/container"
	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/store"
)

// Scanner is what record samples with. sample.Scanner walks every
// process each time; the live view's sampling engine (internal/engine)
// has the same Scan contract and could be swapped in.
type Scanner interface {
	Scan(*sample.Snapshot) error
	Close() error
}

// Config is what one run records and keeps.
type Config struct {
	// DB is the history database (a path or URL, see store.Open).
	DB string
	// Host is stored with each sample.
	Host string
	// Kinds are the group rows stored besides processes.
	Kinds []store.Kind
	// Interval is the time between samples; Count stops after that many
	// (0: until ctx is done).
	Interval time.Duration
	Count    int
	// Keep deletes samples older than this (0 keeps all); MaxSize bounds
	// a SQLite file in bytes (0: no bound).
	Keep    time.Duration
	MaxSize int64
	// Spool is where a shared (PostgreSQL) database's samples wait while
	// the server is unreachable ("": a directory per database under
	// spool/ in store.DefaultDir); SpoolMax bounds it in bytes.
	Spool    string
	SpoolMax int64
	// PIDs are the processes -p asked for (nil: all); when none of
	// them is left, Run warns.
	PIDs []int
	// CgroupRoot is the cgroup file system memory limits are read from.
	CgroupRoot string
	// Verbose prints one line per sample (and per pruning) to Run's log.
	Verbose bool
}

// Open opens the history cfg names for writing, with a spool for a
// shared database. A SQLite file's directory must exist, unless it is
// memwho's own (store.DefaultDir), which is created. Warnings (spooling started, samples dropped) go to
// warn.
func Open(ctx context.Context, cfg *Config, warn *Warner) (store.Store, error) {
	opt := store.OpenOptions{SpoolMax: cfg.SpoolMax, Warn: warn.Print}
	if store.Shared(cfg.DB) && cfg.Interval >= connIdleFrom {
		// A fleet's recorders hold a connection only while they
		// write and a second after: 1,000 of them at one sample a
		// minute hold about 30 at a time, where keeping them needs
		// max_connections of 1,000 and a backend each (docs/fleet.md:
		// with 10 s, 290 server processes).
		opt.ConnIdle = connIdle
	}
	if store.Shared(cfg.DB) {
		opt.SpoolDir = cfg.Spool
		if opt.SpoolDir == "" {
			dir, err := store.DefaultDir()
			if err != nil {
				return nil, err
			}
			opt.SpoolDir = filepath.Join(dir, "spool")
			// One default directory is shared by every database a
			// user records into: each gets its own under it.
			opt.SpoolPerTarget = true
		}
	}
	if !store.Shared(cfg.DB) {
		// memwho's own state directory is created (mode 0700) when the
		// history goes there; any other missing directory is the
		// user's typo, refused by the store.
		dir, err := store.DefaultDir()
		if db := strings.TrimPrefix(cfg.DB, "file:"); err == nil && filepath.Dir(filepath.Clean(db)) == dir {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("create %s: %w", dir, err)
			}
		}
	}
	return store.Open(ctx, cfg.DB, opt)
}

// A recorder whose interval is at least connIdleFrom closes its
// database connection after connIdle without a write.
const (
	connIdleFrom = 30 * time.Second
	connIdle     = time.Second
)

// Run records samples into st with sc until cfg.Count samples are taken
// or ctx is done, and returns nil then. fs is the procfs tree sc reads
// (for the boot id). A failed scan and a database busy with another
// writer are warnings; any other write error ends the run.
func Run(ctx context.Context, st store.Store, sc Scanner, fs *proc.FS, cfg *Config, log io.Writer, warn *Warner) error {
	r := New(st, sc, fs, cfg, log, warn)
	defer r.Close()
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	for n := 0; cfg.Count == 0 || n < cfg.Count; n++ {
		if n > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
		stored, err := r.Sample(ctx)
		if err != nil {
			return err
		}
		if stored && ctx.Err() != nil {
			break
		}
	}
	return nil
}

// Recorder takes the samples of one run: Run calls Sample once per
// interval; a fleet simulator (tools/fleetsim) calls it for many hosts
// on a clock of its own, so that what it measures is this code.
type Recorder struct {
	st     store.Store
	sc     Scanner
	cfg    *Config
	log    io.Writer
	warn   *Warner
	limits *cgroup.Limits
	b      store.Builder
	shared bool
	file   string
	opened os.FileInfo

	overBound bool // warned that --max-size cannot be met
	pidsGone  bool // warned that -p's processes are all gone
	snap      sample.Snapshot
	s         store.Sample
}

// New returns the Recorder of one run (see Run for the arguments). Close
// it when done.
func New(st store.Store, sc Scanner, fs *proc.FS, cfg *Config, log io.Writer, warn *Warner) *Recorder {
	r := &Recorder{st: st, sc: sc, cfg: cfg, log: log, warn: warn, limits: cgroup.NewLimits(cfg.CgroupRoot)}
	r.b = store.Builder{
		Host:   cfg.Host,
		BootID: BootID(fs),
		Kinds:  cfg.Kinds,
		// Names are read with the recorder's own rights: with the
		// capabilities of a unit, containers keep their short ids.
		Containers: container.NewNames(container.RootFor(fs.Root())),
		Limit: func(p *sample.Process) store.Limit {
			l := r.limits.Of(p.Cgroup)
			return store.Limit{Limit: l.Limit, Free: l.Free}
		},
	}
	r.shared = store.Shared(cfg.DB)
	// A SQLite file removed or replaced under a running recorder would
	// take every later sample into an unlinked inode, with exit 0: the
	// path is checked before each write against the file the store
	// opened, not the one the path named when Run started (a
	// replacement in between would slip past).
	r.file = store.FilePath(cfg.DB)
	if f, ok := st.(store.Filer); ok && r.file != "" {
		r.opened = f.Opened()
	} else if r.file != "" {
		r.opened, _ = os.Stat(r.file)
	}
	return r
}

// Close releases what New opened (not the store or the scanner).
func (r *Recorder) Close() { r.limits.Close() }

// Last returns the sample taken last (valid until the next Sample).
func (r *Recorder) Last() *store.Sample { return &r.s }

// Sample takes one sample, stores it and applies retention. stored says
// whether it reached the history (or the spool); a failed scan or a busy
// database is a warning and stored false. An error ends the run.
func (r *Recorder) Sample(ctx context.Context) (stored bool, err error) {
	cfg, warn, log := r.cfg, r.warn, r.log
	start := time.Now()
	if err := r.sc.Scan(&r.snap); err != nil {
		warn.Print(fmt.Sprintf("scan: %v", err))
		return false, nil
	}
	r.limits.Reset()
	s := &r.s
	r.b.Fill(s, &r.snap)
	if len(cfg.PIDs) > 0 {
		// Samples of no process are stored (the host's meminfo is
		// still worth having) but would pass for a recording of
		// the processes asked for: said once each time they are
		// all gone.
		if s.Procs == 0 && !r.pidsGone {
			warn.Print(fmt.Sprintf("none of the processes -p names (%s) is running: samples hold no processes", pidList(cfg.PIDs)))
		}
		r.pidsGone = s.Procs == 0
	}
	if r.opened != nil {
		if now, err := os.Stat(r.file); err != nil || !os.SameFile(r.opened, now) {
			return false, fmt.Errorf("the history %s was removed or replaced while recording: sample of %s not stored (start record again)", r.file, s.Time.Format(time.TimeOnly))
		}
	}
	// The write runs to completion even when a signal arrives: a
	// sample is cheap to finish, and stopping is checked right after.
	if err := r.st.Write(context.WithoutCancel(ctx), s); err != nil {
		// Only a database busy with another writer may clear up by
		// itself; a full disk, an I/O error or a refusal by the
		// server would lose every later sample as well, so it ends
		// the run with an error (and a non-zero exit) instead of a
		// warning nobody reads.
		if !errors.Is(err, store.ErrBusy) {
			return false, fmt.Errorf("sample of %s not stored: %w", s.Time.Format(time.TimeOnly), err)
		}
		warn.Print(fmt.Sprintf("sample of %s not stored: %v", s.Time.Format(time.TimeOnly), err))
		return false, nil
	}
	if sp, ok := r.st.(store.Spooler); ok && sp.Spooled() {
		// The server is away: pruning would fail at every sample,
		// and the outage is the store's one warning (and one when
		// it is back). Warnings are not re-armed: nothing was
		// stored.
		if cfg.Verbose {
			fmt.Fprintf(log, "memwho: sample %s: spooled, not stored yet: %d processes, %d rows, %v\n",
				s.Time.Format("15:04:05.000"), s.Procs, len(s.Rows), time.Since(start).Round(time.Millisecond))
		}
		return true, nil
	}
	// A shared history is told every host's --keep, 0 included: it
	// drops a day of the whole fleet only when no host keeps it.
	if cfg.Keep > 0 || (cfg.MaxSize > 0 && !r.shared) || r.shared {
		ret := store.Retention{Host: cfg.Host}
		if r.shared {
			ret.Keep, ret.Now = cfg.Keep, s.Time
		}
		if cfg.Keep > 0 {
			ret.Before = s.Time.Add(-cfg.Keep)
		}
		if !r.shared {
			ret.MaxSize = cfg.MaxSize
			// Each recorder prunes what it wrote; a SQLite file is
			// normally one host's, and the size bound is the file's.
			ret.Host = ""
		}
		p, err := r.st.Prune(context.WithoutCancel(ctx), ret)
		if err != nil {
			warn.Print(fmt.Sprintf("retention: %v", err))
		} else if p.Samples > 0 && cfg.Verbose {
			fmt.Fprintf(log, "memwho: retention deleted %d samples (database now %d bytes)\n", p.Samples, p.Size)
		}
		if p.OverBound && !r.overBound {
			// Once per run: it stays true at every sample, and the
			// cure (a larger --max-size) is the user's.
			r.overBound = true
			warn.Print(fmt.Sprintf("retention: the history is %d bytes, over --max-size %d bytes with only its newest sample left: kept; raise --max-size", p.Size, cfg.MaxSize))
		}
	}
	warn.OK()
	if cfg.Verbose {
		fmt.Fprintf(log, "memwho: sample %s: %d processes, %d rows, %v\n",
			s.Time.Format("15:04:05.000"), s.Procs, len(s.Rows), time.Since(start).Round(time.Millisecond))
	}
	return true, nil
}

// pidList spells pids as -p takes them, at most ten.
func pidList(pids []int) string {
	var b strings.Builder
	for i, p := range pids {
		if i == 10 {
			fmt.Fprintf(&b, ",… %d more", len(pids)-i)
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, p)
	}
	return b.String()
}

// BootID returns sys/kernel/random/boot_id of the procfs tree, "" if
// unreadable: pid and start time identify a process only within a boot.
func BootID(fs *proc.FS) string {
	b, err := fs.ReadFile("sys/kernel/random/boot_id", nil, 4096)
	if err != nil {
		return ""
	}
	return store.CleanKey(string(bytes.TrimSpace(b)))
}

// Warner prints "memwho: warning:" lines, each distinct message once
// until a sample succeeds again, so that an outage does not write a line
// per sample.
type Warner struct {
	w    io.Writer
	seen map[string]bool
}

// NewWarner returns a Warner writing to w.
func NewWarner(w io.Writer) *Warner { return &Warner{w: w, seen: map[string]bool{}} }

// Print writes msg unless it was written since the last OK.
func (w *Warner) Print(msg string) {
	if w.seen[msg] {
		return
	}
	w.seen[msg] = true
	fmt.Fprintf(w.w, "memwho: warning: %s\n", cli.OneLine(msg))
}

// OK notes a successful sample: every warning may be printed again.
func (w *Warner) OK() { clear(w.seen) }
