// Package sqlite is the embedded history database: one SQLite file
// (modernc.org/sqlite, pure Go) in WAL mode, written by one connection,
// one transaction per sample.
//
// # Durability
//
// The database runs in WAL mode with synchronous=NORMAL: a commit is
// atomic and survives a crash of memwho (kill -9) — at most the
// transaction in flight is lost — while a power failure may also lose the
// last commits before the next checkpoint, but never corrupts the file.
// A whole sample (its samples row and every usage row) is one
// transaction, so a sample is either fully there or not at all.
//
// # Retention by size
//
// New databases are created with auto_vacuum=INCREMENTAL. [DB.Prune]
// measures the pages in use ((page_count - freelist_count) × page_size);
// when that exceeds the bound it deletes the oldest samples (a few
// percent more than the excess, so that it does not run again at the very
// next sample), in transactions of at most 100 samples, then runs
// "PRAGMA incremental_vacuum" to hand the freed pages back to the file
// system and "PRAGMA wal_checkpoint(TRUNCATE)" to empty the WAL. The file
// is then at most the bound plus one WAL's worth (SQLite's automatic
// checkpoint keeps the WAL near 1000 pages, 4 MiB). A database created
// without auto_vacuum still stays bounded: freed pages are reused before
// the file grows.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/memwho/memwho/internal/store"
	"modernc.org/sqlite" // registers database/sql driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

func init() {
	store.Register("", func(ctx context.Context, target string, opt store.OpenOptions) (store.Store, error) {
		return Open(ctx, target, opt)
	})
}

// DB is a history database in one SQLite file. It implements
// store.Store.
type DB struct {
	db   *sql.DB
	path string
	file os.FileInfo // the file opened (Opened)
	ins  *sql.Stmt   // samples row; nil when opened read-only
	row  *sql.Stmt   // usage row; nil when opened read-only
}

// errReadOnly is what Write and Prune return on a read-only open.
var errReadOnly = errors.New("history opened read-only")

var _ store.Store = (*DB)(nil)
var _ store.Filer = (*DB)(nil)

// Opened returns the file as it was opened.
func (d *DB) Opened() os.FileInfo { return d.file }

// dsnParams are applied to every connection that may write.
// auto_vacuum only takes effect on a new file (the driver applies it
// before journal_mode); _txlock=immediate takes the write lock at BEGIN,
// so a transaction never fails half-way on a lock held by another
// process. mode=rw: SQLite opens the file memwho created or checked (see
// Open) and never creates one itself.
const dsnParams = "?mode=rw&_busy_timeout=10000&_auto_vacuum=INCREMENTAL&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate"

// dsnReadOnly is for readers (leaks, export): nothing can be written,
// not even a journal mode or a vacuum setting.
const dsnReadOnly = "?mode=ro&_busy_timeout=10000&_query_only=1"

// sideFiles are the suffixes of the files SQLite keeps beside a
// database. SQLite creates them with the database file's permission bits
// (it copies them, whatever the umask), so a 0600 database has 0600 side
// files; it does follow a symlink planted at one, hence the check in
// Open.
var sideFiles = []string{"-wal", "-shm", "-journal"}

