package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/memwho/memwho/internal/sample"

	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/storetest"
)

func openTemp(t *testing.T) *DB {
	t.Helper()
	d, err := Open(context.Background(), filepath.Join(t.TempDir(), "history.db"), store.OpenOptions{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestMissingDirectory: a database in a directory that does not exist is
// an error naming that directory, and nothing is created (a typo in
// --db made a new tree and a new history, exit 0).
func TestMissingDirectory(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct{ path, dir string }{
		{"nonexistent/h.db", "nonexistent"},
		{"nonexistent/dir/h.db", "nonexistent/dir"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			_, err := Open(context.Background(), filepath.Join(root, tc.path), store.OpenOptions{})
			if err == nil || !strings.Contains(err.Error(), filepath.Join(root, tc.dir)+" does not exist") {
				t.Errorf("Open = %v, want an error naming %s", err, tc.dir)
			}
			if ents, _ := os.ReadDir(root); len(ents) != 0 {
				t.Errorf("Open created %s", ents[0].Name())
			}
		})
	}
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t) })
}

func TestPragmas(t *testing.T) {
	d := openTemp(t)
	for _, c := range []struct{ pragma, want string }{
		{"journal_mode", "wal"},
		{"synchronous", "1"},
		{"auto_vacuum", "2"},
	} {
		var got string
		if err := d.db.QueryRow("PRAGMA " + c.pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", c.pragma, err)
		}
		if got != c.want {
			t.Errorf("PRAGMA %s = %q, want %q", c.pragma, got, c.want)
		}
	}
}

func TestMustExist(t *testing.T) {
	_, err := Open(context.Background(), filepath.Join(t.TempDir(), "none.db"), store.OpenOptions{MustExist: true})
	if !errors.Is(err, store.ErrNoHistory) {
		t.Fatalf("Open(MustExist) of a missing file: err = %v, want ErrNoHistory", err)
	}
}

// TestQueryPlan checks that reads in export order need no sort: SQLite
// would otherwise build a temporary B-tree of every row before the first
// one comes out, and memory or temp space would grow with the export.
func TestQueryPlan(t *testing.T) {
	d := openTemp(t)
	for _, q := range []store.Query{{}, {Host: "a"}, {NoRows: true}, {Host: "a", NoRows: true}} {
		for _, keepEmpty := range []bool{false, true} {
			text, args := query(q, keepEmpty)
			rows, err := d.db.Query("EXPLAIN QUERY PLAN "+text, args...)
			if err != nil {
				t.Fatalf("explain: %v", err)
			}
			var plan []string
			for rows.Next() {
				var id, parent, notused int
				var detail string
				if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			rows.Close()
			for _, p := range plan {
				if strings.Contains(p, "TEMP B-TREE") {
					t.Errorf("query %+v (keepEmpty %v) sorts: plan %q", q, keepEmpty, plan)
				}
			}
		}
		for _, tab := range []store.Table{store.TableUsage, store.TableSamples} {
			samples, args, rows := exportQueries(q, tab)
			for _, text := range []string{samples, rows} {
				if text == "" {
					continue
				}
				a := args
				if text == rows {
					a = []any{1}
				}
				if plan := explain(t, d, text, a); strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN usage") {
					t.Errorf("export query %q sorts or scans: plan %q", text, plan)
				}
			}
		}
	}
}

func explain(t *testing.T, d *DB, text string, args []any) string {
	t.Helper()
	rows, err := d.db.Query("EXPLAIN QUERY PLAN "+text, args...)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}

// TestMigrate opens a version 1 database with data (written with the
// version 1 schema) and checks that it is brought to the current version
// and that the old rows read back with the new columns zero.
func TestMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range store.Migrations(store.SQLite)[0].Statements() {
		if _, err := raw.Exec(stmt); err != nil {
			t.Fatalf("v1 schema: %v", err)
		}
	}
	for _, stmt := range []string{
		`INSERT INTO schema_version VALUES (1)`,
		`INSERT INTO samples (id, ts, host, mem_available) VALUES (7, 1772366400123, 'old', 1000)`,
		`INSERT INTO usage (sample_id, seq, kind, key, pid, start_time, pss) VALUES (7, 0, 'process', 'x', 42, 99, 4096)`,
	} {
		if _, err := raw.Exec(stmt); err != nil {
			t.Fatalf("v1 data: %v", err)
		}
	}
	raw.Close()

	d, err := Open(context.Background(), path, store.OpenOptions{MustExist: true})
	if err != nil {
		t.Fatalf("Open v1 database: %v", err)
	}
	defer d.Close()
	if v, err := d.Version(context.Background()); err != nil || v != store.SchemaVersion {
		t.Errorf("version after migration = %d, %v; want %d", v, err, store.SchemaVersion)
	}
	got := storetest.Read(t, d, store.Query{})
	want := []store.Sample{{
		Time: storetest.T0, Host: "old", Meminfo: sample.Meminfo{MemAvailable: 1000},
		Rows: []store.Row{{Kind: store.KindProcess, Key: "x", PID: 42, StartTime: 99, Count: 1, PSS: 4096}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("migrated rows (-want +got):\n%s", diff)
	}
	// And it takes new samples.
	storetest.Write(t, d, storetest.Samples(1, "new"))
}

func TestMigrateEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v0.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Open(context.Background(), path, store.OpenOptions{MustExist: true})
	if err != nil {
		t.Fatalf("Open of an empty (version 0) file: %v", err)
	}
	defer d.Close()
	if v, _ := d.Version(context.Background()); v != store.SchemaVersion {
		t.Errorf("version = %d, want %d", v, store.SchemaVersion)
	}
}

