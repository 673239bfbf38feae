// Package store defines memwho's history: what `memwho record` writes and
// what `memwho leaks` and `memwho export` read back. It holds the row
// types, the [Store] interface, the schema and its migrations (as SQL that
// both back ends share, see schema.go), and the one CSV format both back
// ends produce (csv.go).
//
// It does not talk to a database itself: package store/sqlite (the
// embedded default, modernc.org/sqlite) and store/postgres (a fleet
// database, pgx; compiled out with -tags nopostgres) implement [Store] and
// register themselves with [Register], so that [Open] picks one from the
// --db value.
//
// # Units
//
// Every memory figure is in bytes. Times are Unix time in milliseconds
// (UTC) in the database, [time.Time] in Go, and RFC 3339 with milliseconds
// in UTC ("2026-01-02T15:04:05.123Z") in CSV. Process start times are
// clock ticks since boot (field 22 of /proc/PID/stat), as the kernel
// gives them.
//
// # Schema (version 2)
//
// Table schema_version holds one row: the version of the schema the
// database is at. Opening a database runs the missing migrations in one
// transaction; a database with a newer version than this build knows is
// refused with [ErrSchemaTooNew] and left untouched.
//
// Table samples has one row per scan of one host:
//
//	id             integer  primary key (SQLite rowid, PostgreSQL identity)
//	ts             bigint   time of the scan, Unix milliseconds UTC
//	host           text     host name (os.Hostname unless --host)
//	boot_id        text     /proc/sys/kernel/random/boot_id ("" if unknown):
//	                        pid + start_time identify a process within a boot
//	mem_total … hugetlb     bigint, bytes: /proc/meminfo MemTotal, MemFree,
//	                        MemAvailable, Buffers, Cached, Shmem, SwapTotal,
//	                        SwapFree, Hugetlb (all 0 when meminfo was unreadable)
//	procs          integer  processes recorded
//	denied         integer  processes whose exact figures were not permitted
//
// Table usage has the rows of a sample: one per process and one per group
// (program, user, cgroup). Its key is (sample_id, seq).
//
//	sample_id      bigint   samples.id (no foreign key: COPY stays fast;
//	                        deletes go through [Store.Prune])
//	seq            integer  position in the sample, 0-based; rows are
//	                        written in the order of [SortRows] so that
//	                        (sample_id, seq) is the export order
//	kind           text     "process", "program", "user", "cgroup", "unit", "slice" or "container" ([Kind])
//	key            text     program name (for kind process too), user name
//	                        or cgroup name, valid UTF-8 (see [CleanKey])
//	pid            integer  process id; 0 for groups
//	start_time     bigint   clock ticks since boot; 0 for groups
//	count          integer  processes in the group; 1 for a process
//	pss            bigint   bytes: proportional set size (sample.Process.RAM)
//	private        bigint   bytes
//	shared         bigint   bytes
//	swap           bigint   bytes: SwapPss
//	estimated      integer  processes whose figures are RSS-based estimates
//	                        (0 means exact; 0 or 1 for a process)
//	mem_limit      bigint   bytes: tightest cgroup memory limit over the
//	                        process's (or cgroup's) cgroup and its ancestors;
//	                        0 when there is none or it is unknown   [since v2]
//	mem_limit_free bigint   bytes: that limit minus the limiting cgroup's
//	                        current usage; 0 when mem_limit is 0    [since v2]
//
// Indexes: samples(ts, host) and samples(host, ts).
//
// # PostgreSQL, version 3
//
// A shared PostgreSQL history (many hosts, one database) is at version 3
// (PostgresSchemaVersion; SQLite stays at version 2). Version 3 keeps
// table samples' columns and holds each sample's usage rows in it, as
// arrays in seq order, one element per row: nrows (integer), kind
// (smallint[]: the Kind), key (text[]), pid, count and estimated
// (integer[]), start_time, pss, private, shared, swap, mem_limit and
// mem_limit_free (bigint[]); there is no table usage. Table samples is
// partitioned by range of ts, one partition per UTC day
// (samples_pYYYYMMDD), made by the writers a day ahead. Indexes:
// (ts, host COLLATE "C", id), the export order, and (host, ts). Table
// retention (host, keep_ms, seen_ms) holds each recorder's --keep: a day
// is dropped once no host that records keeps it (store/postgres,
// retention.go). Opening a version 2 database as a writer migrates it
// in one transaction: every day gets its partition, every sample its
// arrays. Why: docs/fleet.md.
//
// # CSV
//
// [Store.ExportCSV] writes a header line and then one line per row, in
// the order (ts, host, samples.id, seq) — byte for byte the same from
// SQLite and PostgreSQL for the same rows. Fields are quoted as
// PostgreSQL's COPY ... (FORMAT csv) quotes them: only when they contain a
// comma, a double quote, CR or LF, or are empty strings. Columns, in this
// order (see [UsageColumns] and [SampleColumns]):
//
//	usage:   time,host,kind,key,pid,start_time,count,pss,private,shared,swap,estimated,mem_limit,mem_limit_free
//	samples: time,host,boot_id,mem_total,mem_free,mem_available,buffers,cached,shmem,swap_total,swap_free,hugetlb,procs,denied
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

