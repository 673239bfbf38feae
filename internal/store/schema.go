package store

import "fmt"

// Dialect selects the SQL spelling of the schema.
type Dialect uint8

// Dialects.
const (
	SQLite Dialect = iota
	PostgreSQL
)

// Migration brings a database from Version-1 to Version.
type Migration struct {
	Version int
	// SQL is one or more statements separated by ";\n"-terminated lines
	// (see Statements).
	SQL string
}

// memColumns are the meminfo columns of samples, in CSV order.
const memColumns = `mem_total, mem_free, mem_available, buffers, cached, shmem, swap_total, swap_free, hugetlb`

// Migrations returns the migrations of dialect d, oldest first. Version 1
// created the tables; version 2 added the cgroup limit columns of usage.
// A migration only ever adds: old rows stay readable.
func Migrations(d Dialect) []Migration {
	// The types differ only in spelling: SQLite's INTEGER is 64-bit.
	big, idCol, withoutRowid := "INTEGER", "id INTEGER PRIMARY KEY", " WITHOUT ROWID"
	if d == PostgreSQL {
		big, idCol, withoutRowid = "bigint", "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", ""
	}
	mem := ""
	for _, c := range []string{"mem_total", "mem_free", "mem_available", "buffers", "cached", "shmem", "swap_total", "swap_free", "hugetlb"} {
		mem += fmt.Sprintf("\n\t%s %s NOT NULL DEFAULT 0,", c, big)
	}
	v1 := fmt.Sprintf(`CREATE TABLE schema_version (version integer NOT NULL);
CREATE TABLE samples (
	%s,
	ts %s NOT NULL,
	host text NOT NULL,
	boot_id text NOT NULL DEFAULT '',%s
	procs integer NOT NULL DEFAULT 0,
	denied integer NOT NULL DEFAULT 0
);
CREATE INDEX samples_ts_host ON samples (ts, host);
CREATE INDEX samples_host_ts ON samples (host, ts);
CREATE TABLE usage (
	sample_id %s NOT NULL,
	seq integer NOT NULL,
	kind text NOT NULL,
	key text NOT NULL,
	pid integer NOT NULL DEFAULT 0,
	start_time %s NOT NULL DEFAULT 0,
	count integer NOT NULL DEFAULT 1,
	pss %s NOT NULL DEFAULT 0,
	private %s NOT NULL DEFAULT 0,
	shared %s NOT NULL DEFAULT 0,
	swap %s NOT NULL DEFAULT 0,
	estimated integer NOT NULL DEFAULT 0,
	PRIMARY KEY (sample_id, seq)
)%s;
`, idCol, big, mem, big, big, big, big, big, big, withoutRowid)
	v2 := fmt.Sprintf(`ALTER TABLE usage ADD COLUMN mem_limit %s NOT NULL DEFAULT 0;
ALTER TABLE usage ADD COLUMN mem_limit_free %s NOT NULL DEFAULT 0;
`, big, big)
	if d == SQLite {
		return []Migration{{1, v1}, {2, v2}}
	}
	return []Migration{{1, v1}, {2, v2}, {3, postgresV3}}
}

// KindNames is the SQL array of kind names, indexed by Kind + 1: how the
// PostgreSQL store's SQL turns the stored kind numbers into names.
const KindNames = `ARRAY['process','program','user','cgroup','unit','slice','container']`

