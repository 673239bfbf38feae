package snapshot

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

// The goal (docs/snapshot.md): 3000 processes encode and decode in well
// under 2 ms each. The machine these run on is often shared: cpu-ns/op,
// the process's CPU time (garbage collection included), is steadier
// than ns/op there.

func BenchmarkEncode3000(b *testing.B) {
	s := synthetic(3000)
	buf := Encode(nil, s)
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		buf = Encode(buf[:0], s)
	}
	reportCPU(b, cpu)
	b.ReportMetric(float64(len(buf)), "msg-bytes")
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, fileLevel)
	w.Write(buf)
	w.Close()
	b.ReportMetric(float64(z.Len()), "gzip-bytes")
}

func BenchmarkDecode3000(b *testing.B) {
	buf := Encode(nil, synthetic(3000))
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		// A fresh snapshot each time, as the one-shot client decodes.
		var s sample.Snapshot
		if err := Decode(buf, &s); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

func BenchmarkDecode3000Reuse(b *testing.B) {
	buf := Encode(nil, synthetic(3000))
	var s sample.Snapshot
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		if err := Decode(buf, &s); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkWriteFile3000 is what `memwho snapshot -o FILE` does after
// its walk: encode, compress (at fileLevel) and write. The gzip levels
// beside it are the choice fileLevel made (docs/snapshot.md).
func BenchmarkWriteFile3000(b *testing.B) {
	s := synthetic(3000)
	taken := time.Unix(1795000000, 0)
	b.Run("file", func(b *testing.B) {
		var out bytes.Buffer
		b.ReportAllocs()
		cpu := cpuTime()
		for b.Loop() {
			out.Reset()
			if err := WriteFile(&out, s, taken); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, cpu)
		b.ReportMetric(float64(out.Len()), "file-bytes")
	})
	msg := EncodeMeta(nil, s, Meta{Taken: taken})
	for _, level := range []int{gzip.BestSpeed, gzip.DefaultCompression, gzip.BestCompression} {
		b.Run(fmt.Sprintf("gzip-level-%d", level), func(b *testing.B) {
			var out bytes.Buffer
			cpu := cpuTime()
			for b.Loop() {
				out.Reset()
				zw, _ := gzip.NewWriterLevel(&out, level)
				zw.Write(msg)
				zw.Close()
			}
			reportCPU(b, cpu)
			b.ReportMetric(float64(out.Len()), "gzip-bytes")
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, since time.Duration) {
	b.ReportMetric(float64(cpuTime()-since)/float64(b.N), "cpu-ns/op")
}