// SchemaVersion is the schema version this build writes and reads in
// SQLite (see LatestVersion).
const SchemaVersion = 2

// PostgresSchemaVersion is the schema version this build writes and
// reads in PostgreSQL: version 3 (see "PostgreSQL, version 3" above).
const PostgresSchemaVersion = 3

// ErrSchemaTooNew is returned by Open when the database was written by a
// newer memwho whose schema this build does not know.
var ErrSchemaTooNew = errors.New("history database has a newer schema than this memwho knows")

// ErrBusy wraps a write that failed only because another process held
// the database (SQLite's busy timeout ran out): the next attempt may
// succeed. Every other write error is lasting (a full disk, an I/O
// error, a refusal by the server).
var ErrBusy = errors.New("history database busy")

// ErrNotHistory is returned by Open for a database that holds tables
// but is not memwho's history (another program's SQLite file, a
// PostgreSQL schema with other tables): memwho neither reads it nor adds
// its tables to it.
var ErrNotHistory = errors.New("not a memwho history database")

// ApplicationID marks a SQLite file as memwho's history (PRAGMA
// application_id, set when memwho creates the file): "memw" in ASCII.
const ApplicationID = 0x6d656d77

// ErrNoHistory is returned by Open with OpenOptions.MustExist when there
// is no database yet.
var ErrNoHistory = errors.New("no history recorded yet")

// Kind says what a Row describes.
type Kind uint8

// Kinds, in the order rows of one sample are written (see SortRows).
const (
	KindProcess Kind = iota
	KindProgram
	KindUser
	KindCgroup
	// KindUnit, KindSlice and KindContainer group as sample.ByUnit,
	// BySlice and ByContainer do.
	KindUnit
	KindSlice
	KindContainer
)

var kindNames = [...]string{"process", "program", "user", "cgroup", "unit", "slice", "container"}

// String returns the kind's name as stored ("process", "program", "user",
// "cgroup", "unit", "slice", "container").
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// ParseKind parses a stored kind name.
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if s == n {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown row kind %q", s)
}

// Row is one line of table usage: a process or a group in one sample.
type Row struct {
	Kind Kind
	// Key is the program name (for processes too), user name or cgroup
	// name; valid UTF-8 (see CleanKey).
	Key string
	// PID and StartTime (clock ticks since boot) identify a process; both
	// 0 for groups.
	PID       int
	StartTime uint64
	// Count is the number of processes (1 for a process).
	Count int
	// PSS, Private, Shared and Swap are in bytes (see sample.Process).
	PSS, Private, Shared, Swap uint64
	// Estimated counts processes with RSS-based estimates; 0 means exact.
	Estimated int
	// MemLimit is the tightest cgroup memory limit in bytes that applies,
	// 0 when none or unknown; MemLimitFree is that limit minus the
	// limiting cgroup's usage, in bytes.
	MemLimit, MemLimitFree uint64
}

// Footprint is what leak ranking follows: PSS + swap, in bytes. Memory a
// leaker has pushed out to swap is still leaked.
func (r *Row) Footprint() uint64 { return r.PSS + r.Swap }

// Sample is one scan of one host with its rows.
type Sample struct {
	// ID is the database's id; set by reads, ignored by Write.
	ID int64
	// Time is stored with millisecond precision.
	Time   time.Time
	Host   string
	BootID string
	// Meminfo is /proc/meminfo in bytes; all zero when unknown.
	Meminfo sample.Meminfo
	// Procs and Denied count recorded processes and those with
	// estimates because exact figures were refused.
	Procs, Denied int
	// Rows are in SortRows order when written by memwho.
	Rows []Row
}

// Query selects samples.
type Query struct {
	// Since and Until bound the sample time: Since <= t < Until. The zero
	// time leaves that side open.
	Since, Until time.Time
	// Host, when not empty, keeps only that host's samples.
	Host string
	// NoRows skips table usage: Samples then delivers samples with empty
	// Rows and ExportCSV refuses TableUsage.
	NoRows bool
	// Growth asks Samples for what ranking growth reads (package leaks),
	// as fast as the store can give it: rows may come without Private,
	// Shared and Estimated (zero), and samples in time order per host
	// only, hosts interleaved in any way (PostgreSQL reads the hosts of
	// a fleet over two connections at once). fn is still called by one
	// goroutine at a time.
	Growth bool
}