// postgresV3 makes the PostgreSQL history a fleet's (issue 30): one row
// per sample holding its rows as arrays (7x smaller than a row per
// process, and what a reader wants: a sample at a time), in a table
// partitioned by day, so that retention drops a day instead of deleting
// rows, and the indexes the readers use. The history written so far
// moves over in the same transaction: each day gets its partition, each
// sample its arrays in seq order. Statements end with ";\n"; the DO
// blocks keep theirs on one line.
const postgresV3 = `ALTER TABLE samples RENAME TO samples_v2;
ALTER TABLE usage RENAME TO usage_v2;
ALTER INDEX samples_ts_host RENAME TO samples_v2_ts_host;
ALTER INDEX samples_host_ts RENAME TO samples_v2_host_ts;
ALTER TABLE usage_v2 RENAME CONSTRAINT usage_pkey TO usage_v2_pkey;
CREATE SEQUENCE sample_ids AS bigint;
CREATE TABLE samples (
	id bigint NOT NULL DEFAULT nextval('sample_ids'),
	ts bigint NOT NULL,
	host text NOT NULL,
	boot_id text NOT NULL DEFAULT '',
	mem_total bigint NOT NULL DEFAULT 0,
	mem_free bigint NOT NULL DEFAULT 0,
	mem_available bigint NOT NULL DEFAULT 0,
	buffers bigint NOT NULL DEFAULT 0,
	cached bigint NOT NULL DEFAULT 0,
	shmem bigint NOT NULL DEFAULT 0,
	swap_total bigint NOT NULL DEFAULT 0,
	swap_free bigint NOT NULL DEFAULT 0,
	hugetlb bigint NOT NULL DEFAULT 0,
	procs integer NOT NULL DEFAULT 0,
	denied integer NOT NULL DEFAULT 0,
	nrows integer NOT NULL DEFAULT 0,
	kind smallint[] NOT NULL DEFAULT '{}',
	key text[] NOT NULL DEFAULT '{}',
	pid integer[] NOT NULL DEFAULT '{}',
	start_time bigint[] NOT NULL DEFAULT '{}',
	count integer[] NOT NULL DEFAULT '{}',
	pss bigint[] NOT NULL DEFAULT '{}',
	private bigint[] NOT NULL DEFAULT '{}',
	shared bigint[] NOT NULL DEFAULT '{}',
	swap bigint[] NOT NULL DEFAULT '{}',
	estimated integer[] NOT NULL DEFAULT '{}',
	mem_limit bigint[] NOT NULL DEFAULT '{}',
	mem_limit_free bigint[] NOT NULL DEFAULT '{}'
) PARTITION BY RANGE (ts);
ALTER SEQUENCE sample_ids OWNED BY samples.id;
CREATE INDEX samples_ts_host ON samples (ts, host COLLATE "C", id);
CREATE INDEX samples_host_ts ON samples (host, ts);
CREATE TABLE retention (
	host text PRIMARY KEY,
	keep_ms bigint NOT NULL,
	seen_ms bigint NOT NULL
);
DO $$ DECLARE d bigint; BEGIN FOR d IN SELECT DISTINCT ts / 86400000 - (CASE WHEN ts < 0 AND ts % 86400000 <> 0 THEN 1 ELSE 0 END) FROM samples_v2 LOOP EXECUTE format('CREATE TABLE %I PARTITION OF samples FOR VALUES FROM (%s) TO (%s)', 'samples_p' || to_char(timestamp 'epoch' + d * interval '1 day', 'YYYYMMDD'), d * 86400000, (d + 1) * 86400000); END LOOP; END $$;
INSERT INTO samples (id, ts, host, boot_id, mem_total, mem_free, mem_available, buffers, cached, shmem, swap_total, swap_free, hugetlb, procs, denied,
	nrows, kind, key, pid, start_time, count, pss, private, shared, swap, estimated, mem_limit, mem_limit_free)
SELECT s.id, s.ts, s.host, s.boot_id, s.mem_total, s.mem_free, s.mem_available, s.buffers, s.cached, s.shmem, s.swap_total, s.swap_free, s.hugetlb, s.procs, s.denied,
	coalesce(u.n, 0), coalesce(u.kind, '{}'), coalesce(u.key, '{}'), coalesce(u.pid, '{}'), coalesce(u.start_time, '{}'), coalesce(u.count, '{}'),
	coalesce(u.pss, '{}'), coalesce(u.private, '{}'), coalesce(u.shared, '{}'), coalesce(u.swap, '{}'), coalesce(u.estimated, '{}'),
	coalesce(u.mem_limit, '{}'), coalesce(u.mem_limit_free, '{}')
FROM samples_v2 s LEFT JOIN LATERAL (
	SELECT count(*)::integer AS n,
		array_agg((array_position(` + KindNames + `, x.kind) - 1)::smallint ORDER BY x.seq) AS kind,
		array_agg(x.key ORDER BY x.seq) AS key, array_agg(x.pid ORDER BY x.seq) AS pid, array_agg(x.start_time ORDER BY x.seq) AS start_time,
		array_agg(x.count ORDER BY x.seq) AS count, array_agg(x.pss ORDER BY x.seq) AS pss, array_agg(x.private ORDER BY x.seq) AS private,
		array_agg(x.shared ORDER BY x.seq) AS shared, array_agg(x.swap ORDER BY x.seq) AS swap, array_agg(x.estimated ORDER BY x.seq) AS estimated,
		array_agg(x.mem_limit ORDER BY x.seq) AS mem_limit, array_agg(x.mem_limit_free ORDER BY x.seq) AS mem_limit_free
	FROM usage_v2 x WHERE x.sample_id = s.id) u ON true;
SELECT setval('sample_ids', coalesce((SELECT max(id) FROM samples_v2), 0) + 1, false);
DROP TABLE usage_v2;
DROP TABLE samples_v2;
`

// Statements splits a migration's SQL into single statements (some
// drivers run only one per call).
func (m Migration) Statements() []string {
	var out []string
	start := 0
	for i := 0; i < len(m.SQL); i++ {
		if m.SQL[i] == ';' && (i+1 == len(m.SQL) || m.SQL[i+1] == '\n') {
			out = append(out, m.SQL[start:i])
			start = i + 1
		}
	}
	return out
}

// LatestVersion is the schema version this build writes and reads in
// dialect d: SchemaVersion for SQLite, PostgresSchemaVersion for
// PostgreSQL.
func LatestVersion(d Dialect) int {
	if d == PostgreSQL {
		return PostgresSchemaVersion
	}
	return SchemaVersion
}

// CheckVersion says whether a database of dialect d at version v can be
// used by this build, after migrations: it is an ErrSchemaTooNew error
// for v > LatestVersion(d).
func CheckVersion(d Dialect, v int) error {
	if latest := LatestVersion(d); v > latest {
		return fmt.Errorf("%w (database at version %d, this memwho knows up to %d): upgrade memwho", ErrSchemaTooNew, v, latest)
	}
	if v < 0 {
		return fmt.Errorf("bad schema version %d", v)
	}
	return nil
}

// UsageSelect is the column list of table usage in Row field order, for
// back ends reading rows.
const UsageSelect = `kind, key, pid, start_time, count, pss, private, shared, swap, estimated, mem_limit, mem_limit_free`

// SampleSelect is the column list of table samples in Sample field order.
const SampleSelect = `id, ts, host, boot_id, ` + memColumns + `, procs, denied`
