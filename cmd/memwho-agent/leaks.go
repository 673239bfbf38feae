package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/memwho/memwho/internal/atomicfile"
	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/leaks"
	"github.com/memwho/memwho/internal/progress"
	"github.com/memwho/memwho/internal/store"
)

func leaksUsage() string { return usage("leaks") }

type leaksFlags struct {
	history                       historyFlags
	until, host, kinds, minGrowth string
	window, html                  string
	allHosts, quiet               bool
	rep                           leaks.Report
}

func (f *leaksFlags) register(fs *flag.FlagSet) {
	f.history.register(fs)
	fs.StringVar(&f.window, "window", "6h", "")
	fs.StringVar(&f.until, "until", "", "")
	fs.StringVar(&f.host, "host", "", "")
	fs.BoolVar(&f.allHosts, "all-hosts", false, "")
	fs.StringVar(&f.kinds, "kind", "process,program,user,cgroup,unit,slice,container", "")
	fs.StringVar(&f.minGrowth, "min-growth", "1MiB", "")
	fs.IntVar(&f.rep.Top, "top", 20, "")
	fs.BoolVar(&f.rep.JSON, "json", false, "")
	fs.StringVar(&f.html, "html", "", "")
	fs.BoolVar(&f.quiet, "quiet", false, "")
}

// report validates the flags into the listing and the database to read.
func (f *leaksFlags) report(now time.Time) (*leaks.Report, string, error) {
	p := &f.rep
	db, err := f.history.target()
	if err != nil {
		return nil, "", err
	}
	if p.Window, err = cli.ParseDays(f.window); err != nil || p.Window <= 0 {
		return nil, "", cli.Usagef("--window: bad duration %q (want 90m, 6h or 7d)", f.window)
	}
	p.Until = now
	if f.until != "" {
		if p.Until, err = cli.ParseTime(f.until, now); err != nil {
			return nil, "", cli.Usagef("--until: %v", err)
		}
	}
	p.Since = p.Until.Add(-p.Window)
	if f.allHosts {
		if f.host != "" {
			return nil, "", cli.Usagef("--host and --all-hosts exclude each other")
		}
	} else if p.Host = f.host; p.Host == "" {
		if p.Host, err = os.Hostname(); err != nil {
			return nil, "", fmt.Errorf("host name: %w (use --host or --all-hosts)", err)
		}
	}
	for _, s := range strings.Split(f.kinds, ",") {
		k, err := store.ParseKind(strings.TrimSpace(s))
		if err != nil {
			return nil, "", cli.Usagef("--kind: %v (want process, program, user, cgroup, unit, slice or container)", err)
		}
		p.Kinds = append(p.Kinds, k)
	}
	if p.MinGrowth, err = cli.ParseSize(f.minGrowth); err != nil {
		return nil, "", cli.Usagef("--min-growth: %v", err)
	}
	if p.Top < 0 {
		return nil, "", cli.Usagef("--top: must not be negative")
	}
	return p, db, nil
}

func runLeaks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("memwho leaks")
	var f leaksFlags
	f.register(fs)
	if err := cli.Parse(fs, leaksUsage(), args, stdout); err != nil {
		return err
	}
	rep, db, err := f.report(time.Now())
	if err != nil {
		return err
	}
	if f.html != "" {
		// Opened first, like every file the user names: a refused
		// path costs nothing.
		page, err := atomicfile.CreateAsUser(f.html)
		if err != nil {
			return fmt.Errorf("--html: %w", err)
		}
		defer page.Abort()
		// The table goes to stdout while the page is open: a closed
		// pipe is an error that removes it, not a SIGPIPE that leaves it.
		defer cli.CatchPipe()()
		rep.Page = page
	}
	st, err := store.Open(ctx, db, store.OpenOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer st.Close()
	if progress.Show(stderr, f.quiet) {
		rep.Progress = stderr
	}
	if err := rep.Write(ctx, st, stdout); err != nil {
		return err
	}
	if page, ok := rep.Page.(*atomicfile.File); ok {
		if err := page.Commit(); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	return nil
}