// Open opens the database at path and brings its schema up to date.
//
// A missing file is created by Open itself, before SQLite sees it, with
// O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600 (history names every process
// of every user): unless opt.MustExist or opt.ReadOnly, which make a
// missing file store.ErrNoHistory. A path that is a symlink or not a
// regular file is refused, and so is a symlink or other non-regular file
// where SQLite keeps its -wal, -shm or -journal file.
//
// A file that holds tables but is not memwho's (PRAGMA application_id is
// not store.ApplicationID, and it lacks memwho's tables) is refused with
// store.ErrNotHistory and left untouched. A database with a newer schema
// is refused with store.ErrSchemaTooNew.
func Open(ctx context.Context, path string, opt store.OpenOptions) (*DB, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	path = filepath.Clean(path)
	readOnly := opt.ReadOnly
	before, err := prepareFile(path, opt.MustExist || readOnly)
	if err != nil {
		return nil, err
	}
	params := dsnParams
	if readOnly {
		params = dsnReadOnly
	}
	db, err := sql.Open("sqlite", "file:"+escapeURIPath(path)+params)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// One connection: SQLite has one writer anyway, and the prepared
	// statements below then always live on it.
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	d := &DB{db: db, path: path}
	fail := func(err error) (*DB, error) {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		if notADB(err) {
			err = fmt.Errorf("%w (%v)", store.ErrNotHistory, err)
		}
		return fail(err)
	}
	// The file SQLite opened must be the one checked above: a path
	// swapped for a symlink in between is refused.
	if after, err := os.Lstat(path); err != nil || !os.SameFile(before, after) {
		return fail(errors.New("the file changed while it was opened"))
	}
	d.file = before
	own, err := d.owned(ctx)
	if err != nil {
		return fail(err)
	}
	if readOnly {
		v, err := version(ctx, d.db)
		if err != nil {
			return fail(err)
		}
		if v == 0 {
			db.Close()
			return nil, fmt.Errorf("%w: %s holds none", store.ErrNoHistory, path)
		}
		if err := store.CheckVersion(store.SQLite, v); err != nil {
			return fail(err)
		}
		if v < store.SchemaVersion {
			return fail(fmt.Errorf("history at schema version %d, this memwho reads %d: run 'memwho record --once' to upgrade it", v, store.SchemaVersion))
		}
		return d, nil
	}
	if err := d.migrate(ctx, !own); err != nil {
		return fail(err)
	}
	if d.ins, err = db.PrepareContext(ctx, `INSERT INTO samples (ts, host, boot_id, `+memCols+`, procs, denied) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`); err != nil {
		return fail(fmt.Errorf("prepare: %w", err))
	}
	if d.row, err = db.PrepareContext(ctx, `INSERT INTO usage (sample_id, seq, kind, key, pid, start_time, count, pss, private, shared, swap, estimated, mem_limit, mem_limit_free) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`); err != nil {
		return fail(fmt.Errorf("prepare: %w", err))
	}
	return d, nil
}

// prepareFile checks the database path and its side files and, unless
// mustExist, creates a missing database file (mode 0600, never through a
// symlink) in an existing directory. It returns the file's identity for the check after SQLite
// opened it.
func prepareFile(path string, mustExist bool) (os.FileInfo, error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if mustExist {
			return nil, fmt.Errorf("%w: %s does not exist", store.ErrNoHistory, path)
		}
		// Only the file is created: a typo in a directory name must not
		// start a new history in a new tree. (memwho's own default
		// directory is created by its caller, record.Open.)
		if dir := filepath.Dir(path); !isDir(dir) {
			return nil, fmt.Errorf("directory %s does not exist: create it first, or give another path", dir)
		}
		f, cerr := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if cerr != nil && !errors.Is(cerr, fs.ErrExist) {
			return nil, fmt.Errorf("create database: %w", cerr)
		}
		if cerr == nil {
			f.Close()
		}
		// Created now, or by a concurrent memwho: check it like any.
		st, err = os.Lstat(path)
	}
	if err != nil {
		return nil, err
	}
	if err := regular(path, st); err != nil {
		return nil, err
	}
	for _, suffix := range sideFiles {
		if st, err := os.Lstat(path + suffix); err == nil {
			if err := regular(path+suffix, st); err != nil {
				return nil, err
			}
		}
	}
	return st, nil
}

// isDir reports whether path is a directory (or a link to one).
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

func regular(path string, st os.FileInfo) error {
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: give the path of the database itself", path)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	}
	return nil
}