func TestSchemaTooNew(t *testing.T) {
	d := openTemp(t)
	path := d.path
	if _, err := d.db.Exec(`UPDATE schema_version SET version = ?`, store.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	d.Close()
	_, err := Open(context.Background(), path, store.OpenOptions{})
	if !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("Open of a newer database: err = %v, want ErrSchemaTooNew", err)
	}
	// Left untouched.
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var v int
	if err := raw.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil || v != store.SchemaVersion+1 {
		t.Errorf("version after refused open = %d, %v; want %d", v, err, store.SchemaVersion+1)
	}
}

func TestPruneSize(t *testing.T) {
	d := openTemp(t)
	ctx := context.Background()
	in := storetest.Samples(400, "a")
	// Fatten the rows so that the file grows to a few MiB.
	for i := range in {
		for j := range in[i].Rows {
			in[i].Rows[j].Key += strings.Repeat("k", 1000)
		}
	}
	storetest.Write(t, d, in)
	before, err := d.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	max := before / 2
	p, err := d.Prune(ctx, store.Retention{MaxSize: max})
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if p.Size > max || p.Samples == 0 || p.Samples >= 400 {
		t.Errorf("Prune(MaxSize %d) of %d bytes: deleted %d samples, size now %d", max, before, p.Samples, p.Size)
	}
	st, err := os.Stat(d.path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > max+64<<10 {
		t.Errorf("file is %d bytes after Prune(MaxSize %d): incremental vacuum did not shrink it", st.Size(), max)
	}
	got := storetest.Read(t, d, store.Query{NoRows: true})
	if int64(len(got)) != 400-p.Samples || !got[0].Time.Equal(in[p.Samples].Time) {
		t.Errorf("after Prune: %d samples from %v; want %d from %v (the oldest deleted)", len(got), got[0].Time, 400-p.Samples, in[p.Samples].Time)
	}
	if err := d.Check(ctx); err != nil {
		t.Error(err)
	}
}

// TestPruneKeepsNewest: a size bound that one sample alone exceeds
// leaves the newest sample and says the bound is not met; a bound met
// by deleting older samples says nothing.
func TestPruneKeepsNewest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		samples  int
		max      func(size int64) int64
		wantLeft int
		wantOver bool
	}{
		{name: "bound below one sample", samples: 3, max: func(int64) int64 { return 10 }, wantLeft: 1, wantOver: true},
		{name: "one sample over the bound", samples: 1, max: func(int64) int64 { return 10 }, wantLeft: 1, wantOver: true},
		{name: "bound met", samples: 40, max: func(size int64) int64 { return size * 3 / 4 }, wantOver: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := openTemp(t)
			ctx := context.Background()
			in := storetest.Samples(tc.samples, "a")
			for i := range in {
				for j := range in[i].Rows {
					in[i].Rows[j].Key += strings.Repeat("k", 1000)
				}
			}
			storetest.Write(t, d, in)
			size, err := d.Size(ctx)
			if err != nil {
				t.Fatal(err)
			}
			p, err := d.Prune(ctx, store.Retention{MaxSize: tc.max(size)})
			if err != nil {
				t.Fatalf("Prune: %v", err)
			}
			got := storetest.Read(t, d, store.Query{NoRows: true})
			if len(got) == 0 || !got[len(got)-1].Time.Equal(in[len(in)-1].Time) {
				t.Fatalf("after Prune(MaxSize %d bytes) of %d bytes: %d samples, the newest gone", tc.max(size), size, len(got))
			}
			if tc.wantLeft > 0 && len(got) != tc.wantLeft {
				t.Errorf("%d samples left, want %d", len(got), tc.wantLeft)
			}
			if p.OverBound != tc.wantOver {
				t.Errorf("OverBound = %v, want %v (size %d bytes, bound %d bytes)", p.OverBound, tc.wantOver, p.Size, tc.max(size))
			}
		})
	}
}

// BenchmarkWrite: go test -run - -bench Write ./internal/store/sqlite
// (one prepared INSERT per row: batching 64 rows per INSERT measured
// about half as fast with this driver).
func BenchmarkWrite(b *testing.B) {
	d, err := Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), store.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	n := storetest.BenchmarkWrite(b, d)
	if size, err := d.Size(context.Background()); err == nil && n > 0 {
		b.ReportMetric(float64(size)/float64(n), "file-bytes/row")
	}
}
