//go:build !nopostgres

package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/pgtest"
	"github.com/memwho/memwho/internal/store/storetest"
)

// daySamples returns n samples of each host, spaced apart so that they
// span days: the history of a fleet over several partitions.
func daySamples(n int, every time.Duration, hosts ...string) []store.Sample {
	out := storetest.Samples(n, hosts...)
	for i := range out {
		out[i].Time = storetest.T0.Add(time.Duration(i/len(hosts)) * every)
	}
	return out
}

// partitions returns the names of samples' partitions.
func partitions(t *testing.T, d *DB) []string {
	t.Helper()
	rows, err := d.pool.Query(context.Background(), `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'samples'::regclass ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestPartitions: the history of version 3 in a real server, across
// days: partitions made ahead, a version 2 history migrated with every
// day and row, retention by dropping days no host keeps, the plans the
// readers run, the fleet read over two connections.
func TestPartitions(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	open := func(t *testing.T, url string) *DB {
		t.Helper()
		d, err := Open(ctx, url, store.OpenOptions{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}

	t.Run("DaysAhead", func(t *testing.T) {
		d := open(t, srv.CreateDB(t))
		storetest.Write(t, d, daySamples(3, 20*time.Hour, "a"))
		// 2026-03-01 12:00, 03-02 08:00 and 03-03 04:00, and each next day.
		want := []string{"samples_p20260301", "samples_p20260302", "samples_p20260303", "samples_p20260304"}
		if got := partitions(t, d); !slices.Equal(got, want) {
			t.Errorf("partitions %v, want %v", got, want)
		}
		// A second recorder finds them made.
		d2 := open(t, d.pool.Config().ConnString())
		storetest.Write(t, d2, daySamples(3, 20*time.Hour, "b"))
		if got := partitions(t, d); !slices.Equal(got, want) {
			t.Errorf("partitions after a second recorder %v, want %v", got, want)
		}
	})

	t.Run("MigrateVersion2", func(t *testing.T) {
		url := srv.CreateDB(t)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range store.Migrations(store.PostgreSQL)[:2] {
			for _, stmt := range m.Statements() {
				if _, err := conn.Exec(ctx, stmt); err != nil {
					t.Fatalf("version 2 database: %v", err)
				}
			}
		}
		if _, err := conn.Exec(ctx, `INSERT INTO schema_version VALUES (2)`); err != nil {
			t.Fatal(err)
		}
		// A version 2 history over three days, two hosts, written as
		// version 2 wrote it: a samples row, then its usage rows by seq.
		in := daySamples(4, 18*time.Hour, "web1", "db1")
		for _, s := range in {
			var id int64
			m := s.Meminfo
			if err := conn.QueryRow(ctx, `INSERT INTO samples (ts, host, boot_id, mem_total, mem_free, mem_available, buffers, cached, shmem, swap_total, swap_free, hugetlb, procs, denied)
				VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14) RETURNING id`, store.Millis(s.Time), s.Host, s.BootID,
				int64(m.MemTotal), int64(m.MemFree), int64(m.MemAvailable), int64(m.Buffers), int64(m.Cached), int64(m.Shmem),
				int64(m.SwapTotal), int64(m.SwapFree), int64(m.Hugetlb), s.Procs, s.Denied).Scan(&id); err != nil {
				t.Fatal(err)
			}
			for seq, r := range s.Rows {
				if _, err := conn.Exec(ctx, `INSERT INTO usage (sample_id, seq, kind, key, pid, start_time, count, pss, private, shared, swap, estimated, mem_limit, mem_limit_free)
					VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)`, id, seq, r.Kind.String(), r.Key, r.PID, int64(r.StartTime), r.Count,
					int64(r.PSS), int64(r.Private), int64(r.Shared), int64(r.Swap), r.Estimated, int64(r.MemLimit), int64(r.MemLimitFree)); err != nil {
					t.Fatal(err)
				}
			}
		}
		// And a sample of no rows (record -p of processes all gone).
		if _, err := conn.Exec(ctx, `INSERT INTO samples (ts, host, mem_available) VALUES ($1, 'empty', 1000)`, store.Millis(storetest.T0)); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)

		d := open(t, url)
		if v, err := d.Version(ctx); err != nil || v != store.PostgresSchemaVersion {
			t.Fatalf("version after migration = %d, %v; want %d", v, err, store.PostgresSchemaVersion)
		}
		want := []string{"samples_p20260301", "samples_p20260302", "samples_p20260303"}
		if got := partitions(t, d); !slices.Equal(got, want) {
			t.Errorf("partitions %v, want %v", got, want)
		}
		got := storetest.Read(t, d, store.Query{})
		// In export order: time, then host (db1 before empty before web1).
		var ordered []store.Sample
		for i := 0; i < len(in); i += 2 {
			if i == 0 {
				ordered = append(ordered, in[1], store.Sample{Time: storetest.T0, Host: "empty"}, in[0])
				ordered[1].Meminfo.MemAvailable = 1000
				continue
			}
			ordered = append(ordered, in[i+1], in[i])
		}
		if diff := cmp.Diff(ordered, got); diff != "" {
			t.Errorf("migrated history (-want +got):\n%s", diff)
		}
		if got, want := storetest.Export(t, d, store.Query{}, store.TableUsage), storetest.WantCSV(ordered, store.TableUsage); !bytes.Equal(got, want) {
			t.Errorf("export after migration:\n%s\nwant:\n%s", got, want)
		}
		for _, old := range []string{"usage", "usage_v2", "samples_v2"} {
			var exists bool
			d.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, old).Scan(&exists)
			if exists {
				t.Errorf("table %s left after the migration", old)
			}
		}
		// New samples get new ids after the migrated ones.
		s := storetest.Samples(1, "web1")[0]
		s.Time = storetest.T0.Add(72 * time.Hour)
		storetest.Write(t, d, []store.Sample{s})
		var maxID, n int64
		d.pool.QueryRow(ctx, `SELECT max(id), count(DISTINCT id) FROM samples`).Scan(&maxID, &n)
		if n != int64(len(in))+2 || maxID != n {
			t.Errorf("%d distinct ids up to %d, want %d", n, maxID, len(in)+2)
		}
	})

	t.Run("RetentionDropsDays", func(t *testing.T) {
		url := srv.CreateDB(t)
		a, b := open(t, url), open(t, url)
		// Hosts a and b keep one day; four days of samples every 6 hours.
		in := daySamples(16, 6*time.Hour, "a", "b")
		for i := range in {
			d := a
			if in[i].Host == "b" {
				d = b
			}
			storetest.Write(t, d, in[i:i+1])
			r := store.Retention{Host: in[i].Host, Keep: 24 * time.Hour, Now: in[i].Time, Before: in[i].Time.Add(-24 * time.Hour)}
			if _, err := d.Prune(ctx, r); err != nil {
				t.Fatalf("Prune: %v", err)
			}
		}
		// The last samples are of 03-05 06:00: the days that ended more
		// than a day before, 03-01 to 03-03, are gone; 03-04 stays (a
		// day kept is at most a day more than asked), and nothing was
		// deleted row by row.
		want := []string{"samples_p20260304", "samples_p20260305", "samples_p20260306"}
		if got := partitions(t, a); !slices.Equal(got, want) {
			t.Errorf("partitions %v, want %v", got, want)
		}
		got := storetest.Read(t, a, store.Query{})
		if len(got) != 2*6 || got[0].Time.Before(time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("%d samples left from %v, want 12 from 2026-03-04", len(got), got[0].Time)
		}
	})

	t.Run("RetentionKeepsLongest", func(t *testing.T) {
		url := srv.CreateDB(t)
		long, short, all := open(t, url), open(t, url), open(t, url)
		in := daySamples(16, 6*time.Hour, "long", "short", "all")
		keep := map[string]time.Duration{"long": 48 * time.Hour, "short": 12 * time.Hour, "all": 0}
		stores := map[string]*DB{"long": long, "short": short, "all": all}
		for i := range in {
			s := &in[i]
			d := stores[s.Host]
			storetest.Write(t, d, in[i:i+1])
			r := store.Retention{Host: s.Host, Keep: keep[s.Host], Now: s.Time}
			if r.Keep > 0 {
				r.Before = s.Time.Add(-r.Keep)
			}
			if _, err := d.Prune(ctx, r); err != nil {
				t.Fatalf("Prune: %v", err)
			}
		}
		// "all" keeps everything: no day is dropped, and the others
		// deleted their own samples older than their keep, row by row.
		if got := partitions(t, long); len(got) != 6 {
			t.Errorf("partitions %v, want all six", got)
		}
		count := map[string]int{}
		for _, s := range storetest.Read(t, long, store.Query{}) {
			count[s.Host]++
		}
		if want := map[string]int{"long": 9, "all": 16, "short": 3}; !cmp.Equal(count, want) {
			t.Errorf("samples per host %v, want %v", count, want)
		}
		// Without "all" recording (its row gone, as an admin removes a
		// host that keeps everything), the days older than the longest
		// keep, two days, are dropped at the next look.
		if _, err := long.pool.Exec(ctx, `DELETE FROM retention WHERE host = 'all'`); err != nil {
			t.Fatal(err)
		}
		last := in[len(in)-1].Time.Add(11 * time.Minute)
		if _, err := long.Prune(ctx, store.Retention{Host: "long", Keep: 48 * time.Hour, Now: last, Before: last.Add(-48 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		want := []string{"samples_p20260303", "samples_p20260304", "samples_p20260305", "samples_p20260306"}
		if got := partitions(t, long); !slices.Equal(got, want) {
			t.Errorf("partitions %v, want %v", got, want)
		}
	})

	t.Run("Plans", func(t *testing.T) {
		d := open(t, srv.CreateDB(t))
		// Many hosts over two days, analysed as autovacuum would.
		var hosts []string
		for i := range 100 {
			hosts = append(hosts, fmt.Sprintf("host%02d", i))
		}
		storetest.Write(t, d, daySamples(50, time.Hour, hosts...))
		if _, err := d.pool.Exec(ctx, `ANALYZE`); err != nil {
			t.Fatal(err)
		}
		// The partition made a day ahead is empty: reading it whole
		// costs nothing.
		empty := map[string]bool{}
		for _, p := range partitions(t, d) {
			var n int
			d.pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{p}.Sanitize()).Scan(&n)
			empty[p] = n == 0
		}
		q := store.Query{Since: storetest.T0.Add(5 * time.Hour), Until: storetest.T0.Add(6 * time.Hour)}
		for _, c := range []struct {
			name, sql string
			want      []string // node types the plan must have
			never     []string // and must not
		}{
			// The export: the index's order, each sample's rows sorted
			// by seq alone (an incremental sort), never the whole result
			// sorted, one day's partition read.
			{"export", strings.TrimSuffix(strings.TrimPrefix(ExportSQL(q, store.TableUsage), "COPY ("), ") TO STDOUT WITH (FORMAT csv, HEADER)"),
				[]string{"Incremental Sort", "Index Scan"}, []string{"Seq Scan", "Sort", "samples_p20260302"}},
			{"export, one host", strings.TrimSuffix(strings.TrimPrefix(ExportSQL(store.Query{Host: "host07", Since: q.Since}, store.TableUsage), "COPY ("), ") TO STDOUT WITH (FORMAT csv, HEADER)"),
				[]string{"Index"}, []string{"Seq Scan"}},
			{"samples table", strings.TrimSuffix(strings.TrimPrefix(ExportSQL(q, store.TableSamples), "COPY ("), ") TO STDOUT WITH (FORMAT csv, HEADER)"),
				[]string{"Index Scan"}, []string{"Seq Scan", "Sort"}},
			// leaks: the window's samples in order, no sort.
			{"leaks", SamplesSQL(store.Query{Since: q.Since, Until: q.Until, Growth: true}, " AND hashtext(s.host) & 1 = 0"),
				[]string{"Index Scan"}, []string{"Seq Scan", "Sort", "samples_p20260302"}},
			// diff --since and a spooled sample's check: one host at a time.
			{"one host", SamplesSQL(store.Query{Host: "host07", Since: q.Since, Until: q.Until, NoRows: true}, ""),
				[]string{"Index"}, []string{"Seq Scan"}},
			{"spool dedupe", `SELECT 1 FROM samples WHERE host = 'host07' AND ts = 1772366400123`,
				[]string{"Index"}, []string{"Seq Scan"}},
			{"count", `SELECT count(*), coalesce(sum(s.nrows), 0) FROM samples s` + where(q),
				[]string{"Index"}, []string{"Seq Scan", "samples_p20260302"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				var js []byte
				if err := d.pool.QueryRow(ctx, `EXPLAIN (FORMAT JSON) `+c.sql).Scan(&js); err != nil {
					t.Fatalf("EXPLAIN %s: %v", c.sql, err)
				}
				nodes := planNodes(t, js)
				for _, w := range c.want {
					if !slices.ContainsFunc(nodes, func(n [2]string) bool { return strings.Contains(n[0], w) }) {
						t.Errorf("plan has no %s: %v\n%s", w, nodes, c.sql)
					}
				}
				for _, n := range nodes {
					for _, never := range c.never {
						if (n[0] == never && !empty[n[1]]) || n[1] == never {
							t.Errorf("plan has %s: %v\n%s", never, nodes, c.sql)
						}
					}
				}
			})
		}
	})

	t.Run("ConnIdle", func(t *testing.T) {
		// A recorder of a long interval holds no connection between
		// samples.
		d, err := Open(ctx, srv.CreateDB(t), store.OpenOptions{ConnIdle: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		storetest.Write(t, d, storetest.Samples(1, "a"))
		if n := d.pool.Stat().TotalConns(); n == 0 {
			t.Fatal("no connection right after a write")
		}
		deadline := time.Now().Add(10 * time.Second)
		for d.pool.Stat().TotalConns() > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections still open 10 s after the write", d.pool.Stat().TotalConns())
			}
			time.Sleep(50 * time.Millisecond)
		}
		storetest.Write(t, d, storetest.Samples(2, "a")[1:])
	})

	t.Run("FleetRead", func(t *testing.T) {
		d := open(t, srv.CreateDB(t))
		var hosts []string
		for i := range 9 {
			hosts = append(hosts, fmt.Sprintf("h%d", i))
		}
		in := daySamples(6, time.Minute, hosts...)
		storetest.Write(t, d, in)
		ordered := storetest.Read(t, d, store.Query{})
		got := storetest.Read(t, d, store.Query{Growth: true})
		if len(got) != len(ordered) {
			t.Fatalf("Growth read %d samples, want %d", len(got), len(ordered))
		}
		// Each host's samples in time order; the rows as stored, less
		// what a ranking does not read.
		byHost := map[string][]store.Sample{}
		for _, s := range got {
			byHost[s.Host] = append(byHost[s.Host], s)
		}
		for _, s := range ordered {
			g := byHost[s.Host][0]
			byHost[s.Host] = byHost[s.Host][1:]
			for i := range s.Rows {
				s.Rows[i].Private, s.Rows[i].Shared, s.Rows[i].Estimated = 0, 0, 0
			}
			if diff := cmp.Diff(s, g); diff != "" {
				t.Errorf("host %s (-ordered +growth):\n%s", s.Host, diff)
			}
		}
		samples, rows, err := d.Count(ctx, store.Query{Since: storetest.T0.Add(time.Minute)})
		if err != nil || samples != 5*9 || rows != 5*9*7 {
			t.Errorf("Count = %d samples, %d rows, %v; want 45, 315", samples, rows, err)
		}
	})
}

// planNodes lists the node types of a JSON plan, each with the relation
// it reads ({"Index Scan", "samples_p20260301"}).
func planNodes(t *testing.T, js []byte) [][2]string {
	t.Helper()
	var plans []struct{ Plan map[string]any }
	if err := json.Unmarshal(js, &plans); err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		s := [2]string{fmt.Sprint(n["Node Type"])}
		if rel, ok := n["Relation Name"]; ok {
			s[1] = fmt.Sprint(rel)
		}
		out = append(out, s)
		if kids, ok := n["Plans"].([]any); ok {
			for _, k := range kids {
				walk(k.(map[string]any))
			}
		}
	}
	for _, p := range plans {
		walk(p.Plan)
	}
	return out
}