// escapeURIPath escapes what SQLite's URI parser would take for
// something else in a file: URI ("%", "?" and "#").
func escapeURIPath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// owned reports whether the database is marked as memwho's (PRAGMA
// application_id). An unmarked file is accepted when it is empty (new)
// or holds memwho's tables (created before the mark existed); anything
// else is store.ErrNotHistory. A file that is not SQLite at all fails
// here too.
func (d *DB) owned(ctx context.Context) (bool, error) {
	var id int64
	if err := d.db.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&id); err != nil {
		if notADB(err) {
			err = fmt.Errorf("%w (%v)", store.ErrNotHistory, err)
		}
		return false, err
	}
	if id == store.ApplicationID {
		return true, nil
	}
	rows, err := d.db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return false, fmt.Errorf("%w (%v)", store.ErrNotHistory, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return false, err
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	if id != 0 {
		return false, fmt.Errorf("%w: its application id is %#x, memwho's is %#x", store.ErrNotHistory, id, store.ApplicationID)
	}
	if len(names) == 0 || (slices.Contains(names, "schema_version") && slices.Contains(names, "samples") && slices.Contains(names, "usage")) {
		return false, nil
	}
	if len(names) > 5 {
		names = append(names[:5], "...")
	}
	return false, fmt.Errorf("%w: it holds other tables (%s)", store.ErrNotHistory, strings.Join(names, ", "))
}

const memCols = `mem_total, mem_free, mem_available, buffers, cached, shmem, swap_total, swap_free, hugetlb`

