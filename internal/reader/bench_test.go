package reader

import (
	"testing"
	"time"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/sample"
)

// BenchmarkFrame is what the reader adds to a tick, on the processes of
// this machine's /proc read once: the snapshot's frame encoded in the
// reader and decoded by memwho into a snapshot with room (watch's), per
// tick; ns/proc divides by the processes. What the pipe's copies cost is
// in TestReaderInterval's ticks and the side-by-side figures of
// docs/architecture.md (scripts: memwho-pair).
func BenchmarkFrame(b *testing.B) {
	fs, err := proc.Open(proc.DefaultRoot)
	if err != nil {
		b.Skip(err)
	}
	defer fs.Close()
	eng, err := engine.New(engine.Options{FS: fs, OneShot: true, NeedUID: true, NeedCgroup: true})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	var snap sample.Snapshot
	if err := eng.Scan(&snap); err != nil {
		b.Fatal(err)
	}
	var (
		buf      []byte
		got      sample.Snapshot
		deferred []Deferred
	)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		buf = appendSnapshot(buf[:0], 1, nil, &snap)
		if deferred, err = parseSnapshot(buf[frameHeader:], &got, deferred); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/float64(len(snap.Procs)), "ns/proc")
	b.ReportMetric(float64(len(snap.Procs)), "procs")
	b.ReportMetric(float64(len(buf)), "frame-bytes")
}
