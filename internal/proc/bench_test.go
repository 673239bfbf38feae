package proc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/memwho/memwho/internal/proc/proctest"
)

// The benchmarks read a live sleeping child, so the kernel's cost is in
// every figure; BenchmarkRaw* is that cost alone (open, read, close into
// our buffer, no parsing), the floor the parsers are compared with.

func benchReader(b *testing.B) (*Reader, int) {
	fs := openLive(b)
	pid := startSleeper(b)
	r := fs.NewReader()
	if err := r.Open(pid); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Close)
	b.ReportAllocs()
	return r, pid
}

func BenchmarkRawStatus(b *testing.B) {
	r, _ := benchReader(b)
	for b.Loop() {
		r.ReadFile("status\x00")
	}
}

func BenchmarkStatus(b *testing.B) {
	r, _ := benchReader(b)
	var st Status
	for b.Loop() {
		r.Status(&st)
	}
}

func BenchmarkRawSmapsRollup(b *testing.B) {
	r, _ := benchReader(b)
	for b.Loop() {
		r.ReadFile("smaps_rollup\x00")
	}
}

func BenchmarkSmapsRollup(b *testing.B) {
	r, _ := benchReader(b)
	var ru Rollup
	for b.Loop() {
		r.SmapsRollup(&ru)
	}
}

func BenchmarkSmaps(b *testing.B) {
	r, _ := benchReader(b)
	var ru Rollup
	for b.Loop() {
		r.Smaps(&ru)
	}
}

func BenchmarkStat(b *testing.B) {
	r, _ := benchReader(b)
	var st Stat
	for b.Loop() {
		r.Stat(&st)
	}
}

func BenchmarkExe(b *testing.B) {
	r, _ := benchReader(b)
	link := make([]byte, 0, 4096)
	for b.Loop() {
		r.Exe(link)
	}
}

func BenchmarkOpenClose(b *testing.B) {
	r, pid := benchReader(b)
	for b.Loop() {
		r.Open(pid)
		r.Close()
	}
}

// BenchmarkOSReadFileStatus is what the usual os.ReadFile costs, for
// comparison.
func BenchmarkOSReadFileStatus(b *testing.B) {
	_, pid := benchReader(b)
	p := "/proc/" + itoa(pid) + "/status"
	for b.Loop() {
		os.ReadFile(p)
	}
}

// Parser-only benchmarks on fixed bytes, a process of the basic fixture
// captured from a 6.18 kernel: the same input every run, so benchstat can
// compare two versions of a parser.
func fixtureBytes(b *testing.B, name string) []byte {
	data, err := os.ReadFile(filepath.Join(proctest.Root(b, "testdata/basic.txtar"), name))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	return data
}

func BenchmarkParseRollup(b *testing.B) {
	data := fixtureBytes(b, "6571/smaps_rollup")
	var ru Rollup
	if err := ParseRollup(data, &ru); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		ParseRollup(data, &ru)
	}
}

// BenchmarkParseSmaps is the per-VMA fallback for kernels without
// smaps_rollup: one process's smaps, 338 lines.
func BenchmarkParseSmaps(b *testing.B) {
	data := fixtureBytes(b, "6571/smaps")
	var ru Rollup
	if err := ParseRollup(data, &ru); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		ParseRollup(data, &ru)
	}
}

func BenchmarkParseStatus(b *testing.B) {
	data := fixtureBytes(b, "6571/status")
	var st Status
	if err := ParseStatus(data, &st); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		ParseStatus(data, &st)
	}
}

func BenchmarkParseMeminfo(b *testing.B) {
	data := fixtureBytes(b, "meminfo")
	var m Meminfo
	if err := ParseMeminfo(data, &m); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		ParseMeminfo(data, &m)
	}
}

func BenchmarkRawComm(b *testing.B) {
	r, _ := benchReader(b)
	for b.Loop() {
		r.ReadFile("comm\x00")
	}
}

func BenchmarkRawStat(b *testing.B) {
	r, _ := benchReader(b)
	for b.Loop() {
		r.ReadFile("stat\x00")
	}
}

// BenchmarkRawCgroup and BenchmarkCgroupPaths are the read a snapshot
// adds for --by unit, container and cgroup (docs/snapshot.md).
func BenchmarkRawCgroup(b *testing.B) {
	r, _ := benchReader(b)
	for b.Loop() {
		r.ReadFile("cgroup\x00")
	}
}

func BenchmarkCgroupPaths(b *testing.B) {
	r, _ := benchReader(b)
	for b.Loop() {
		r.CgroupPaths()
	}
}
