package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"regexp/syntax"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memwho/memwho/internal/engine"
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
	fs := newFlagSet("memwho watch", watchUsage, stderr)
	var (
		interval                time.Duration
		by, filter, sortCol, pr string
		count                   int
		plain, fast, conns      bool
	)
	interval = 2 * time.Second
	fs.Var((*secondsFlag)(&interval), "interval", "")
	fs.Var((*secondsFlag)(&interval), "n", "")
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
	if filter != "" {
		if opt.Filter, err = regexp.Compile(filter); err != nil {
			return usagef("--filter: bad regular expression: %s", watchRegexpMessage(err))
		}
	}

	live := watch.TUI && !plain && isTerminal(stdout) && os.Getenv("TERM") != "dumb"
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
		opt.Color = useColor(stdout)
		return watch.RunTUI(ctx, s, opt)
	}
	return watch.RunPlain(ctx, stdout, s, opt, func(snap *sample.Snapshot) { warn(stderr, snap, snap.Procs, nil, fast) })
}

// watchRegexpMessage describes a regexp compile error on one line, as
// the report's --filter does.
func watchRegexpMessage(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s in %q", se.Code, se.Expr)
	}
	return err.Error()
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// secondsFlag is a refresh interval: a bare number is seconds, as in
// watch(1), top and vmstat; a Go duration (500ms, 1m) works too.
type secondsFlag time.Duration

func (d *secondsFlag) String() string { return time.Duration(*d).String() }

func (d *secondsFlag) Set(s string) error {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if !(v > 0 && v <= 1e6) { // NaN fails too
			return errors.New("want a positive number of seconds (2, 0.5) or a duration (500ms, 1m)")
		}
		*d = secondsFlag(time.Duration(v * float64(time.Second)))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want seconds (2, 0.5) or a duration (500ms, 1m)")
	}
	*d = secondsFlag(v)
	return nil
}
