package sockdiag

import (
	"github.com/memwho/memwho/internal/proc/fstest"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
)

// benchPairs is how many loopback connections the benchmarks open: each
// is two ESTABLISHED sockets (the dialled end and the accepted one), all
// held by this process, so 5,000 pairs are 10,000 sockets.
const benchPairs = 5000

var (
	benchOnce  sync.Once
	benchConns []net.Conn
	benchErr   error
)

// openPairs opens benchPairs loopback connections once per test binary,
// raising RLIMIT_NOFILE to its hard limit first.
func openPairs(b *testing.B) {
	benchOnce.Do(func() {
		var rl syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < rl.Max {
			rl.Cur = rl.Max
			syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
		}
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			benchErr = err
			return
		}
		defer ln.Close()
		for range benchPairs {
			c, err := net.Dial("tcp4", ln.Addr().String())
			if err != nil {
				benchErr = err
				return
			}
			s, err := ln.Accept()
			if err != nil {
				benchErr = err
				return
			}
			benchConns = append(benchConns, c, s)
		}
	})
	if benchErr != nil {
		b.Skipf("cannot open %d loopback connections: %v", benchPairs, benchErr)
	}
}

// BenchmarkEstablished lists 10,000 ESTABLISHED sockets three ways:
// sock_diag, the fixed-width /proc/net/tcp parser, and a reader that
// splits /proc/net/tcp into fields (the usual way, as the rival).
func BenchmarkEstablished(b *testing.B) {
	openPairs(b)
	b.Run("sock_diag", func(b *testing.B) {
		d, err := Open()
		if err != nil {
			b.Skip(err)
		}
		defer d.Close()
		var set InodeSet
		b.ReportAllocs()
		for b.Loop() {
			set.Reset()
			if err := d.Established(&set); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(set.Len()), "sockets")
	})
	b.Run("proc-net-fixed", func(b *testing.B) {
		procFS := fstest.Open(b, "/proc")
		var set InodeSet
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			set.Reset()
			var err error
			if buf, err = ReadProcNet(procFS, &set, buf); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(set.Len()), "sockets")
	})
	b.Run("proc-net-fields", func(b *testing.B) {
		var n int
		b.ReportAllocs()
		for b.Loop() {
			n = 0
			for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
				data, err := os.ReadFile(f)
				if err != nil {
					b.Fatal(err)
				}
				set, ok := referenceProcNet(data)
				if !ok {
					b.Fatal("reference parser failed")
				}
				n += len(set)
			}
		}
		b.ReportMetric(float64(n), "sockets")
	})
}

// BenchmarkCountFDs maps the 10,000 sockets to this process through its
// /proc/self/fd links: the step that dominates a --conns tick.
func BenchmarkCountFDs(b *testing.B) {
	openPairs(b)
	d, err := Open()
	if err != nil {
		b.Skip(err)
	}
	defer d.Close()
	var set InodeSet
	set.Reset()
	if err := d.Established(&set); err != nil {
		b.Fatal(err)
	}
	fc := NewFDCounter(fstest.Open(b, "/proc"))
	pid := os.Getpid()
	var n uint32
	b.ReportAllocs()
	for b.Loop() {
		if n, err = fc.Count(pid, &set); err != nil {
			b.Fatal(err)
		}
	}
	if n < 2*benchPairs {
		b.Fatalf("counted %d, want >= %d", n, 2*benchPairs)
	}
	b.ReportMetric(float64(n), "sockets")
}