// Version returns the schema version recorded in the database at path
// without migrating it (0 for a database without memwho tables).
func (d *DB) Version(ctx context.Context) (int, error) {
	return version(ctx, d.db)
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func version(ctx context.Context, q querier) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	var v int
	err := q.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// migrate runs the missing migrations in one immediate transaction, so
// two memwho processes opening a new file do not both create it. With
// mark it also sets PRAGMA application_id (a new file, or one written
// before memwho marked its files).
func (d *DB) migrate(ctx context.Context, mark bool) error {
	v, err := version(ctx, d.db)
	if err != nil {
		return err
	}
	if err := store.CheckVersion(store.SQLite, v); err != nil || (v == store.SchemaVersion && !mark) {
		return err
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if mark {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA application_id = %d`, store.ApplicationID)); err != nil {
			return fmt.Errorf("mark as memwho's: %w", err)
		}
	}
	// Read again under the write lock: another process may have migrated.
	if v, err = version(ctx, tx); err != nil {
		return err
	}
	if err := store.CheckVersion(store.SQLite, v); err != nil {
		return err
	}
	from := v
	for _, m := range store.Migrations(store.SQLite) {
		if m.Version <= v {
			continue
		}
		for _, stmt := range m.Statements() {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrate to version %d: %w", m.Version, err)
			}
		}
		v = m.Version
	}
	switch {
	case from == v:
	case from == 0:
		_, err = tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, v)
	default:
		_, err = tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, v)
	}
	if err != nil {
		return fmt.Errorf("migrate: set version: %w", err)
	}
	return tx.Commit()
}

// Write stores s and its rows in one transaction. An error caused only
// by another process holding the database wraps store.ErrBusy.
func (d *DB) Write(ctx context.Context, s *store.Sample) (err error) {
	if d.ins == nil {
		return errReadOnly
	}
	defer func() {
		if busy(err) {
			err = fmt.Errorf("%w (%w)", store.ErrBusy, err)
		}
	}()
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("write sample: %w", err)
	}
	defer tx.Rollback()
	m := &s.Meminfo
	res, err := tx.StmtContext(ctx, d.ins).ExecContext(ctx, store.Millis(s.Time), s.Host, s.BootID,
		i64(m.MemTotal), i64(m.MemFree), i64(m.MemAvailable), i64(m.Buffers), i64(m.Cached), i64(m.Shmem),
		i64(m.SwapTotal), i64(m.SwapFree), i64(m.Hugetlb), s.Procs, s.Denied)
	if err != nil {
		return fmt.Errorf("write sample: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("write sample: %w", err)
	}
	st := tx.StmtContext(ctx, d.row)
	for i := range s.Rows {
		r := &s.Rows[i]
		if _, err := st.ExecContext(ctx, id, i, r.Kind.String(), r.Key, r.PID, i64(r.StartTime), r.Count,
			i64(r.PSS), i64(r.Private), i64(r.Shared), i64(r.Swap), r.Estimated, i64(r.MemLimit), i64(r.MemLimitFree)); err != nil {
			return fmt.Errorf("write sample: row %d: %w", i, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("write sample: commit: %w", err)
	}
	return nil
}

// busy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED
// (any extended code of them).
func busy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code() & 0xff
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// notADB reports whether err is SQLITE_NOTADB: the file is not SQLite.
func notADB(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_NOTADB
}

// i64 stores a byte count in SQLite's signed 64-bit INTEGER.
func i64(n uint64) int64 {
	if n > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

// Size returns the bytes in use in the database file: pages that are not
// on the free list, times the page size.
func (d *DB) Size(ctx context.Context) (int64, error) {
	var pages, free, size int64
	for _, p := range []struct {
		name string
		v    *int64
	}{{"page_count", &pages}, {"freelist_count", &free}, {"page_size", &size}} {
		if err := d.db.QueryRowContext(ctx, "PRAGMA "+p.name).Scan(p.v); err != nil {
			return 0, fmt.Errorf("database size: %w", err)
		}
	}
	return (pages - free) * size, nil
}

// pruneBatch is the most samples deleted in one transaction, so that a
// first prune of a large backlog does not hold the write lock for long.
const pruneBatch = 100

// Prune deletes samples older than r.Before and, with r.MaxSize, the
// oldest samples until the pages in use fit (see the package doc), but
// never the newest one: when only it is left and the file is still over
// the bound, Pruned.OverBound says so. "Newest" is the last written.
func (d *DB) Prune(ctx context.Context, r store.Retention) (store.Pruned, error) {
	var p store.Pruned
	if d.ins == nil {
		return p, errReadOnly
	}
	if !r.Before.IsZero() {
		n, err := d.deleteOldest(ctx, r.Host, store.Millis(r.Before), -1, math.MaxInt64)
		p.Samples += n
		if err != nil {
			return p, err
		}
	}
	size, err := d.Size(ctx)
	if err != nil {
		return p, err
	}
	if r.MaxSize > 0 && size > r.MaxSize {
		var count int64
		q := `SELECT count(*) FROM samples`
		args := []any{}
		if r.Host != "" {
			q += ` WHERE host = ?`
			args = append(args, r.Host)
		}
		if err := d.db.QueryRowContext(ctx, q, args...).Scan(&count); err != nil {
			return p, fmt.Errorf("prune: %w", err)
		}
		// Delete the excess fraction of the samples plus 5% of them, at
		// least one.
		frac := float64(size-r.MaxSize)/float64(size) + 0.05
		n := int64(math.Ceil(frac * float64(count)))
		// The newest sample stays, whatever the bound: a bound below
		// one sample's size emptied the whole history, the sample just
		// taken included.
		if n >= count {
			n = max(count-1, 0)
			p.OverBound = true
		}
		// The sample spared is the last written (the one record just
		// took), not the latest dated: a sample of another host dated
		// ahead, or one from before this host's clock stepped back,
		// would make record delete the sample it had just taken.
		var last int64
		if err := d.db.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM samples`).Scan(&last); err != nil {
			return p, fmt.Errorf("prune: %w", err)
		}
		m, err := d.deleteOldest(ctx, r.Host, math.MaxInt64, n, last)
		p.Samples += m
		if err != nil {
			return p, err
		}
	}
	if p.Samples > 0 {
		// Hand freed pages back (a no-op without auto_vacuum) and empty
		// the WAL so that the files really shrink.
		if _, err := d.db.ExecContext(ctx, `PRAGMA incremental_vacuum`); err != nil {
			return p, fmt.Errorf("prune: incremental vacuum: %w", err)
		}
		if _, err := d.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return p, fmt.Errorf("prune: checkpoint: %w", err)
		}
		if size, err = d.Size(ctx); err != nil {
			return p, err
		}
	}
	p.Size = size
	p.OverBound = p.OverBound && size > r.MaxSize
	return p, nil
}

