package sockdiag

import (
	"os"
	"testing"

	"github.com/memwho/memwho/internal/proc/fstest"
)

// BenchmarkEstablishedEmpty is the fixed cost of a dump, what an engine
// tick pays on a host with few sockets: the kernel walks its whole hash
// table whatever it holds. Run it alone (-bench EstablishedEmpty): the
// other benchmarks leave 10,000 sockets open.
func BenchmarkEstablishedEmpty(b *testing.B) {
	d, err := Open()
	if err != nil {
		b.Skip(err)
	}
	defer d.Close()
	var set InodeSet
	for b.Loop() {
		set.Reset()
		if err := d.Established(&set); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(set.Len()), "sockets")
}

// BenchmarkSocketsSelf reads this process's fd table, as a tick does for
// a process it revisits.
func BenchmarkSocketsSelf(b *testing.B) {
	fs := fstest.Open(b, "/proc")
	c := NewFDCounter(fs)
	var dst []uint64
	pid := os.Getpid()
	for b.Loop() {
		dst, _ = c.Sockets(pid, dst[:0])
	}
}

// BenchmarkSizeSelf is the statx that tells a tick whether a process's
// descriptor count moved.
func BenchmarkSizeSelf(b *testing.B) {
	fs := fstest.Open(b, "/proc")
	c := NewFDCounter(fs)
	pid := os.Getpid()
	for b.Loop() {
		c.Size(pid)
	}
}
