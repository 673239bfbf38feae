//go:build !nopostgres

package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/pgtest"
	"github.com/memwho/memwho/internal/store/storetest"
)

// TestPostgres runs everything against one real server (starting a
// cluster costs seconds), each subtest in its own database.
func TestPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	open := func(t *testing.T, url string, opt store.OpenOptions) *DB {
		t.Helper()
		d, err := Open(ctx, url, opt)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}

	t.Run("Store", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store { return open(t, srv.CreateDB(t), store.OpenOptions{}) })
	})

	t.Run("Migrate", func(t *testing.T) {
		url := srv.CreateDB(t)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range append(store.Migrations(store.PostgreSQL)[0].Statements(),
			`INSERT INTO schema_version VALUES (1)`,
			`INSERT INTO samples (ts, host, mem_available) VALUES (1772366400123, 'old', 1000)`,
			`INSERT INTO usage (sample_id, seq, kind, key, pid, start_time, pss) SELECT id, 0, 'process', 'x', 42, 99, 4096 FROM samples`) {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				t.Fatalf("version 1 database: %v", err)
			}
		}
		conn.Close(ctx)
		d := open(t, url, store.OpenOptions{})
		if v, err := d.Version(ctx); err != nil || v != store.PostgresSchemaVersion {
			t.Errorf("version after migration = %d, %v; want %d", v, err, store.PostgresSchemaVersion)
		}
		got := storetest.Read(t, d, store.Query{})
		want := []store.Sample{{
			Time: storetest.T0, Host: "old", Meminfo: sample.Meminfo{MemAvailable: 1000},
			Rows: []store.Row{{Kind: store.KindProcess, Key: "x", PID: 42, StartTime: 99, Count: 1, PSS: 4096}},
		}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("migrated rows (-want +got):\n%s", diff)
		}
	})

	t.Run("SchemaTooNew", func(t *testing.T) {
		url := srv.CreateDB(t)
		d := open(t, url, store.OpenOptions{})
		if _, err := d.pool.Exec(ctx, `UPDATE schema_version SET version = $1`, store.PostgresSchemaVersion+1); err != nil {
			t.Fatal(err)
		}
		// Refused, even with a spool: waiting would not help.
		_, err := Open(ctx, url, store.OpenOptions{SpoolDir: t.TempDir()})
		if !errors.Is(err, store.ErrSchemaTooNew) {
			t.Fatalf("Open of a newer database: err = %v, want ErrSchemaTooNew", err)
		}
	})

	t.Run("ManyHosts", func(t *testing.T) {
		url := srv.CreateDB(t)
		hosts := []string{"h1", "h2", "h3", "h4"}
		var wg sync.WaitGroup
		errs := make(chan error, len(hosts))
		for _, h := range hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := Open(ctx, url, store.OpenOptions{})
				if err != nil {
					errs <- err
					return
				}
				defer d.Close()
				for _, s := range storetest.Samples(5, h) {
					if err := d.Write(ctx, &s); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("concurrent recorder: %v", err)
		}
		d := open(t, url, store.OpenOptions{})
		got := storetest.Read(t, d, store.Query{})
		want := storetest.Samples(5, hosts...)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("four hosts recording at once (-want +got):\n%s", diff)
		}
	})

	// Foreign: a database holding another program's tables is refused by
	// writers and readers, and gains no table.
	t.Run("Foreign", func(t *testing.T) {
		for _, ddl := range []string{
			`CREATE TABLE accounts (name text, balance integer)`,
			`CREATE TABLE samples (x integer)`,
		} {
			url := srv.CreateDB(t)
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, ddl); err != nil {
				t.Fatal(err)
			}
			for _, opt := range []store.OpenOptions{{}, {ReadOnly: true}, {SpoolDir: t.TempDir()}} {
				d, err := Open(ctx, url, opt)
				if err == nil {
					d.Close()
				}
				if !errors.Is(err, store.ErrNotHistory) {
					t.Errorf("%s: Open(%+v) = %v, want ErrNotHistory", ddl, opt, err)
				}
			}
			var n int
			conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&n)
			if n != 1 {
				t.Errorf("%s: %d tables afterwards, want 1", ddl, n)
			}
			conn.Close(ctx)
		}
	})

	// ReadOnly: readers create no table in an empty database and cannot
	// write; a writer marks what it creates.
	t.Run("ReadOnly", func(t *testing.T) {
		url := srv.CreateDB(t)
		if _, err := Open(ctx, url, store.OpenOptions{ReadOnly: true}); !errors.Is(err, store.ErrNoHistory) {
			t.Errorf("read-only Open of an empty database = %v, want ErrNoHistory", err)
		}
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&n)
		if n != 0 {
			t.Errorf("a reader created %d tables", n)
		}
		w := open(t, url, store.OpenOptions{})
		var mark string
		conn.QueryRow(ctx, `SELECT obj_description('schema_version'::regclass, 'pg_class')`).Scan(&mark)
		if mark != historyMark {
			t.Errorf("schema_version comment = %q, want %q", mark, historyMark)
		}
		storetest.Write(t, w, storetest.Samples(1, "h"))
		r := open(t, url, store.OpenOptions{ReadOnly: true})
		if got := storetest.Read(t, r, store.Query{}); len(got) != 1 {
			t.Errorf("reader sees %d samples, want 1", len(got))
		}
		s := storetest.Samples(1, "h2")
		if err := r.Write(ctx, &s[0]); err == nil {
			t.Error("Write through a read-only open succeeded")
		}
	})

	t.Run("Spool", func(t *testing.T) {
		// Stops the shared server: keep it last.
		url := srv.CreateDB(t)
		spoolDir := filepath.Join(t.TempDir(), "spool")
		var warnings []string
		d := open(t, url, store.OpenOptions{SpoolDir: spoolDir, Warn: func(m string) { warnings = append(warnings, m) }})
		in := storetest.Samples(6, "h")
		storetest.Write(t, d, in[:2])
		srv.Stop()
		storetest.Write(t, d, in[2:5]) // spooled: Write returns nil
		if n := d.spool.Len(); n != 3 {
			t.Errorf("spooled %d samples while the server was down, want 3", n)
		}
		srv.Start()
		storetest.Write(t, d, in[5:])
		if n := d.spool.Len(); n != 0 {
			t.Errorf("%d samples left in the spool after the server came back", n)
		}
		got := storetest.Read(t, d, store.Query{})
		if diff := cmp.Diff(in, got); diff != "" {
			t.Errorf("rows after an outage (-want +got):\n%s", diff)
		}
		if len(warnings) != 2 || !strings.Contains(warnings[0], "unreachable") || !strings.Contains(warnings[1], "reachable again") {
			t.Errorf("warnings = %q, want one on losing and one on regaining the server", warnings)
		}

		// Opening while the server is down works with a spool, and
		// fails without one.
		srv.Stop()
		d2, err := Open(ctx, url, store.OpenOptions{SpoolDir: spoolDir})
		if err != nil {
			t.Fatalf("Open with the server down and a spool: %v", err)
		}
		more := storetest.Samples(8, "h")[6:]
		storetest.Write(t, d2, more)
		if _, err := Open(ctx, url, store.OpenOptions{}); err == nil {
			t.Error("Open with the server down and no spool succeeded")
		}
		srv.Start()
		d2.Close() // flushes
		got = storetest.Read(t, open(t, url, store.OpenOptions{}), store.Query{})
		if len(got) != 8 {
			t.Errorf("after Close with the server back: %d samples, want 8", len(got))
		}
	})
}