// deleteOldest deletes up to limit samples (all when limit < 0) older
// than beforeMS of host (every host when ""), oldest first, among those
// whose id is below belowID.
func (d *DB) deleteOldest(ctx context.Context, host string, beforeMS, limit, belowID int64) (int64, error) {
	var done int64
	for limit < 0 || done < limit {
		n := int64(pruneBatch)
		if limit >= 0 && limit-done < n {
			n = limit - done
		}
		m, err := d.deleteBatch(ctx, host, beforeMS, n, belowID)
		done += m
		if err != nil {
			return done, fmt.Errorf("prune: %w", err)
		}
		if m < n {
			break
		}
	}
	return done, nil
}

func (d *DB) deleteBatch(ctx context.Context, host string, beforeMS, n, belowID int64) (int64, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	q := `SELECT id FROM samples WHERE ts < ? AND id < ? ORDER BY ts, id LIMIT ?`
	args := []any{beforeMS, belowID, n}
	if host != "" {
		q = `SELECT id FROM samples WHERE host = ? AND ts < ? AND id < ? ORDER BY ts, id LIMIT ?`
		args = []any{host, beforeMS, belowID, n}
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, `DELETE FROM usage WHERE sample_id = ?`, id); err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM samples WHERE id = ?`, id); err != nil {
			return 0, err
		}
	}
	return int64(len(ids)), tx.Commit()
}

// where builds the WHERE clause of q over samples aliased s.
func where(q store.Query) (string, []any) {
	since, until := int64(math.MinInt64), int64(math.MaxInt64)
	if !q.Since.IsZero() {
		since = store.Millis(q.Since)
	}
	if !q.Until.IsZero() {
		until = store.Millis(q.Until)
	}
	if q.Host != "" {
		return ` WHERE s.host = ? AND s.ts >= ? AND s.ts < ?`, []any{q.Host, since, until}
	}
	return ` WHERE s.ts >= ? AND s.ts < ?`, []any{since, until}
}

// Count returns how many samples q selects and how many usage rows
// they hold (store.Counter): the samples through their index, the rows
// through the usage key, no row read.
func (d *DB) Count(ctx context.Context, q store.Query) (samples, rows int64, err error) {
	w, args := where(q)
	err = d.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum((SELECT count(*) FROM usage u WHERE u.sample_id = s.id)), 0) FROM samples s`+w, args...).Scan(&samples, &rows)
	if err != nil {
		return 0, 0, fmt.Errorf("count samples: %w", err)
	}
	return samples, rows, nil
}

// The export order is (ts, host, id, seq): the samples indexes and the
// usage primary key deliver it without a sort (see TestQueryPlan).
const (
	sampleCols  = `s.id, s.ts, s.host, s.boot_id, s.mem_total, s.mem_free, s.mem_available, s.buffers, s.cached, s.shmem, s.swap_total, s.swap_free, s.hugetlb, s.procs, s.denied`
	usageCols   = `u.kind, u.key, u.pid, u.start_time, u.count, u.pss, u.private, u.shared, u.swap, u.estimated, u.mem_limit, u.mem_limit_free`
	orderSample = ` ORDER BY s.ts, s.host, s.id`
)

// query returns the SQL of q: samples joined with their rows (left join
// when keepEmpty, so that samples without rows still appear).
func query(q store.Query, keepEmpty bool) (string, []any) {
	w, args := where(q)
	if q.NoRows {
		return `SELECT ` + sampleCols + ` FROM samples s` + w + orderSample, args
	}
	join := ` JOIN usage u ON u.sample_id = s.id`
	if keepEmpty {
		join = ` LEFT JOIN usage u ON u.sample_id = s.id`
	}
	return `SELECT ` + sampleCols + `, ` + usageCols + ` FROM samples s` + join + w + orderSample + `, u.seq`, args
}

