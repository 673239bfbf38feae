package agent

import (
	"bytes"
	"encoding/binary"
	"math"
	"runtime/metrics"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// selfStats renders the agent's own process figures under the standard
// names client_golang uses (process_*, go_goroutines), read from
// /proc/self without allocating.
type selfStats struct {
	mu      sync.Mutex
	buf     [4096]byte
	dirbuf  [8192]byte
	samples []metrics.Sample
	btime   float64 // boot time, seconds since the epoch
	// Counting descriptors reads /proc/self/fd, one entry per process
	// the engine follows: most of a scrape's own cost. The count is
	// refreshed at most once a second.
	fds     int
	fdsOK   bool
	fdsTime time.Time
}

// clockTicks is USER_HZ, the unit of the times in /proc/PID/stat: 100 on
// every Linux architecture Go supports (sysconf(_SC_CLK_TCK) needs cgo).
const clockTicks = 100

func (s *selfStats) render(ex *expo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.samples == nil {
		s.samples = []metrics.Sample{{Name: "/sched/goroutines:goroutines"}}
		if b, ok := s.read("/proc/stat\x00"); ok {
			if i := bytes.Index(b, []byte("\nbtime ")); i >= 0 {
				v, _ := parseUint(b[i+7:])
				s.btime = float64(v)
			}
		}
	}
	if b, ok := s.read("/proc/self/stat\x00"); ok {
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			// Fields from 3 (state) on, after the comm.
			f := b[i+2:]
			var utime, stime, start, vsize, rss uint64
			for n := 3; len(f) > 0 && n <= 24; n++ {
				v, rest := field(f)
				switch n {
				case 14:
					utime, _ = parseUint(v)
				case 15:
					stime, _ = parseUint(v)
				case 22:
					start, _ = parseUint(v)
				case 23:
					vsize, _ = parseUint(v)
				case 24:
					rss, _ = parseUint(v)
				}
				f = rest
			}
			ex.counterFloat("process_cpu_seconds_total", "Total user and system CPU time spent by the agent, in seconds.", float64(utime+stime)/clockTicks)
			ex.gaugeUint("process_resident_memory_bytes", "Resident memory size of the agent, in bytes.", rss*uint64(syscall.Getpagesize()))
			ex.gaugeUint("process_virtual_memory_bytes", "Virtual memory size of the agent, in bytes.", vsize)
			if s.btime > 0 {
				ex.gaugeFloat("process_start_time_seconds", "Start time of the agent since the Unix epoch, in seconds.", s.btime+float64(start)/clockTicks)
			}
		}
	}
	if now := time.Now(); now.Sub(s.fdsTime) >= time.Second {
		s.fds, s.fdsOK = s.countFDs()
		s.fdsTime = now
	}
	if s.fdsOK {
		ex.gaugeUint("process_open_fds", "Number of open file descriptors of the agent (one per sampled process is held by the engine), counted at most once a second.", uint64(s.fds))
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
		ex.gaugeUint("process_max_fds", "Maximum number of open file descriptors of the agent.", rl.Cur)
	}
	metrics.Read(s.samples)
	if v := s.samples[0].Value; v.Kind() == metrics.KindUint64 {
		ex.gaugeUint("go_goroutines", "Number of goroutines of the agent.", v.Uint64())
	}
}

// open opens path, which must end in NUL, without allocating (as
// syscall.Open would, to add the NUL).
func open(path string, flags int) (int, error) {
	fd, _, e := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(unsafe.StringData(path))),
		uintptr(flags|syscall.O_RDONLY|syscall.O_CLOEXEC), 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// atFDCWD is AT_FDCWD, as a uintptr-convertible value.
var atFDCWD = -100

// read reads a small file (path ends in NUL) whole into s.buf.
func (s *selfStats) read(path string) ([]byte, bool) {
	fd, err := open(path, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	n := 0
	for n < len(s.buf) {
		m, err := syscall.Read(fd, s.buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if m == 0 {
			break
		}
		n += m
	}
	return s.buf[:n], true
}

// countFDs counts the entries of /proc/self/fd.
func (s *selfStats) countFDs() (int, bool) {
	fd, err := open("/proc/self/fd\x00", syscall.O_DIRECTORY)
	if err != nil {
		return 0, false
	}
	defer syscall.Close(fd)
	// Since Linux 6.2 the directory's size is the number of open
	// descriptors: one fstat instead of listing them all, which matters
	// with the engine's held statm and smaps_rollup descriptors (2,000
	// and more at 1000 processes). Older kernels report 0.
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) == nil && st.Size > 0 {
		return int(st.Size) - 1, true
	}
	return s.listFDs(fd)
}

// listFDs counts the entries of the /proc/self/fd directory open as fd.
func (s *selfStats) listFDs(fd int) (int, bool) {
	n := 0
	for {
		m, err := syscall.ReadDirent(fd, s.dirbuf[:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, false
		}
		if m <= 0 {
			break
		}
		b := s.dirbuf[:m]
		// linux_dirent64: inode (8 bytes), offset (8), record length
		// (2), type (1), then the name with its NUL: a record is at
		// least 20 bytes, and b[19] is the name's first byte.
		for len(b) >= 20 {
			reclen := int(binary.NativeEndian.Uint16(b[16:]))
			if reclen < 20 || reclen > len(b) {
				break
			}
			if b[19] != '.' {
				n++
			}
			b = b[reclen:]
		}
	}
	// Leave out the descriptor of the directory being read.
	return n - 1, true
}

// field returns the first space-separated field of b and the rest.
func field(b []byte) ([]byte, []byte) {
	i := bytes.IndexByte(b, ' ')
	if i < 0 {
		return b, nil
	}
	return b[:i], b[i+1:]
}

// parseUint parses the decimal number at the start of b, which ends at
// the first byte that is not a digit. No digits, or a number past the
// largest uint64, is 0 and false: it wrapped before, "20000000000000000000"
// giving 1553255926290448384. (FuzzParseUint.)
func parseUint(b []byte) (uint64, bool) {
	var v uint64
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		d := uint64(b[n] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
		n++
	}
	return v, n > 0
}
