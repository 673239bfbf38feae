//go:build !nopostgres

// Package postgres is the fleet history database: many hosts record into
// one PostgreSQL database (pgx v5, a pgxpool), each sample in one
// transaction whose usage rows go in with one binary COPY (CopyFrom).
//
// When the server cannot be reached, samples are spooled to disk (see
// spool.go) and written, oldest first, as soon as it answers again; the
// recorder does not stop or crash for it. Errors the server itself
// reports about the data or the SQL (anything but connection, shutdown
// and resource errors) are returned instead: retrying them would never
// succeed.
//
// Exports run as a server-side COPY (SELECT ...) TO STDOUT WITH (FORMAT
// csv, HEADER), streamed by pgconn straight into the caller's writer: no
// row is held in memory here.
//
// Build with -tags nopostgres to leave it (and pgx) out of the binary.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/memwho/memwho/internal/store"
)

func init() {
	store.Register("postgres", func(ctx context.Context, target string, opt store.OpenOptions) (store.Store, error) {
		return Open(ctx, target, opt)
	})
}

// DB is a history database on a PostgreSQL server. It implements
// store.Store.
type DB struct {
	pool     *pgxpool.Pool
	opt      store.OpenOptions
	spool    *spool // nil without OpenOptions.SpoolDir
	migrated bool
	down     bool // the last attempt to reach the server failed
	// waiting holds the targets (by file name tag) whose spooled samples
	// were found here and reported: one warning per run each.
	waiting map[string]bool
	spooled bool // the last Write spooled its sample

	days          map[int64]bool // day partitions known to exist (write.go)
	cols          columns        // a sample's rows as arrays, reused
	announced     time.Time      // when retention last recorded this host's keep
	dropped       time.Time      // when retention last looked for days to drop
	announcedKeep int64          // the keep it recorded, in milliseconds
	longest       time.Duration  // the longest keep of the fleet, as read at longestAt
	longestAt     time.Time
}

var _ store.Spooler = (*DB)(nil)

// Spooled reports whether the last Write spooled its sample instead of
// storing it.
func (d *DB) Spooled() bool { return d.spooled }

var _ store.Store = (*DB)(nil)

// migrateLock is the advisory lock key that serialises migrations of
// recorders starting at the same time on many hosts ("memwho" in ASCII).
const migrateLock = 0x6d656d77686f

// writeTimeout bounds one attempt to write a sample, so that a server that
// hangs does not stall recording: the sample is spooled instead.
const writeTimeout = 30 * time.Second

// Open connects to the database at url (postgres://...) and brings its
// schema up to date. If the server cannot be reached and opt.SpoolDir is
// set, Open still succeeds: samples are spooled until it can, and the
// migration runs then. A database with a newer schema is refused with
// store.ErrSchemaTooNew.
func Open(ctx context.Context, url string, opt store.OpenOptions) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx quotes the URL, password included, in some parse errors.
		return nil, errors.New("bad PostgreSQL URL: want postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?PARAMS]")
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	if opt.ReadOnly {
		// Belt and braces: the server refuses any write of a reader.
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	cfg.MaxConns = 4
	if opt.ConnIdle > 0 {
		// The pool's health check closes what sat idle that long.
		cfg.MaxConnIdleTime, cfg.HealthCheckPeriod = opt.ConnIdle, opt.ConnIdle
	}
	// Connections are opened on first use: Open must not fail just
	// because the server is down.
	cfg.MinConns = 0
	// A server restart leaves dead connections in the pool; ping any
	// that sat idle (pgxpool's default waits a second, longer than the
	// shortest recording intervals).
	cfg.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool { return p.IdleDuration > 100*time.Millisecond }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	d := &DB{pool: pool, opt: opt}
	if opt.ReadOnly {
		// Readers (leaks, export) never create or migrate tables.
		if err := d.checkReadable(ctx); err != nil {
			pool.Close()
			return nil, err
		}
		d.migrated = true
		return d, nil
	}
	if opt.SpoolDir != "" {
		target := Identity(cfg.ConnConfig)
		dir := opt.SpoolDir
		if opt.SpoolPerTarget {
			dir = filepath.Join(dir, targetTag(target))
		}
		if d.spool, err = openSpool(dir, opt.SpoolMax, target, !opt.SpoolPerTarget); err != nil {
			pool.Close()
			return nil, err
		}
		if opt.SpoolPerTarget {
			d.warnLegacy(opt.SpoolDir)
		}
		d.warnWaiting()
	}
	mctx, cancel := context.WithTimeout(ctx, writeTimeout)
	err = d.migrate(mctx)
	cancel()
	if err != nil {
		if d.spool == nil || !retryable(err) || ctx.Err() != nil {
			pool.Close()
			return nil, fmt.Errorf("open PostgreSQL history: %w", err)
		}
		d.setDown(true, err)
	}
	return d, nil
}

