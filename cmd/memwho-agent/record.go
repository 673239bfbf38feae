package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/record"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/store"
)

func recordUsage() string { return usage("record") }

type recordFlags struct {
	history                 historyFlags
	host, groups, procDir   string
	pids                    string
	count, fullEvery        int
	once, fast              bool
	keep, maxSize, spoolMax string
	cfg                     record.Config
}

func (f *recordFlags) register(fs *flag.FlagSet) {
	f.history.register(fs)
	fs.DurationVar(&f.cfg.Interval, "interval", time.Minute, "")
	fs.IntVar(&f.count, "count", 0, "")
	fs.IntVar(&f.fullEvery, "full-every", engine.DefaultFullEvery, "")
	fs.BoolVar(&f.once, "once", false, "")
	fs.StringVar(&f.keep, "keep", "30d", "")
	fs.StringVar(&f.maxSize, "max-size", "1GiB", "")
	fs.StringVar(&f.host, "host", "", "")
	fs.StringVar(&f.groups, "groups", "program,user,cgroup", "")
	fs.StringVar(&f.cfg.Spool, "spool", "", "")
	fs.StringVar(&f.spoolMax, "spool-max", "64MiB", "")
	fs.BoolVar(&f.fast, "fast", false, "")
	fs.StringVar(&f.pids, "p", "", "")
	fs.StringVar(&f.pids, "pid", "", "")
	fs.StringVar(&f.procDir, "proc", "/proc", "")
	fs.StringVar(&f.cfg.CgroupRoot, "cgroup-root", "/sys/fs/cgroup", "")
	fs.BoolVar(&f.cfg.Verbose, "v", false, "")
	fs.BoolVar(&f.cfg.Verbose, "verbose", false, "")
}

// config validates the flags into the recorder's configuration and the
// processes to scan (nil for all).
func (f *recordFlags) config() (*record.Config, []int, error) {
	c := &f.cfg
	var err error
	if c.DB, err = f.history.target(); err != nil {
		return nil, nil, err
	}
	if c.Interval <= 0 {
		return nil, nil, cli.Usagef("--interval: must be positive")
	}
	if f.count < 0 {
		return nil, nil, cli.Usagef("--count: must not be negative")
	}
	if f.fullEvery < 1 {
		return nil, nil, cli.Usagef("--full-every: must be at least 1")
	}
	c.Count = f.count
	if f.once {
		if f.count > 1 {
			return nil, nil, cli.Usagef("--once and --count %d exclude each other", f.count)
		}
		c.Count = 1
	}
	if c.Kinds, err = store.ParseKinds(f.groups); err != nil {
		return nil, nil, cli.Usagef("--groups: %v", err)
	}
	if c.Keep, err = cli.ParseDays(f.keep); err != nil {
		return nil, nil, cli.Usagef("--keep: %v", err)
	}
	if c.MaxSize, err = cli.ParseSize(f.maxSize); err != nil {
		return nil, nil, cli.Usagef("--max-size: %v", err)
	}
	if c.SpoolMax, err = cli.ParseSize(f.spoolMax); err != nil {
		return nil, nil, cli.Usagef("--spool-max: %v", err)
	}
	var pids []int
	if f.pids != "" {
		if pids, err = sample.ParsePIDs(f.pids); err != nil {
			return nil, nil, cli.Usagef("-p: %v", err)
		}
		c.PIDs = pids
	}
	if c.Host = f.host; c.Host == "" {
		if c.Host, err = os.Hostname(); err != nil {
			return nil, nil, fmt.Errorf("host name: %w (use --host)", err)
		}
	}
	return c, pids, nil
}

// recordFree is how many free descriptors record asks for before it
// creates its history: SQLite's database, -wal and -shm, all three held
// open once the history is, and then the procfs root (privilege.EnterScan);
// the scan's own reads come after and survive going short (counted
// skipped). Measured under a limit of 16 with descriptors inherited one
// more at a time: record ran with 4 free and, with 3, created its
// database and then could not open /proc. (3 is what a count that took
// a descriptor numbered above the limit for room under it would say.)
const recordFree = 4

// newRecordScanner is what record samples with (a variable: tests swap
// in a scanner of their own).
var newRecordScanner = func(opt engine.Options) (record.Scanner, error) { return engine.New(opt) }

func runRecord(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := cli.NewFlagSet("memwho record")
	var f recordFlags
	f.register(fs)
	if err := cli.Parse(fs, recordUsage(), args, stdout); err != nil {
		return err
	}
	cfg, pids, err := f.config()
	if err != nil {
		return err
	}

	// Refused before the history is created, not after: a database
	// file left empty would be adopted by the next run.
	if err := engine.CheckFiles(); err != nil {
		return err
	}
	if err := engine.CheckFree(recordFree); err != nil {
		return err
	}
	// The history (and its spool) is opened with the user's own rights,
	// before enterScan.
	warn := record.NewWarner(stderr)
	st, err := record.Open(ctx, cfg, warn)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close history: %w", cerr)
		}
	}()

	procFS, err := privilege.EnterScan("record", f.procDir, false, stderr)
	if err != nil {
		return err
	}
	defer procFS.Close()
	sc, err := newRecordScanner(engine.Options{
		FS: procFS,
		// A process whose statm did not move keeps its figures for up
		// to K samples, while the pages it shares may move (the stale
		// bound, docs/agent.md): --full-every 1 stores every figure
		// fresh, at a full walk's cost per sample.
		FullEvery: f.fullEvery,
		// Every process whose statm moved is walked again at every
		// sample: a figure held back by the walk budget would be
		// stored with a later time and bend the leak slopes.
		WalkBudget:    -1,
		Fast:          f.fast,
		NeedStartTime: true,
		PIDs:          pids,
		NeedUID:       slices.Contains(cfg.Kinds, store.KindUser),
		// Limits need every process's cgroup, not just cgroup groups.
		NeedCgroup: true,
	})
	if err != nil {
		return err
	}
	defer sc.Close()
	return record.Run(ctx, st, sc, procFS, cfg, stderr, warn)
}
