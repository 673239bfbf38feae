package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/watch"
)
const watchUsage = `Usage: memwho watch [flags]

Shows the report's table live, refreshed every interval, with each
group's change since the watch started, its growth rate in MiB/min, a
sparkline of its RAM and a LEAK flag on groups that grew steadily (see
docs/watch.md for the rule).

On a terminal it is a full-screen view. Keys:
  p s r w c n d t  sort by private, shared, RAM, swap, count, name,
                   change or rate (o: connections; again: reverse);
                   ← → step through the columns
  g G              next / previous grouping: program, user, cgroup, pid
  /                filter by regular expression; Esc clears it
  space            pause      ?  help      q  quit

When the output is not a terminal (a pipe, a log, CI) it prints one plain
snapshot per interval instead: a timestamp line, the report table and a
line per leak suspect, snapshots separated by a blank line.

Flags:
  -n, --interval D  time between refreshes: seconds as in watch(1) and
                    top (2, 0.5) or a duration (500ms, 1m); default 2
  --by KEY          group by program (default), user, cgroup or pid
  --filter REGEX    keep groups whose name matches REGEX (Go syntax)
  --sort COL        ram (default), private, shared, swap, count, name,
                    change, rate or conns
  --count N         exit after N refreshes (default: run until q or ^C)
  --plain           print plain snapshots even on a terminal
  --fast            read only /proc/PID/status: RSS-based estimates, no
                    page-table walk
  --conns           count each group's ESTABLISHED TCP connections (a Conns
                    column in the live view; reads every /proc/PID/fd)
  --proc DIR        read the procfs tree at DIR (default /proc)

Examples:
  memwho watch                          live view, every 2 s
  memwho watch --by user --interval 5s
  memwho watch --sort rate              fastest-growing first
  memwho watch --count 60 --interval 1m >> memory.log
`

func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("memwho watch")
	var (
		interval                time.Duration
		by, filter, sortCol, pr string
		count                   int
		plain, fast, conns      bool
	)
	interval = 2 * time.Second
	fs.Var((*cli.Seconds)(&interval), "interval", "")
	fs.Var((*cli.Seconds)(&interval), "n", "")
	fs.StringVar(&by, "by", "program", "")
	fs.StringVar(&filter, "filter", "", "")
	fs.StringVar(&sortCol, "sort", "ram", "")
	fs.IntVar(&count, "count", 0, "")
	fs.BoolVar(&plain, "plain", false, "")
	fs.BoolVar(&fast, "fast", false, "")
	fs.BoolVar(&conns, "conns", false, "")
	fs.StringVar(&pr, "proc", "/proc", "")
	if err := parseFlags(fs, watchUsage, args, stdout); err != nil {
		return err
	}
	opt := watch.Options{Interval: interval, Count: count, Fast: fast, Conns: conns}
	var err error
	if interval <= 0 {
		return usagef("--interval: must be positive")
	}
	if count < 0 {
		return usagef("--count: must not be negative")
	}
	if opt.By, err = sample.ParseBy(by); err != nil {
		return usagef("--by: %v", err)
	}
	if opt.Sort, err = watch.ParseSort(sortCol); err != nil {
		return usagef("--sort: %v", err)
	}
	if opt.Filter, err = cli.CompileFilter(filter); err != nil {
		return err
	}

	live := watch.TUI && !plain && report.IsTerminal(stdout) && os.Getenv("TERM") != "dumb"
	// The sampling engine re-walks a process's page tables only when its
	// resident size moved (and every process at least every 60 ticks):
	// the right cost for a view that refreshes every few seconds.
	procFS, err := enterScan("watch", pr, conns, stderr)
	if err != nil {
		return err
	}
	defer procFS.Close()
	eng, err := engine.New(engine.Options{
		FS:   procFS,
		Fast: fast,
		// The live view switches grouping with a key and keeps the
		// history of every grouping, so it reads what all of them need.
		NeedUID:    live || opt.By == sample.ByUser,
		NeedCgroup: live || opt.By == sample.ByCgroup,
		Conns:      conns,
	})
	if err != nil {
		return err
	}
	defer eng.Close()
	var s watch.Sampler = eng

	if live {
		opt.Color = report.UseColor(stdout)
		return watch.RunTUI(ctx, s, opt)
	}
	return watch.RunPlain(ctx, stdout, s, opt, func(snap *sample.Snapshot) { report.Warn(stderr, snap, snap.Procs, nil, fast) })
}