// Identity names the database a connection configuration reaches, for
// telling spools apart: user, host, port and database, and the
// search_path or options parameters that choose a schema in it; never
// the password.
func Identity(c *pgx.ConnConfig) string {
	u := url.URL{Scheme: "postgres", User: url.User(c.User), Host: net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), Path: "/" + c.Database}
	q := url.Values{}
	for _, k := range []string{"search_path", "options"} {
		if v := c.RuntimeParams[k]; v != "" {
			q.Set(k, v)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// warnLegacy warns once about samples an older version spooled in dir,
// the spool directory shared by all databases then: which database they
// are for is not recorded, so they are kept for the user to name it.
func (d *DB) warnLegacy(dir string) {
	old := &spool{dir: dir, legacy: true}
	legacy, _, _ := old.listAll()
	n := len(legacy)
	if n > 0 && d.opt.Warn != nil {
		d.opt.Warn(fmt.Sprintf("%d samples spooled by an older memwho wait in %s for a database it did not record; kept: write them with --spool %s and the --db they belong to", n, dir, dir))
	}
}

// warnWaiting warns once per target about samples in the spool that
// wait for another database than this one; they are left in place.
func (d *DB) warnWaiting() {
	if d.opt.Warn == nil {
		return
	}
	_, others, _ := d.spool.listAll()
	count := map[string]int{}
	first := map[string]string{}
	var tags []string
	for _, name := range others {
		tag := tagOf(name)
		if d.waiting[tag] {
			continue
		}
		if count[tag] == 0 {
			tags = append(tags, tag)
			first[tag] = name
		}
		count[tag]++
	}
	for _, tag := range tags {
		if d.waiting == nil {
			d.waiting = map[string]bool{}
		}
		d.waiting[tag] = true
		target := "a database an older memwho did not record"
		if tag != "" {
			if target = d.spool.targetOf(first[tag]); target == "" {
				target = "another database"
			}
		}
		d.opt.Warn(fmt.Sprintf("%d samples in spool %s wait for %s, not this one (%s); left in place", count[tag], d.spool.dir, target, d.spool.target))
	}
}

// retryable says whether err means "the server is not there right now"
// (worth spooling and trying again) rather than "the server refused this".
func retryable(err error) bool {
	if errors.Is(err, store.ErrSchemaTooNew) || errors.Is(err, store.ErrNotHistory) || errors.Is(err, errUnsafeSpool) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08: connection exception; 57: operator intervention
		// (admin shutdown, cannot connect now); 53: insufficient
		// resources (too many connections, disk full).
		c := pe.Code
		return strings.HasPrefix(c, "08") || strings.HasPrefix(c, "57") || strings.HasPrefix(c, "53")
	}
	// Dial failures, resets, timeouts, a connection closed mid-query.
	return true
}

func (d *DB) setDown(down bool, err error) {
	if down == d.down {
		return
	}
	d.down = down
	if d.opt.Warn == nil {
		return
	}
	if down {
		d.opt.Warn(fmt.Sprintf("PostgreSQL unreachable (%v); spooling samples to %s", err, d.spool.dir))
	} else {
		d.opt.Warn("PostgreSQL reachable again; spooled samples written")
	}
}

// historyMark is the comment memwho puts on its schema_version table:
// how it tells its tables from another program's of the same names.
const historyMark = "memwho history"

// schemaState is what the current schema holds.
type schemaState struct {
	version bool // a schema_version table
	marked  bool // ... commented historyMark
	ours    bool // samples, and usage (version 2 and before) or retention (version 3), as well (memwho's, marked or from before the mark)
	named   bool // a table named samples, usage or retention
	other   int  // tables with other names (partitions of samples aside)
}

// inspect reads schemaState of the session's current schema.
func inspect(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) (schemaState, error) {
	var st schemaState
	var mark *string
	var samples, usage, retention bool
	// Partitions are tables of their own (pg_class): those of memwho's
	// samples are not another program's.
	err := q.QueryRow(ctx, `SELECT to_regclass('schema_version') IS NOT NULL,
	obj_description(to_regclass('schema_version'), 'pg_class'),
	to_regclass('samples') IS NOT NULL, to_regclass('usage') IS NOT NULL, to_regclass('retention') IS NOT NULL,
	(SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
		AND c.relname NOT IN ('schema_version', 'samples', 'usage', 'retention')
		AND NOT (c.relispartition AND EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid AND i.inhparent = to_regclass('samples'))))`).Scan(&st.version, &mark, &samples, &usage, &retention, &st.other)
	if err != nil {
		return st, fmt.Errorf("read schema: %w", err)
	}
	st.marked = mark != nil && *mark == historyMark
	st.ours = st.version && samples && (usage || retention) && (st.marked || mark == nil)
	st.named = samples || usage || retention
	return st, nil
}

// errForeign describes a schema memwho will not touch.
func errForeign(st schemaState) error {
	if (st.version || st.named) && !st.ours {
		return fmt.Errorf("%w: the current schema has tables named like memwho's that are not memwho's", store.ErrNotHistory)
	}
	return fmt.Errorf("%w: the current schema holds %d other tables; give memwho its own database, or its own schema (options=-csearch_path%%3Dmemwho in the URL)", store.ErrNotHistory, st.other)
}

// checkReadable is Open's check for readers: memwho's tables at this
// build's version, and nothing written.
func (d *DB) checkReadable(ctx context.Context) error {
	st, err := inspect(ctx, d.pool)
	if err != nil {
		return fmt.Errorf("open PostgreSQL history: %w", err)
	}
	if !st.ours {
		if !st.version && !st.named && st.other == 0 {
			return fmt.Errorf("%w: the database holds no memwho tables", store.ErrNoHistory)
		}
		return errForeign(st)
	}
	var v int
	if err := d.pool.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if err := store.CheckVersion(store.PostgreSQL, v); err != nil {
		return err
	}
	if v < store.PostgresSchemaVersion {
		return fmt.Errorf("history at schema version %d, this memwho reads %d: run 'memwho record --once' to upgrade it", v, store.PostgresSchemaVersion)
	}
	return nil
}

func (d *DB) migrate(ctx context.Context) error {
	if d.migrated {
		return nil
	}
	if d.opt.ReadOnly {
		return errors.New("history opened read-only")
	}
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
		return err
	}
	var v int
	st, err := inspect(ctx, tx)
	if err != nil {
		return err
	}
	// Tables of another program: memwho adds none of its own to them.
	if !st.ours && (st.version || st.named || st.other > 0) {
		return errForeign(st)
	}
	if !st.marked && st.ours {
		// A history from before the mark: mark it.
		if _, err := tx.Exec(ctx, `COMMENT ON TABLE schema_version IS '`+historyMark+`'`); err != nil {
			return fmt.Errorf("mark as memwho's: %w", err)
		}
	}
	if st.version {
		err := tx.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&v)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read schema version: %w", err)
		}
	}
	if err := store.CheckVersion(store.PostgreSQL, v); err != nil {
		return err
	}
	if v == store.PostgresSchemaVersion {
		d.migrated = true
		return tx.Commit(ctx)
	}
	from := v
	for _, m := range store.Migrations(store.PostgreSQL) {
		if m.Version <= v {
			continue
		}
		for _, stmt := range m.Statements() {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("migrate to version %d: %w", m.Version, err)
			}
		}
		v = m.Version
	}
	if from == 0 {
		_, err = tx.Exec(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, v)
		if err == nil {
			_, err = tx.Exec(ctx, `COMMENT ON TABLE schema_version IS '`+historyMark+`'`)
		}
	} else {
		_, err = tx.Exec(ctx, `UPDATE schema_version SET version = $1`, v)
	}
	if err != nil {
		return fmt.Errorf("migrate: set version: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	d.migrated = true
	return nil
}

// Version returns the schema version of the database.
func (d *DB) Version(ctx context.Context) (int, error) {
	var v int
	err := d.pool.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&v)
	return v, err
}

