package engine

import (
	"github.com/memwho/memwho/internal/proc/fstest"
	"os"
	"strconv"
	"testing"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/testload"
)

// BenchmarkTick measures ticks over testload children that do not change
// (MEMWHO_BENCH_PROCS of them, default 1000): the steady cost of the
// agent between forced walks, with and without TCP counting, against a
// full walk (ForceFull) and a report's scan (report-once: a fresh
// sampler's one scan, as a report makes it; report-scan: a sampler's
// later scans).
func BenchmarkTick(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("MEMWHO_BENCH_PROCS")); err == nil && v > 0 {
		n = v
	}
	g := startLoad(b, n, testload.Spec{Private: 256 << 10})
	for _, bc := range []struct {
		name string
		opt  Options
		full bool
	}{
		{"steady", Options{FullEvery: 1 << 30}, false},
		{"steady-conns", Options{FullEvery: 1 << 30, Conns: true}, false},
		{"full", Options{}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opt := bc.opt
			opt.FS, opt.PIDs = fstest.Open(b, "/proc"), g.PIDs
			e, err := New(opt)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			var snap sample.Snapshot
			e.Scan(&snap)
			b.ReportAllocs()
			for b.Loop() {
				if bc.full {
					e.ForceFull()
				}
				e.Scan(&snap)
			}
		})
	}
	// A report makes one sampler and scans once, in a process whose
	// garbage collector never runs: B/op here is what stays resident.
	b.Run("report-once", func(b *testing.B) {
		fs := fstest.Open(b, "/proc")
		b.ReportAllocs()
		for b.Loop() {
			sc, err := New(Options{FS: fs, PIDs: g.PIDs, OneShot: true})
			if err != nil {
				b.Fatal(err)
			}
			var snap sample.Snapshot
			sc.Scan(&snap)
			sc.Close()
		}
	})
	b.Run("report-scan", func(b *testing.B) {
		sc, err := New(Options{FS: fstest.Open(b, "/proc"), PIDs: g.PIDs, OneShot: true})
		if err != nil {
			b.Fatal(err)
		}
		defer sc.Close()
		var snap sample.Snapshot
		b.ReportAllocs()
		for b.Loop() {
			sc.Scan(&snap)
		}
	})
}