// Table names what ExportCSV writes.
type Table uint8

const (
	// TableUsage is one CSV line per process or group per sample (with
	// the sample's time and host), UsageColumns.
	TableUsage Table = iota
	// TableSamples is one CSV line per sample (host meminfo),
	// SampleColumns.
	TableSamples
)

// String returns "usage" or "samples".
func (t Table) String() string {
	if t == TableSamples {
		return "samples"
	}
	return "usage"
}

// ParseTable parses "usage" or "samples".
func ParseTable(s string) (Table, error) {
	switch s {
	case "usage":
		return TableUsage, nil
	case "samples":
		return TableSamples, nil
	}
	return 0, fmt.Errorf("unknown table %q (want usage or samples)", s)
}

// Retention says what Prune deletes.
type Retention struct {
	// Before deletes samples older than this time (zero: none).
	Before time.Time
	// MaxSize deletes the oldest samples until the database holds at most
	// this many bytes (0: no bound), never the newest sample (see
	// Pruned.OverBound). Only the SQLite store supports it.
	MaxSize int64
	// Host, when not empty, restricts deletion to this host's samples
	// (a shared PostgreSQL database: each recorder prunes its own).
	Host string
	// Keep is the recorder's --keep (0: keep everything) and Now the time
	// of the sample it just took. A shared PostgreSQL history keeps each
	// host's Keep: it drops a whole day of every host once it is older
	// than the longest Keep of any recording host, and deletes a host's
	// own samples only when that host keeps less than the longest
	// (docs/fleet.md, "Retention"). Without Now, Before alone decides.
	Keep time.Duration
	Now  time.Time
}

// Pruned reports what Prune did.
type Pruned struct {
	// Samples is the number of samples deleted (with their rows).
	Samples int64
	// Size is the database's size afterwards in bytes, when known (0
	// otherwise).
	Size int64
	// OverBound says that Size is still above Retention.MaxSize because
	// meeting it would have deleted the newest sample, which retention
	// always keeps (the one just taken; deleting it left no history).
	OverBound bool
}

// Store is a history database. Implementations are safe for use by one
// goroutine at a time, except that Close may be called at any time.
type Store interface {
	// Write stores one sample and all its rows in one transaction:
	// after a crash either all of it or none of it is there. The
	// PostgreSQL store may instead spool the sample to disk while the
	// server is unreachable and write it later; it returns nil then.
	Write(ctx context.Context, s *Sample) error
	// Prune deletes old samples and their rows (see Retention).
	Prune(ctx context.Context, r Retention) (Pruned, error)
	// Samples calls fn for each sample matching q, in export order
	// (time, host, id), with its rows in seq order. fn must not keep s
	// or its Rows: they are reused for the next sample. Memory stays
	// bounded by the largest sample, whatever the number of rows.
	Samples(ctx context.Context, q Query, fn func(s *Sample) error) error
	// ExportCSV streams table t of the samples matching q to w as CSV
	// (header line first; see the package doc for columns and quoting).
	// Memory does not grow with the number of rows: PostgreSQL runs a
	// server-side COPY (SELECT ...) TO STDOUT straight into w; SQLite
	// formats one row at a time. Text cells are quoted, not neutralised
	// (see SafeExporter). The output for the same rows is the
	// same bytes from both stores.
	ExportCSV(ctx context.Context, q Query, t Table, w io.Writer) error
	// Close flushes (for PostgreSQL: tries the spool once more) and
	// releases the database.
	Close() error
}

// Spooler is implemented by a Store that may keep a sample on disk
// instead of storing it (PostgreSQL while the server is unreachable).
type Spooler interface {
	// Spooled reports whether the last Write spooled its sample.
	Spooled() bool
}

// Counter is implemented by a Store that can say how much a query
// selects without reading it: what a progress line counts towards.
type Counter interface {
	// Count returns the number of samples q selects and of their usage
	// rows.
	Count(ctx context.Context, q Query) (samples, rows int64, err error)
}

// Filer is implemented by a Store kept in one file (SQLite).
type Filer interface {
	// Opened returns the file as it was when the store opened it: a
	// path later removed or replaced no longer names it (os.SameFile).
	Opened() os.FileInfo
}

// SafeExporter is implemented by a Store that can write the export with
// its text cells (IsTextColumn) already neutralised as AppendSafeField
// writes them, in the same pass as it formats the rows. The output must
// be byte for byte what ExportCSV gives through export.CellWriter, which
// rewrites the CSV in a second pass; memwho export uses ExportSafeCSV
// when a store has it (SQLite), the CellWriter otherwise (PostgreSQL,
// whose server writes the CSV).
type SafeExporter interface {
	ExportSafeCSV(ctx context.Context, q Query, t Table, w io.Writer) error
}

