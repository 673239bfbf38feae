package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/leaks"
	"github.com/memwho/memwho/internal/store"
)

const leaksUsage = `Usage: memwho leaks [flags]

Ranks the processes and groups whose memory (PSS + swap) grew over a
window of the history 'memwho record' keeps, fastest first:

  Growth/h  robust slope (Theil–Sen: the median of the slopes between all
            pairs of samples, unmoved by spikes), in bytes per hour
  Steady    share of steps between samples that did not go down (100%:
            never gave anything back; about 50%: only wobbles)
  R²        how well that straight line explains the samples (1.00: a line)
  Now       PSS + swap at the last sample
  Full in   when it would exhaust its headroom at this rate: MemAvailable +
            SwapFree at the last sample, or the room left under its cgroup
            memory limit when that is less (marked *)

A process is followed by pid and start time, so a reused pid is another
series; processes must span half the window's samples, so that start-up
growth does not rank.

Flags:
  --db PATH|URL     history database (default: see below)
  --window D        how far back to look (default 6h; 90m, 12h, 7d)
  --until TIME      end of the window (default now): RFC 3339, a date, or
                    a duration before now (2h)
  --host NAME       whose samples (default this host's name)
  --all-hosts       every host in the database (PostgreSQL fleets)
  --kind LIST       any of process,program,user,cgroup (default all)
  --min-growth SIZE least growth per hour to list (default 1MiB)
  --top N           list at most N (default 20; 0 for all)
  --json            JSON output (bytes, bytes per hour, seconds)

Default database: ` + store.DefaultDBHelp + `

Examples:
  memwho leaks
  memwho leaks --window 24h --kind process --top 5
  memwho leaks --db postgres://memwho@db/memwho --all-hosts --json
`

type leaksFlags struct {
	history                       historyFlags
	until, host, kinds, minGrowth string
	window                        string
	allHosts                      bool
	rep                           leaks.Report
}

func (f *leaksFlags) register(fs *flag.FlagSet) {
	f.history.register(fs)
	fs.StringVar(&f.window, "window", "6h", "")
	fs.StringVar(&f.until, "until", "", "")
	fs.StringVar(&f.host, "host", "", "")
	fs.BoolVar(&f.allHosts, "all-hosts", false, "")
	fs.StringVar(&f.kinds, "kind", "process,program,user,cgroup", "")
	fs.StringVar(&f.minGrowth, "min-growth", "1MiB", "")
	fs.IntVar(&f.rep.Top, "top", 20, "")
	fs.BoolVar(&f.rep.JSON, "json", false, "")
}

// report validates the flags into the listing and the database to read.
func (f *leaksFlags) report(now time.Time) (*leaks.Report, string, error) {
	p := &f.rep
	db, err := f.history.target()
	if err != nil {
		return nil, "", err
	}
	if p.Window, err = cli.ParseDays(f.window); err != nil || p.Window <= 0 {
		return nil, "", usagef("--window: bad duration %q (want 90m, 6h or 7d)", f.window)
	}
	p.Until = now
	if f.until != "" {
		if p.Until, err = cli.ParseTime(f.until, now); err != nil {
			return nil, "", usagef("--until: %v", err)
		}
	}
	p.Since = p.Until.Add(-p.Window)
	if f.allHosts {
		if f.host != "" {
			return nil, "", usagef("--host and --all-hosts exclude each other")
		}
	} else if p.Host = f.host; p.Host == "" {
		if p.Host, err = os.Hostname(); err != nil {
			return nil, "", fmt.Errorf("host name: %w (use --host or --all-hosts)", err)
		}
	}
	for _, s := range strings.Split(f.kinds, ",") {
		k, err := store.ParseKind(strings.TrimSpace(s))
		if err != nil {
			return nil, "", usagef("--kind: %v (want process, program, user or cgroup)", err)
		}
		p.Kinds = append(p.Kinds, k)
	}
	if p.MinGrowth, err = cli.ParseSize(f.minGrowth); err != nil {
		return nil, "", usagef("--min-growth: %v", err)
	}
	if p.Top < 0 {
		return nil, "", usagef("--top: must not be negative")
	}
	return p, db, nil
}

func runLeaks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("memwho leaks")
	var f leaksFlags
	f.register(fs)
	if err := parseFlags(fs, leaksUsage, args, stdout); err != nil {
		return err
	}
	rep, db, err := f.report(time.Now())
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, db, store.OpenOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer st.Close()
	return rep.Write(ctx, st, stdout)
}