func TestSpoolBound(t *testing.T) {
	dir := t.TempDir()
	in := storetest.Samples(10, "h")
	one, err := os.ReadFile(mustPut(t, dir, &in[0]))
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(dir)
	max := int64(len(one))*4 + 10
	sp, err := openSpool(dir, max, "postgres://u@h:5432/db", false)
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	for i := range in {
		if err := sp.put(&in[i], func(m string) { warned = append(warned, m) }); err != nil {
			t.Fatal(err)
		}
	}
	names, _ := sp.list()
	if len(names) != 4 {
		t.Fatalf("spool holds %d samples with room for 4", len(names))
	}
	var s store.Sample
	if _, err := sp.get(names[0], &s); err != nil || !s.Time.Equal(in[6].Time) {
		t.Errorf("oldest kept sample is from %v (%v), want %v: the oldest are dropped", s.Time, err, in[6].Time)
	}
	if len(warned) == 0 {
		t.Error("no warning when samples were dropped")
	}
	if diff := cmp.Diff(in[6], s); diff != "" {
		t.Errorf("spool round trip (-want +got):\n%s", diff)
	}
}

func mustPut(t *testing.T, dir string, s *store.Sample) string {
	sp, err := openSpool(dir, 1<<30, "postgres://u@h:5432/db", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.put(s, nil); err != nil {
		t.Fatal(err)
	}
	names, _ := sp.list()
	return filepath.Join(dir, names[0])
}

func TestQuoteLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"web1":       "'web1'",
		"o'brien":    "'o''brien'",
		`back\slash`: `'back\slash'`,
	} {
		if got := quoteLiteral(in); got != want {
			t.Errorf("quoteLiteral(%q) = %s, want %s", in, got, want)
		}
	}
}