// OpenOptions are the settings Open passes to a back end.
type OpenOptions struct {
	// MustExist makes Open fail with ErrNoHistory instead of creating a
	// new database (readers: leaks, export).
	MustExist bool
	// ReadOnly opens without writing anything: no tables are created,
	// no migration runs, and the connection itself is read-only (SQLite
	// mode=ro and query_only, PostgreSQL default_transaction_read_only).
	// It implies MustExist. A database whose schema is older than this
	// build's is refused (one 'memwho record' upgrades it).
	ReadOnly bool
	// SpoolDir is where the PostgreSQL store keeps samples it could not
	// write yet; "" disables spooling (Write then returns the error).
	SpoolDir string
	// SpoolPerTarget makes the spool a subdirectory of SpoolDir named by
	// a hash of the database's identity (host, port, database, user), so
	// that recorders of different databases never share one: for a
	// default directory. Without it SpoolDir is the spool itself, and
	// samples spooled there by older versions (which recorded no
	// identity) are taken as this database's.
	SpoolPerTarget bool
	// SpoolMax bounds the spool in bytes; the oldest spooled samples are
	// dropped beyond it. 0 means 64 MiB.
	SpoolMax int64
	// ConnIdle, when positive, closes a server's connections (PostgreSQL)
	// idle for about that long: a recorder sampling every minute then
	// holds none between samples, so that a fleet of 1,000 fits in a
	// server's default 100 connections (docs/fleet.md). 0 keeps them.
	ConnIdle time.Duration
	// Warn, if set, receives messages worth a "memwho: warning:" line
	// (spooling started, samples dropped, ...). Nil discards them.
	Warn func(msg string)
}

// OpenFunc opens a database named by target (a path or URL).
type OpenFunc func(ctx context.Context, target string, opt OpenOptions) (Store, error)

var (
	driversMu sync.Mutex
	drivers   = map[string]OpenFunc{}
)

// Register makes a back end available to Open for targets starting with
// scheme + "://" (for example "postgres"). The scheme "" is the default
// for plain paths (SQLite).
func Register(scheme string, open OpenFunc) {
	driversMu.Lock()
	defer driversMu.Unlock()
	drivers[scheme] = open
}

// Schemes lists the registered URL schemes ("" for plain paths).
func Schemes() []string {
	driversMu.Lock()
	defer driversMu.Unlock()
	var s []string
	for k := range drivers {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// Open opens the database named by target: "postgres://..." or
// "postgresql://..." for PostgreSQL (unless built with nopostgres), a file
// path (or "file:PATH") for SQLite. It is the one place that tells the
// back ends apart by the target's spelling (see Shared for the policy
// that follows from it). Its errors are ready to print: a missing history
// says how to start one, anything else is "open history: ...".
func Open(ctx context.Context, target string, opt OpenOptions) (Store, error) {
	st, err := open(ctx, target, opt)
	switch {
	case err == nil:
		return st, nil
	case errors.Is(err, ErrNoHistory):
		return nil, fmt.Errorf("%w (run 'memwho record' first)", err)
	}
	return nil, fmt.Errorf("open history: %w", err)
}

// Shared reports whether target names a database that several hosts
// write (PostgreSQL): there a recorder spools the samples the server
// cannot take yet and prunes only its own host's samples, where a SQLite
// file is one host's, pruned as a whole and bounded by its size.
func Shared(target string) bool {
	scheme, _ := splitTarget(target)
	return scheme != ""
}

// FilePath returns the SQLite file a target names, "" for a server
// (PostgreSQL).
func FilePath(target string) string {
	scheme, rest := splitTarget(target)
	if scheme != "" {
		return ""
	}
	return rest
}

// splitTarget returns the back end's scheme ("" for SQLite) and what
// it is handed.
func splitTarget(target string) (scheme, rest string) {
	if i := strings.Index(target, "://"); i > 0 {
		scheme = target[:i]
	} else if rest, ok := strings.CutPrefix(target, "file:"); ok {
		target = rest
	}
	if scheme == "postgresql" {
		scheme = "postgres"
	}
	return scheme, target
}

func open(ctx context.Context, target string, opt OpenOptions) (Store, error) {
	scheme, target := splitTarget(target)
	driversMu.Lock()
	open, ok := drivers[scheme]
	driversMu.Unlock()
	if !ok {
		if scheme == "" {
			return nil, errors.New("no SQLite support in this build")
		}
		var known []string
		for _, k := range Schemes() {
			if k == "" {
				known = append(known, "SQLite file paths")
			} else {
				known = append(known, k+"://")
			}
		}
		return nil, fmt.Errorf("unsupported database %q (this build takes %s)", scheme+"://", strings.Join(known, " and "))
	}
	return open(ctx, target, opt)
}