// Write stores s in one transaction, after any spooled samples. When the
// server cannot be reached (and a spool directory was given) s is spooled
// and Write returns nil.
func (d *DB) Write(ctx context.Context, s *store.Sample) error {
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	d.spooled = false
	err := d.migrate(wctx)
	if err == nil && d.spool != nil {
		err = d.flushSpool(wctx)
	}
	if err == nil {
		err = d.write(wctx, s, false)
	}
	if err == nil {
		d.setDown(false, nil)
		return nil
	}
	if d.spool == nil || !retryable(err) {
		return err
	}
	d.setDown(true, err)
	if serr := d.spool.put(s, d.opt.Warn); serr != nil {
		return fmt.Errorf("%w; and spooling failed: %v", err, serr)
	}
	d.spooled = true
	return nil
}

// flushSpool writes the spooled samples, oldest first, each removed once
// committed.
func (d *DB) flushSpool(ctx context.Context) error {
	// Checked again before each flush, not only at Open: a recorder runs
	// for months, and a directory opened to others (or swapped for
	// theirs) since then must not feed the database either.
	if err := checkSpoolDir(d.spool.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	names, err := d.spool.list()
	if err != nil {
		return err
	}
	d.warnWaiting()
	var s store.Sample
	for _, name := range names {
		if _, err := d.spool.get(name, &s); errors.Is(err, errOtherTarget) {
			// Named as ours but another database's: leave it.
			continue
		} else if err != nil {
			// A torn or foreign file: keep going without it.
			if d.opt.Warn != nil {
				d.opt.Warn(fmt.Sprintf("dropping unreadable spooled sample %s: %v", name, err))
			}
			d.spool.remove(name)
			continue
		}
		if err := d.write(ctx, &s, true); err != nil {
			return err
		}
		d.spool.remove(name)
	}
	return nil
}

// Pool returns the connection pool, for tests and tools.
func (d *DB) Pool() *pgxpool.Pool { return d.pool }

// Close tries once more to write spooled samples (for at most a few
// seconds) and closes the pool. Samples still spooled stay on disk for
// the next run.
func (d *DB) Close() error {
	if d.spool != nil && d.down {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if d.migrate(ctx) == nil {
			d.flushSpool(ctx)
		}
		cancel()
	}
	d.pool.Close()
	return nil
}
