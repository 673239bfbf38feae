// Package storetest holds tests that every store.Store back end must
// pass, so that SQLite and PostgreSQL behave alike: round trips, query
// bounds, export bytes, pruning.
package storetest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/store"
)

// T0 is the time of the first sample of Samples.
var T0 = time.Date(2026, 3, 1, 12, 0, 0, 123e6, time.UTC)

// Samples returns n samples one minute apart for each of hosts, with
// hostile keys (commas, quotes, newlines, a leading space, escaped
// invalid UTF-8) and figures that change with the sample index.
func Samples(n int, hosts ...string) []store.Sample {
	var out []store.Sample
	for i := range n {
		for _, host := range hosts {
			s := store.Sample{
				Time:   T0.Add(time.Duration(i) * time.Minute),
				Host:   host,
				BootID: "1f0e2d3c-0000-4000-8000-" + host,
				Meminfo: sample.Meminfo{
					MemTotal: 16 << 30, MemFree: 1 << 30, MemAvailable: uint64(8<<30 - i<<20), Buffers: 1 << 20,
					Cached: 2 << 30, Shmem: 3 << 20, SwapTotal: 4 << 30, SwapFree: 4<<30 - 5<<20, Hugetlb: 0,
				},
				Procs: 3, Denied: 1,
			}
			s.Rows = []store.Row{
				{Kind: store.KindProcess, Key: "leaky", PID: 100, StartTime: 5000, Count: 1, PSS: uint64(10<<20 + i<<20), Private: uint64(9<<20 + i<<20), Shared: 1 << 20, Swap: 4096},
				{Kind: store.KindProcess, Key: "a,b \"quoted\"", PID: 200, StartTime: 6000, Count: 1, PSS: 5 << 20, Private: 4 << 20, Shared: 1 << 20, Estimated: 1},
				{Kind: store.KindProcess, Key: " two\nlines", PID: 300, StartTime: 7000, Count: 1, PSS: 1 << 20, Private: 1 << 20, MemLimit: 512 << 20, MemLimitFree: 100 << 20},
				{Kind: store.KindProgram, Key: store.CleanKey("bad\xffname"), Count: 1, PSS: 1 << 20, Private: 1 << 20},
				{Kind: store.KindProgram, Key: "leaky", Count: 1, PSS: uint64(10<<20 + i<<20), Private: uint64(9<<20 + i<<20), Shared: 1 << 20, Swap: 4096},
				{Kind: store.KindUser, Key: "root", Count: 3, PSS: uint64(16<<20 + i<<20), Private: 14 << 20, Shared: 2 << 20, Swap: 4096, Estimated: 1},
				{Kind: store.KindCgroup, Key: "/system.slice/x.service", Count: 3, PSS: 16 << 20, MemLimit: 1 << 30, MemLimitFree: 900 << 20},
			}
			store.SortRows(s.Rows)
			out = append(out, s)
		}
	}
	return out
}

// Write writes samples to s, failing the test on error.
func Write(t testing.TB, s store.Store, samples []store.Sample) {
	t.Helper()
	for i := range samples {
		if err := s.Write(context.Background(), &samples[i]); err != nil {
			t.Fatalf("Write sample %d: %v", i, err)
		}
	}
}

