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
	return []Migration{{1, v1}, {2, v2}}
}

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

// CheckVersion says whether a database at version v can be used by this
// build, after migrations: it is an ErrSchemaTooNew error for v >
// SchemaVersion.
func CheckVersion(v int) error {
	if v > SchemaVersion {
		return fmt.Errorf("%w (database at version %d, this memwho knows up to %d): upgrade memwho", ErrSchemaTooNew, v, SchemaVersion)
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
