package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/memwho/memwho/internal/export"
	"github.com/memwho/memwho/internal/store"
	_ "github.com/memwho/memwho/internal/store/sqlite" // the default history database
)

const exportUsage = `Usage: memwho export [flags]

Writes the history that 'memwho record' stored as CSV: a header line, then
one line per process and group per sample (--table usage), or one line per
sample with the host's /proc/meminfo (--table samples). Rows come in time
order; columns are fixed (see docs/export.md). Memory use does not grow
with the number of rows.

Flags:
  --db PATH|URL       history database: a SQLite file or postgres://...
                      (default: the one 'memwho record' writes, see below)
  --since TIME        only samples at or after TIME: RFC 3339
                      (2026-03-01T12:00:00Z), a date (2026-03-01, UTC) or a
                      duration before now (90m, 24h, 7d)
  --until TIME        only samples before TIME (default: now, fixed at the
                      start so that a retried upload sends the same rows)
  --host NAME         only samples of host NAME
  --table T           usage (default) or samples
  --format csv        output format; csv is the only one
  --gzip              compress with gzip
  -o, --output FILE   write to FILE instead of standard output: written
                      under a new temporary name beside it (mode 0600) and
                      renamed when complete
  --upload URL        upload to sftp://[user@]host[:port]/path/name.csv.gz
                      (written as name.tmp-XXXXXXXX, renamed when complete;
                      a path starting /~/ is relative to the login directory)
  --identity FILE     private key for --upload (default: ssh-agent through
                      SSH_AUTH_SOCK)
  --known-hosts FILE  known_hosts to check the server's host key against
                      (default ~/.ssh/known_hosts); unknown hosts are refused
  --retries N         start a dropped upload again up to N times (default 3)

Default database: ` + store.DefaultDBHelp + `

Examples:
  memwho export --since 24h --gzip -o last-day.csv.gz
  memwho export --db postgres://memwho@db/memwho --since 1h --host web1
  memwho export --since 1h --gzip \
      --upload sftp://drop@files.example.com/incoming/memwho.csv.gz
`

type exportFlags struct {
	db, since, until, host, table, format string
	gzip                                  bool
	output, upload                        string
	identity, knownHosts                  string
	retries                               int
}

func (f *exportFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.db, "db", "", "")
	fs.StringVar(&f.since, "since", "", "")
	fs.StringVar(&f.until, "until", "", "")
	fs.StringVar(&f.host, "host", "", "")
	fs.StringVar(&f.table, "table", "usage", "")
	fs.StringVar(&f.format, "format", "csv", "")
	fs.BoolVar(&f.gzip, "gzip", false, "")
	fs.StringVar(&f.output, "o", "", "")
	fs.StringVar(&f.output, "output", "", "")
	fs.StringVar(&f.upload, "upload", "", "")
	fs.StringVar(&f.identity, "identity", "", "")
	fs.StringVar(&f.knownHosts, "known-hosts", "", "")
	fs.IntVar(&f.retries, "retries", 3, "")
}

// exportPlan is the validated form of the flags.
type exportPlan struct {
	db    string
	query store.Query
	table store.Table
	opt   export.Options
}

func (f *exportFlags) plan(now time.Time) (*exportPlan, error) {
	p := &exportPlan{db: f.db, opt: export.Options{Gzip: f.gzip}}
	if f.format != "csv" {
		return nil, usagef("--format: %q is not supported (csv is)", f.format)
	}
	var err error
	if p.table, err = store.ParseTable(f.table); err != nil {
		return nil, usagef("--table: %v", err)
	}
	if f.since != "" {
		if p.query.Since, err = parseTime(f.since, now); err != nil {
			return nil, usagef("--since: %v", err)
		}
	}
	// An open end would move between a failed upload and its retry; fix
	// it now. Samples are stored in milliseconds.
	p.query.Until = now.Truncate(time.Millisecond)
	if f.until != "" {
		if p.query.Until, err = parseTime(f.until, now); err != nil {
			return nil, usagef("--until: %v", err)
		}
	}
	if !p.query.Since.IsZero() && !p.query.Since.Before(p.query.Until) {
		return nil, usagef("--since %s is not before --until %s", p.query.Since.Format(time.RFC3339), p.query.Until.Format(time.RFC3339))
	}
	p.query.Host = f.host
	p.query.NoRows = p.table == store.TableSamples
	if f.output != "" && f.upload != "" {
		return nil, usagef("-o and --upload exclude each other")
	}
	if f.upload == "" && (f.identity != "" || f.knownHosts != "") {
		return nil, usagef("--identity and --known-hosts go with --upload")
	}
	if f.retries < 0 {
		return nil, usagef("--retries: must not be negative")
	}
	if p.db == "" {
		if p.db, err = store.DefaultDB(); err != nil {
			return nil, usagef("--db: %v", err)
		}
	}
	return p, nil
}

