package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"time"

	"github.com/memwho/memwho/internal/atomicfile"
	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/export"
	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/progress"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/store"
)

func exportUsage() string { return usage("export") }

type exportFlags struct {
	history                           historyFlags
	since, until, host, table, format string
	gzip, quiet                       bool
	output                            string
	up                                export.Upload
}

func (f *exportFlags) register(fs *flag.FlagSet) {
	f.history.register(fs)
	fs.StringVar(&f.since, "since", "", "")
	fs.StringVar(&f.until, "until", "", "")
	fs.StringVar(&f.host, "host", "", "")
	fs.StringVar(&f.table, "table", "usage", "")
	fs.StringVar(&f.format, "format", "csv", "")
	fs.BoolVar(&f.gzip, "gzip", false, "")
	fs.StringVar(&f.output, "o", "", "")
	fs.StringVar(&f.output, "output", "", "")
	fs.StringVar(&f.up.URL, "upload", "", "")
	fs.StringVar(&f.up.Identity, "identity", "", "")
	fs.StringVar(&f.up.KnownHosts, "known-hosts", "", "")
	fs.IntVar(&f.up.Retries, "retries", 3, "")
	fs.BoolVar(&f.quiet, "quiet", false, "")
}

// exportPlan is the validated form of the flags.
type exportPlan struct {
	db    string
	query store.Query
	table store.Table
	opt   export.Options
}

func (f *exportFlags) plan(now time.Time) (*exportPlan, error) {
	p := &exportPlan{opt: export.Options{Gzip: f.gzip}}
	if f.format != "csv" {
		return nil, cli.Usagef("--format: %q is not supported (csv is)", f.format)
	}
	var err error
	if p.table, err = store.ParseTable(f.table); err != nil {
		return nil, cli.Usagef("--table: %v", err)
	}
	if f.since != "" {
		if p.query.Since, err = cli.ParseTime(f.since, now); err != nil {
			return nil, cli.Usagef("--since: %v", err)
		}
	}
	// An open end would move between a failed upload and its retry; fix
	// it now. Samples are stored in milliseconds.
	p.query.Until = now.Truncate(time.Millisecond)
	if f.until != "" {
		if p.query.Until, err = cli.ParseTime(f.until, now); err != nil {
			return nil, cli.Usagef("--until: %v", err)
		}
	}
	if !p.query.Since.IsZero() && !p.query.Since.Before(p.query.Until) {
		return nil, cli.Usagef("--since %s is not before --until %s", p.query.Since.Format(time.RFC3339), p.query.Until.Format(time.RFC3339))
	}
	p.query.Host = f.host
	p.query.NoRows = p.table == store.TableSamples
	if f.output != "" && f.up.URL != "" {
		return nil, cli.Usagef("-o and --upload exclude each other")
	}
	if f.up.URL == "" && (f.up.Identity != "" || f.up.KnownHosts != "") {
		return nil, cli.Usagef("--identity and --known-hosts go with --upload")
	}
	if f.up.Retries < 0 {
		return nil, cli.Usagef("--retries: must not be negative")
	}
	if p.db, err = f.history.target(); err != nil {
		return nil, cli.Usagef("--db: %v", err)
	}
	return p, nil
}

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f exportFlags
	return f.interrupted(ctx, f.run(ctx, args, stdout, stderr))
}

func (f *exportFlags) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("memwho export")
	f.register(fs)
	if err := cli.Parse(fs, exportUsage(), args, stdout); err != nil {
		return err
	}
	// -o "$UNSET" would write to stdout unasked; -o - says so.
	if err := cli.NoEmpty(fs, "o", "output", "upload", "db", "identity", "known-hosts"); err != nil {
		return err
	}
	plan, err := f.plan(time.Now())
	if err != nil {
		return err
	}
	if f.gzip && (f.output == "" || f.output == "-") && f.up.URL == "" && report.IsTerminal(stdout) {
		// gzip(1)'s rule: binary garbage on a terminal helps nobody.
		return cli.Usagef("compressed data not written to a terminal: use -o FILE or a redirection")
	}
	// Rows done, rate and time left on a terminal (pg_dump's and rsync's
	// habit); nothing when stderr is a pipe or a file, or with --quiet.
	meter := progress.Start(stderr, progress.Show(stderr, f.quiet), "export", "rows", 0)
	defer meter.Done()
	plan.opt.Progress = meter
	var up func(ctx context.Context, src export.Source) error
	if f.up.URL != "" {
		// Before opening the database: a wrong URL or key should not
		// wait for a query.
		f.up.Open, f.up.Log = privilege.OpenInput, stderr
		if up, err = export.PrepareUpload(&f.up, plan.opt); err != nil {
			return err
		}
	}

	st, err := store.Open(ctx, plan.db, store.OpenOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer st.Close()
	if c, ok := st.(store.Counter); ok && meter != nil {
		if samples, rows, err := c.Count(ctx, plan.query); err == nil {
			meter.SetTotal(map[bool]int64{true: samples, false: rows}[plan.table == store.TableSamples])
		}
	}
	src := export.History(st, plan.query, plan.table)
	switch {
	case up != nil:
		err = up(ctx, src)
	case f.output == "" || f.output == "-":
		_, err = export.Run(ctx, stdout, plan.opt, src)
	default:
		err = export.ToFile(ctx, f.output, atomicfile.CreateAsUser, plan.opt, src)
	}
	if err == nil {
		err = st.Close()
	}
	return err
}

// interrupted says what a signal left of an export: "context canceled"
// alone tells the user nothing.
func (f *exportFlags) interrupted(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	const stopped = "interrupted (SIGINT, SIGTERM or SIGHUP): "
	switch {
	case f.up.URL != "":
		return errors.New(stopped + "nothing uploaded")
	case f.output == "" || f.output == "-":
		return errors.New(stopped + "the output is cut short")
	}
	return errors.New(stopped + cli.OneLine(f.output) + " left as it was")
}