// BenchmarkWrite: go test -run - -bench Write ./internal/store/postgres
// (starts a real server; the cluster runs with fsync off, see pgtest).
func BenchmarkWrite(b *testing.B) {
	srv := pgtest.Start(b)
	d, err := Open(context.Background(), srv.CreateDB(b), store.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	storetest.BenchmarkWrite(b, d)
}

// TestSpoolTargets: samples spooled for one database are never written
// into another. A spool shared by two targets (an explicit --spool)
// keeps the other's samples, with one warning naming that database;
// files of older versions (no identity) go to an explicitly given
// target, and in the per-target default they stay with a warning.
func TestSpoolTargets(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	identity := func(url string) string {
		c, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		return Identity(c)
	}
	in := storetest.Samples(4, "h")
	// spoolFor leaves s in dir as a recorder of target left it when the
	// server went away.
	spoolFor := func(dir, target string, s *store.Sample) {
		sp, err := openSpool(dir, 0, target, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := sp.put(s, nil); err != nil {
			t.Fatal(err)
		}
	}
	// legacyFile writes s as versions without an identity did.
	legacyFile := func(dir string, s *store.Sample) {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(dir, 0o700)
		name := fmt.Sprintf("%020d-%06d-%d%s", store.Millis(s.Time), 1, 1, spoolExt)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	count := func(url string) int {
		d, err := Open(ctx, url, store.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		return len(storetest.Read(t, d, store.Query{}))
	}

	for _, tc := range []struct {
		name   string
		perDir bool // a default directory: SpoolPerTarget
		legacy bool // a file of an older version in the directory given
		// wantB: samples in B after its recorder wrote two (a legacy
		// file in a directory given explicitly is taken as B's); wantA:
		// in A after its own recorder wrote one.
		wantB, wantA int
		// wantWarn: what B's recorder warns, one line each.
		wantWarn []string
	}{
		{name: "shared dir", wantB: 2, wantA: 2, wantWarn: []string{"1 samples in spool * wait for $A, not this one ($B); left in place"}},
		{name: "shared dir, legacy file", legacy: true, wantB: 3, wantA: 2, wantWarn: []string{"1 samples in spool * wait for $A, not this one ($B); left in place"}},
		{name: "default dir", perDir: true, wantB: 2, wantA: 2},
		{name: "default dir, legacy file", perDir: true, legacy: true, wantB: 2, wantA: 2, wantWarn: []string{"1 samples spooled by an older memwho wait in * for a database it did not record; kept: *"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A password in the URL must never reach a file or warning.
			a := strings.Replace(srv.CreateDB(t), "memwho@", "memwho:secret@", 1)
			b := strings.Replace(srv.CreateDB(t), "memwho@", "memwho:secret@", 1)
			dir := filepath.Join(t.TempDir(), "spool")
			spoolA := dir
			if tc.perDir {
				spoolA = filepath.Join(dir, targetTag(identity(a)))
			}
			spoolFor(spoolA, identity(a), &in[0])
			if tc.legacy {
				legacyFile(dir, &in[1])
			}
			var warnings []string
			opt := store.OpenOptions{SpoolDir: dir, SpoolPerTarget: tc.perDir, Warn: func(m string) { warnings = append(warnings, m) }}
			d, err := Open(ctx, b, opt)
			if err != nil {
				t.Fatal(err)
			}
			storetest.Write(t, d, in[2:4])
			d.Close()
			if got := count(b); got != tc.wantB {
				t.Errorf("B holds %d samples, want %d", got, tc.wantB)
			}
			if len(warnings) != len(tc.wantWarn) {
				t.Errorf("warnings %q, want %d", warnings, len(tc.wantWarn))
			}
			for i, w := range tc.wantWarn {
				w = strings.NewReplacer("$A", identity(a), "$B", identity(b)).Replace(w)
				if len(warnings) <= i || !like(w, warnings[i]) {
					t.Errorf("warning %q, want %q", warnings, w)
				}
			}
			for _, f := range append(glob(dir), glob(spoolA)...) {
				if b, _ := os.ReadFile(f); strings.Contains(string(b), "secret") {
					t.Errorf("%s holds the password", f)
				}
			}
			d, err = Open(ctx, a, store.OpenOptions{SpoolDir: dir, SpoolPerTarget: tc.perDir})
			if err != nil {
				t.Fatal(err)
			}
			storetest.Write(t, d, in[2:3])
			d.Close()
			if got := count(a); got != tc.wantA {
				t.Errorf("A holds %d samples after its recorder ran, want %d", got, tc.wantA)
			}
			if n := len(glob(spoolA)); n != 0 && !(tc.legacy && tc.perDir) {
				t.Errorf("%d files left in A's spool", n)
			}
			if n := len(glob(dir)); tc.perDir && tc.legacy && n != 1 {
				t.Errorf("%d files in the default directory, want the legacy one kept", n)
			}
		})
	}
}

// like matches s against pattern, where * stands for any text.
func like(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) || !strings.HasSuffix(s, parts[len(parts)-1]) {
		return false
	}
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

func glob(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "*"+spoolExt))
	return m
}

// TestIdentity: what tells two databases apart, without the password.
func TestIdentity(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"postgres://memwho:secret@db.example.com/fleetA", "postgres://memwho@db.example.com:5432/fleetA"},
		{"postgres://memwho@db.example.com:6543/fleetB?sslmode=disable", "postgres://memwho@db.example.com:6543/fleetB"},
		{"postgres://memwho@db/memwho?options=-csearch_path%3Dm", "postgres://memwho@db:5432/memwho?options=-csearch_path%3Dm"},
	} {
		c, err := pgx.ParseConfig(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := Identity(c); got != tc.want {
			t.Errorf("Identity(%s) = %s, want %s", tc.url, got, tc.want)
		}
	}
}