// parseTime reads an RFC 3339 time, a date (midnight UTC) or a duration
// before now ("90m", "24h", "7d").
func parseTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	d, err := parseAgo(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time, a date (YYYY-MM-DD) nor a duration like 24h or 7d", s)
	}
	return now.Add(-d).Truncate(time.Millisecond), nil
}

// parseAgo is time.ParseDuration plus whole days ("7d"), never negative.
func parseAgo(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return 0, err
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		err = errors.New("negative duration")
	}
	return d, err
}

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("memwho export", exportUsage, stderr)
	var f exportFlags
	f.register(fs)
	if err := parseFlags(fs, exportUsage, args, stdout); err != nil {
		return err
	}
	plan, err := f.plan(time.Now())
	if err != nil {
		return err
	}
	if f.gzip && f.output == "" && f.upload == "" && isTerminal(stdout) {
		// gzip(1)'s rule: binary garbage on a terminal helps nobody.
		return usagef("compressed data not written to a terminal: use -o FILE or a redirection")
	}
	var up func(ctx context.Context, src export.Source) error
	if f.upload != "" {
		// Before opening the database: a wrong URL or key should not
		// wait for a query.
		if up, err = prepareUpload(&f, plan.opt, stderr); err != nil {
			return err
		}
	}

	st, err := store.Open(ctx, plan.db, store.OpenOptions{ReadOnly: true})
	if err != nil {
		if errors.Is(err, store.ErrNoHistory) {
			return fmt.Errorf("%w (run 'memwho record' first)", err)
		}
		return fmt.Errorf("open history: %w", err)
	}
	defer st.Close()
	// Names are neutralised on the way out, the same way for both
	// stores: escaped like the report's CSV (one record per line, no
	// control or bidi character reaches a terminal) and with formula
	// characters defused for spreadsheets.
	src := func(ctx context.Context, w io.Writer) error {
		cw := export.NewCellWriter(w, store.IsTextColumn)
		if err := st.ExportCSV(ctx, plan.query, plan.table, cw); err != nil {
			return err
		}
		return cw.Flush()
	}

	switch {
	case up != nil:
		err = up(ctx, src)
	case f.output == "" || f.output == "-":
		_, err = export.Run(ctx, stdout, plan.opt, src)
	default:
		err = writeFileAtomic(f.output, func(w io.Writer) error {
			_, err := export.Run(ctx, w, plan.opt, src)
			return err
		})
	}
	if err == nil {
		err = st.Close()
	}
	return err
}

// haveSFTP is set by export_sftp.go unless memwho is built with -tags
// nosftp.
var haveSFTP = false

// prepareUpload is set by export_sftp.go unless memwho is built with
// -tags nosftp.
var prepareUpload = func(f *exportFlags, opt export.Options, stderr io.Writer) (func(context.Context, export.Source) error, error) {
	return nil, usagef("--upload: this memwho was built without SFTP support (-tags nosftp)")
}

// writeFileAtomic writes name through write: into a new temporary file
// beside it (created as the user, O_EXCL, a random name, mode 0600),
// synced and renamed over name when write and every write to the file
// succeed, removed otherwise. Nothing partial ever carries the final
// name, and a failed export leaves an older file of that name intact.
func writeFileAtomic(name string, write func(w io.Writer) error) error {
	f, err := createOutput(name)
	if err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	defer f.Abort()
	if err := write(f); err != nil {
		return fmt.Errorf("-o %s: %w", name, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	return nil
}
