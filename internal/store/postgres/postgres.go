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
	"io"
	"io/fs"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	ours    bool // samples and usage as well (memwho's, marked or from before the mark)
	named   bool // a table named samples or usage
	other   int  // tables with other names
}

// inspect reads schemaState of the session's current schema.
func inspect(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) (schemaState, error) {
	var st schemaState
	var mark *string
	var samples, usage bool
	err := q.QueryRow(ctx, `SELECT to_regclass('schema_version') IS NOT NULL,
	obj_description(to_regclass('schema_version'), 'pg_class'),
	to_regclass('samples') IS NOT NULL, to_regclass('usage') IS NOT NULL,
	(SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()
		AND tablename NOT IN ('schema_version', 'samples', 'usage'))`).Scan(&st.version, &mark, &samples, &usage, &st.other)
	if err != nil {
		return st, fmt.Errorf("read schema: %w", err)
	}
	st.marked = mark != nil && *mark == historyMark
	st.ours = st.version && samples && usage && (st.marked || mark == nil)
	st.named = samples || usage
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
	if err := store.CheckVersion(v); err != nil {
		return err
	}
	if v < store.SchemaVersion {
		return fmt.Errorf("history at schema version %d, this memwho reads %d: run 'memwho record --once' to upgrade it", v, store.SchemaVersion)
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
	if err := store.CheckVersion(v); err != nil {
		return err
	}
	if v == store.SchemaVersion {
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

// write inserts the sample row and COPYs its usage rows. With dedupe it
// first checks whether the sample is already there (a spooled sample
// whose file could not be removed after its commit).
func (d *DB) write(ctx context.Context, s *store.Sample, dedupe bool) error {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	ts := store.Millis(s.Time)
	if dedupe {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM samples WHERE host = $1 AND ts = $2`, s.Host, ts).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
	}
	m := &s.Meminfo
	var id int64
	err = tx.QueryRow(ctx, `INSERT INTO samples (ts, host, boot_id, mem_total, mem_free, mem_available, buffers, cached, shmem, swap_total, swap_free, hugetlb, procs, denied)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14) RETURNING id`,
		ts, s.Host, s.BootID, i64(m.MemTotal), i64(m.MemFree), i64(m.MemAvailable), i64(m.Buffers), i64(m.Cached),
		i64(m.Shmem), i64(m.SwapTotal), i64(m.SwapFree), i64(m.Hugetlb), s.Procs, s.Denied).Scan(&id)
	if err != nil {
		return fmt.Errorf("write sample: %w", err)
	}
	if len(s.Rows) > 0 {
		src := &rowSource{id: id, rows: s.Rows, i: -1}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"usage"}, usageColumns, src); err != nil {
			return fmt.Errorf("write sample: copy rows: %w", err)
		}
	}
	return tx.Commit(ctx)
}

var usageColumns = []string{"sample_id", "seq", "kind", "key", "pid", "start_time", "count", "pss", "private", "shared", "swap", "estimated", "mem_limit", "mem_limit_free"}

// rowSource feeds a sample's rows to CopyFrom, reusing one value slice.
type rowSource struct {
	id   int64
	rows []store.Row
	i    int
	vals [14]any
}

func (r *rowSource) Next() bool { r.i++; return r.i < len(r.rows) }
func (r *rowSource) Err() error { return nil }
func (r *rowSource) Values() ([]any, error) {
	x := &r.rows[r.i]
	r.vals = [14]any{r.id, int32(r.i), x.Kind.String(), x.Key, int32(x.PID), i64(x.StartTime), int32(x.Count),
		i64(x.PSS), i64(x.Private), i64(x.Shared), i64(x.Swap), int32(x.Estimated), i64(x.MemLimit), i64(x.MemLimitFree)}
	return r.vals[:], nil
}

func i64(n uint64) int64 {
	if n > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

func u64(n int64) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}

// pruneBatch bounds the samples deleted per transaction.
const pruneBatch = 1000

// Prune deletes samples older than r.Before (only r.Host's when set).
// MaxSize is not supported on PostgreSQL (the database is shared; size
// it with the server's own tools) and is an error.
func (d *DB) Prune(ctx context.Context, r store.Retention) (store.Pruned, error) {
	var p store.Pruned
	if r.MaxSize > 0 {
		return p, errors.New("prune: a size bound is not supported on PostgreSQL")
	}
	if r.Before.IsZero() {
		return p, nil
	}
	for {
		var n int64
		err := d.pool.QueryRow(ctx, `WITH doomed AS (
				DELETE FROM samples WHERE id IN (
					SELECT id FROM samples WHERE ($1 = '' OR host = $1) AND ts < $2 ORDER BY ts LIMIT $3)
				RETURNING id),
			rows AS (DELETE FROM usage WHERE sample_id IN (SELECT id FROM doomed))
			SELECT count(*) FROM doomed`, r.Host, store.Millis(r.Before), pruneBatch).Scan(&n)
		p.Samples += n
		if err != nil {
			return p, fmt.Errorf("prune: %w", err)
		}
		if n < pruneBatch {
			return p, nil
		}
	}
}

// where builds the WHERE clause of q over samples s, with literal values
// (COPY takes no parameters). Hosts are quoted as SQL string literals.
func where(q store.Query) string {
	since, until := int64(math.MinInt64), int64(math.MaxInt64)
	if !q.Since.IsZero() {
		since = store.Millis(q.Since)
	}
	if !q.Until.IsZero() {
		until = store.Millis(q.Until)
	}
	w := ` WHERE s.ts >= ` + strconv.FormatInt(since, 10) + ` AND s.ts < ` + strconv.FormatInt(until, 10)
	if q.Host != "" {
		w += ` AND s.host = ` + quoteLiteral(q.Host)
	}
	return w
}

// quoteLiteral quotes s as a standard SQL string literal. memwho's
// connections run with standard_conforming_strings on (set in
// ExportCSV), so a backslash is an ordinary character. Text PostgreSQL
// refuses (invalid UTF-8, NUL) is cleaned first: no stored host holds it,
// so it matches nothing instead of failing the query.
func quoteLiteral(s string) string {
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		s = store.CleanKey(s)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

const (
	sampleCols = `s.id, s.ts, s.host, s.boot_id, s.mem_total, s.mem_free, s.mem_available, s.buffers, s.cached, s.shmem, s.swap_total, s.swap_free, s.hugetlb, s.procs, s.denied`
	usageCols  = `u.kind, u.key, u.pid, u.start_time, u.count, u.pss, u.private, u.shared, u.swap, u.estimated, u.mem_limit, u.mem_limit_free`
	order      = ` ORDER BY s.ts, s.host COLLATE "C", s.id`
	// csvTime formats Unix milliseconds as store.TimeLayout, in SQL.
	csvTime = `to_char(timestamp 'epoch' + s.ts * interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS time`
)

// Samples calls fn for each sample matching q, in export order, rows in
// seq order. pgx reads result rows from the socket as fn consumes them.
func (d *DB) Samples(ctx context.Context, q store.Query, fn func(s *store.Sample) error) error {
	text := `SELECT ` + sampleCols + ` FROM samples s` + where(q) + order
	if !q.NoRows {
		text = `SELECT ` + sampleCols + `, ` + usageCols + ` FROM samples s LEFT JOIN usage u ON u.sample_id = s.id` + where(q) + order + `, u.seq`
	}
	rows, err := d.pool.Query(ctx, text)
	if err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	defer rows.Close()
	var (
		cur        store.Sample
		have       bool
		id, ts     int64
		host, boot string
		mem        [9]int64
		procs, den int32
		kind, key  *string
		u          [10]*int64
	)
	dest := []any{&id, &ts, &host, &boot}
	for i := range mem {
		dest = append(dest, &mem[i])
	}
	dest = append(dest, &procs, &den)
	if !q.NoRows {
		dest = append(dest, &kind, &key)
		for i := range u {
			dest = append(dest, &u[i])
		}
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("read samples: %w", err)
		}
		if !have || id != cur.ID {
			if have {
				if err := fn(&cur); err != nil {
					return err
				}
			}
			have = true
			cur.ID, cur.Time, cur.Host, cur.BootID = id, store.FromMillis(ts), host, boot
			cur.Procs, cur.Denied = int(procs), int(den)
			m := &cur.Meminfo
			m.MemTotal, m.MemFree, m.MemAvailable, m.Buffers, m.Cached = u64(mem[0]), u64(mem[1]), u64(mem[2]), u64(mem[3]), u64(mem[4])
			m.Shmem, m.SwapTotal, m.SwapFree, m.Hugetlb = u64(mem[5]), u64(mem[6]), u64(mem[7]), u64(mem[8])
			cur.Rows = cur.Rows[:0]
		}
		if kind != nil {
			k, err := store.ParseKind(*kind)
			if err != nil {
				return fmt.Errorf("read samples: sample %d: %w", id, err)
			}
			n := func(i int) int64 { return *u[i] }
			cur.Rows = append(cur.Rows, store.Row{
				Kind: k, Key: *key, PID: int(n(0)), StartTime: u64(n(1)), Count: int(n(2)),
				PSS: u64(n(3)), Private: u64(n(4)), Shared: u64(n(5)), Swap: u64(n(6)),
				Estimated: int(n(7)), MemLimit: u64(n(8)), MemLimitFree: u64(n(9)),
			})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	if have {
		return fn(&cur)
	}
	return nil
}

// ExportSQL returns the COPY statement ExportCSV runs for q and t: the
// same columns, quoting and order as the SQLite store's export.
func ExportSQL(q store.Query, t store.Table) string {
	if t == store.TableSamples {
		return `COPY (SELECT ` + csvTime + `, s.host, s.boot_id, s.mem_total, s.mem_free, s.mem_available, s.buffers, s.cached, s.shmem, s.swap_total, s.swap_free, s.hugetlb, s.procs, s.denied FROM samples s` +
			where(q) + order + `) TO STDOUT WITH (FORMAT csv, HEADER)`
	}
	return `COPY (SELECT ` + csvTime + `, s.host, u.kind, u.key, u.pid, u.start_time, u.count, u.pss, u.private, u.shared, u.swap, u.estimated, u.mem_limit, u.mem_limit_free FROM samples s JOIN usage u ON u.sample_id = s.id` +
		where(q) + order + `, u.seq) TO STDOUT WITH (FORMAT csv, HEADER)`
}

// ExportCSV streams table t of the samples matching q to w with a
// server-side COPY TO STDOUT.
func (d *DB) ExportCSV(ctx context.Context, q store.Query, t store.Table, w io.Writer) error {
	if t == store.TableUsage && q.NoRows {
		return errors.New("export: the usage table needs rows (Query.NoRows is set)")
	}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET standard_conforming_strings = on`); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if _, err := conn.Conn().PgConn().CopyTo(ctx, w, ExportSQL(q, t)); err != nil {
		return fmt.Errorf("export: %w", err)
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