// scanner reads result rows into a reused Sample.
type scanner struct {
	s     store.Sample
	ts    int64
	mem   [9]int64
	kind  sql.NullString
	key   sql.NullString
	u     [10]sql.NullInt64
	dest  []any
	nrows bool
}

func newScanner(withRows bool) *scanner {
	sc := &scanner{nrows: withRows}
	sc.dest = []any{&sc.s.ID, &sc.ts, &sc.s.Host, &sc.s.BootID}
	for i := range sc.mem {
		sc.dest = append(sc.dest, &sc.mem[i])
	}
	sc.dest = append(sc.dest, &sc.s.Procs, &sc.s.Denied)
	if withRows {
		sc.dest = append(sc.dest, &sc.kind, &sc.key)
		for i := range sc.u {
			sc.dest = append(sc.dest, &sc.u[i])
		}
	}
	return sc
}

// each walks rows and calls fn per sample (withRows: after its last row).
func (d *DB) each(ctx context.Context, q store.Query, keepEmpty bool, fn func(s *store.Sample) error) error {
	text, args := query(q, keepEmpty)
	rows, err := d.db.QueryContext(ctx, text, args...)
	if err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	defer rows.Close()
	sc := newScanner(!q.NoRows)
	var cur store.Sample
	have := false
	var prevID int64
	for rows.Next() {
		if err := rows.Scan(sc.dest...); err != nil {
			return fmt.Errorf("read samples: %w", err)
		}
		if !have || sc.s.ID != prevID {
			if have {
				if err := fn(&cur); err != nil {
					return err
				}
			}
			have, prevID = true, sc.s.ID
			cur.ID, cur.Host, cur.BootID, cur.Procs, cur.Denied = sc.s.ID, sc.s.Host, sc.s.BootID, sc.s.Procs, sc.s.Denied
			cur.Time = store.FromMillis(sc.ts)
			m := &cur.Meminfo
			m.MemTotal, m.MemFree, m.MemAvailable, m.Buffers, m.Cached = u64(sc.mem[0]), u64(sc.mem[1]), u64(sc.mem[2]), u64(sc.mem[3]), u64(sc.mem[4])
			m.Shmem, m.SwapTotal, m.SwapFree, m.Hugetlb = u64(sc.mem[5]), u64(sc.mem[6]), u64(sc.mem[7]), u64(sc.mem[8])
			cur.Rows = cur.Rows[:0]
		}
		if sc.nrows && sc.kind.Valid {
			k, err := store.ParseKind(sc.kind.String)
			if err != nil {
				return fmt.Errorf("read samples: sample %d: %w", sc.s.ID, err)
			}
			u := &sc.u
			cur.Rows = append(cur.Rows, store.Row{
				Kind: k, Key: sc.key.String,
				PID: int(u[0].Int64), StartTime: u64(u[1].Int64), Count: int(u[2].Int64),
				PSS: u64(u[3].Int64), Private: u64(u[4].Int64), Shared: u64(u[5].Int64), Swap: u64(u[6].Int64),
				Estimated: int(u[7].Int64), MemLimit: u64(u[8].Int64), MemLimitFree: u64(u[9].Int64),
			})
		}
		if err := ctx.Err(); err != nil {
			return err
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

func u64(n int64) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}

// Samples calls fn for each sample matching q, in export order, rows in
// seq order; memory is bounded by the largest sample.
func (d *DB) Samples(ctx context.Context, q store.Query, fn func(s *store.Sample) error) error {
	return d.each(ctx, q, true, fn)
}

// Check runs PRAGMA integrity_check and returns an error unless it says
// "ok".
func (d *DB) Check(ctx context.Context) error {
	var res string
	if err := d.db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&res); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if res != "ok" {
		return fmt.Errorf("integrity check: %s", res)
	}
	return nil
}

// SQL returns the underlying database handle, for tests and tools.
func (d *DB) SQL() *sql.DB { return d.db }

// Close closes the database (SQLite checkpoints the WAL when the last
// connection closes).
func (d *DB) Close() error {
	return d.db.Close()
}