// Read returns copies of the samples matching q.
func Read(t testing.TB, s store.Store, q store.Query) []store.Sample {
	t.Helper()
	var out []store.Sample
	err := s.Samples(context.Background(), q, func(x *store.Sample) error {
		c := *x
		c.ID = 0
		c.Rows = append([]store.Row(nil), x.Rows...)
		if len(c.Rows) == 0 {
			c.Rows = nil
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		t.Fatalf("Samples(%+v): %v", q, err)
	}
	return out
}

// Export returns the CSV export of table tab for q.
func Export(t testing.TB, s store.Store, q store.Query, tab store.Table) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := s.ExportCSV(context.Background(), q, tab, &b); err != nil {
		t.Fatalf("ExportCSV(%+v, %v): %v", q, tab, err)
	}
	return b.Bytes()
}

// WantCSV is the export of samples computed in Go, the reference both
// stores must match byte for byte.
func WantCSV(samples []store.Sample, tab store.Table) []byte {
	b := store.AppendHeader(nil, tab)
	for i := range samples {
		s := &samples[i]
		if tab == store.TableSamples {
			b = store.AppendSampleCSV(b, s)
			continue
		}
		for j := range s.Rows {
			b = store.AppendUsageCSV(b, s, &s.Rows[j])
		}
	}
	return b
}

// Run runs the shared tests on a fresh store from open (called once per
// subtest).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("RoundTrip", func(t *testing.T) {
		s := open(t)
		in := Samples(3, "a", "b")
		Write(t, s, in)
		got := Read(t, s, store.Query{})
		// Export order is time, then host.
		if diff := cmp.Diff(in, got); diff != "" {
			t.Errorf("Samples round trip (-want +got):\n%s", diff)
		}
	})
	t.Run("Query", func(t *testing.T) {
		s := open(t)
		in := Samples(5, "a", "b")
		Write(t, s, in)
		q := store.Query{Since: T0.Add(time.Minute), Until: T0.Add(3 * time.Minute), Host: "b"}
		got := Read(t, s, q)
		want := []store.Sample{in[3], in[5]}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Samples(%+v) (-want +got):\n%s", q, diff)
		}
		noRows := Read(t, s, store.Query{NoRows: true})
		if len(noRows) != len(in) || noRows[0].Rows != nil {
			t.Errorf("NoRows gave %d samples, first with %d rows; want %d, 0", len(noRows), len(noRows[0].Rows), len(in))
		}
	})
	t.Run("ExportCSV", func(t *testing.T) {
		s := open(t)
		in := Samples(3, "b", "a")
		Write(t, s, in)
		// Written b then a at each time; read a then b.
		ordered := []store.Sample{in[1], in[0], in[3], in[2], in[5], in[4]}
		for _, tab := range []store.Table{store.TableUsage, store.TableSamples} {
			got := Export(t, s, store.Query{}, tab)
			want := WantCSV(ordered, tab)
			if !bytes.Equal(got, want) {
				t.Errorf("ExportCSV %v:\ngot:\n%s\nwant:\n%s", tab, got, want)
			}
		}
		q := store.Query{Since: T0.Add(time.Minute), Host: "a"}
		if got, want := Export(t, s, q, store.TableUsage), WantCSV([]store.Sample{in[3], in[5]}, store.TableUsage); !bytes.Equal(got, want) {
			t.Errorf("ExportCSV %+v:\ngot:\n%s\nwant:\n%s", q, got, want)
		}
		empty := Export(t, s, store.Query{Since: T0.Add(time.Hour)}, store.TableUsage)
		if want := store.AppendHeader(nil, store.TableUsage); !bytes.Equal(empty, want) {
			t.Errorf("empty export = %q, want the header %q", empty, want)
		}
	})
	t.Run("PruneAge", func(t *testing.T) {
		s := open(t)
		in := Samples(10, "a", "b")
		Write(t, s, in)
		p, err := s.Prune(context.Background(), store.Retention{Before: T0.Add(4 * time.Minute), Host: "a"})
		if err != nil {
			t.Fatalf("Prune: %v", err)
		}
		if p.Samples != 4 {
			t.Errorf("Prune deleted %d samples, want 4", p.Samples)
		}
		got := Read(t, s, store.Query{})
		var firstA time.Time
		var nA int
		for _, x := range got {
			if x.Host == "a" {
				if nA == 0 {
					firstA = x.Time
				}
				nA++
			}
		}
		if len(got) != 16 || nA != 6 || firstA != T0.Add(4*time.Minute) {
			t.Errorf("after Prune: %d samples, %d of host a, the first at %v; want 16, 6, %v", len(got), nA, firstA, T0.Add(4*time.Minute))
		}
		var rows int
		for _, x := range got {
			rows += len(x.Rows)
		}
		if rows != 16*7 {
			t.Errorf("after Prune: %d rows, want %d", rows, 16*7)
		}
	})
}

// Big returns a sample shaped like a busy host's: procs process rows
// (about 60 programs, 5 users, 40 cgroups) plus their group rows, the
// load for insert benchmarks.
func Big(procs int, t time.Time) store.Sample {
	s := store.Sample{Time: t, Host: "bench", BootID: "boot",
		Meminfo: sample.Meminfo{MemTotal: 64 << 30, MemAvailable: 20 << 30}, Procs: procs}
	progs := map[string]*store.Row{}
	for i := range procs {
		r := store.Row{Kind: store.KindProcess, Key: fmt.Sprintf("program-%02d", i%60), PID: 1000 + i, StartTime: uint64(5000 + i), Count: 1,
			PSS: uint64(i) << 16, Private: uint64(i) << 15, Shared: uint64(i) << 15, Swap: uint64(i%7) << 12}
		s.Rows = append(s.Rows, r)
		if g := progs[r.Key]; g != nil {
			g.Count++
			g.PSS += r.PSS
		} else {
			progs[r.Key] = &store.Row{Kind: store.KindProgram, Key: r.Key, Count: 1, PSS: r.PSS}
		}
	}
	for _, g := range progs {
		s.Rows = append(s.Rows, *g)
	}
	for i := range 5 {
		s.Rows = append(s.Rows, store.Row{Kind: store.KindUser, Key: fmt.Sprintf("user%d", i), Count: procs / 5, PSS: 1 << 30})
	}
	for i := range 40 {
		s.Rows = append(s.Rows, store.Row{Kind: store.KindCgroup, Key: fmt.Sprintf("/system.slice/service-%02d.service", i), Count: procs / 40, PSS: 1 << 28, MemLimit: 4 << 30, MemLimitFree: 1 << 30})
	}
	store.SortRows(s.Rows)
	return s
}

// BenchmarkWrite writes samples of 1,000 processes (1,105 rows) to s and
// reports rows/s; it returns the number of rows written.
func BenchmarkWrite(b *testing.B, s store.Store) int {
	ctx := context.Background()
	x := Big(1000, T0)
	b.ResetTimer()
	n := 0
	for b.Loop() {
		x.Time = T0.Add(time.Duration(n) * time.Second)
		if err := s.Write(ctx, &x); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n*len(x.Rows))/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(len(x.Rows)), "rows/sample")
	return n * len(x.Rows)
}
