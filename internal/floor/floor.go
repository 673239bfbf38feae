// Package floor is memwho-floor, the lower bound memwho's scan is
// measured against (see tools/floor for what each flag reads). It is a
// package so that the same reads can also run inside memwho's own binary
// (cmd/memwho built with -tags floorpad): the difference between the two
// is what the size of memwho's binary alone costs (docs/performance.md).
package floor

import (
	"bufio"
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Main runs memwho-floor with args (without the program name) and returns
// its exit status.
func Main(args []string) int {
	fl := flag.NewFlagSet("memwho-floor", flag.ContinueOnError)
	root := fl.String("root", "/proc", "procfs mount point")
	status := fl.Bool("status", false, "read /proc/PID/status instead of smaps_rollup")
	withNames := fl.Bool("names", false, "also read comm and the exe link of every process")
	withSnapshot := fl.Bool("snapshot", false, "also read status, cgroup and the exe link of every process")
	parallel := fl.Int("parallel", 1, "number of goroutines reading files")
	startup := fl.Bool("startup", false, "read /proc/self/stat and exit (the start-up floor)")
	report := fl.Bool("report", false, "also parse Pss and SwapPss, group by comm and print a table sorted by RAM: the least a Go report can cost (implies -names -held)")
	held := fl.Bool("held", false, "open each /proc/PID directory once and read its files relative to it, as memwho does so that a reused PID cannot mix two processes")
	statm := fl.Bool("statm", false, "also read statm of every process first: the size check by which a report reads a large process page by page instead of stalling it")
	if err := fl.Parse(args); err == flag.ErrHelp {
		return 0
	} else if err != nil {
		return 2
	}
	if *report {
		*withNames, *held = true, true
	}
	if *startup {
		var buf [1024]byte
		fd, err := unix.Open("/proc/self/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 1
		}
		n, _ := unix.Read(fd, buf[:])
		unix.Close(fd)
		if n <= 0 {
			return 1
		}
		return 0
	}
	file := "smaps_rollup"
	if *status {
		file = "status"
	}

	d, err := os.Open(*root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "memwho-floor: %v\n", err)
		return 1
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "memwho-floor: %v\n", err)
		return 1
	}
	var pids []int
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}

	groups := make([]map[string]*group, max(*parallel, 1))
	var (
		next                 atomic.Int64
		files, bytes, failed atomic.Int64
		wg                   sync.WaitGroup
	)
	for w := range max(*parallel, 1) {
		wg.Add(1)
		go func() {
			var byName map[string]*group
			if *report {
				byName = make(map[string]*group)
				groups[w] = byName
			}
			defer wg.Done()
			r := reader{buf: make([]byte, 16<<10)}
			var nf, nb, nfail int64
			for {
				i := int(next.Add(1) - 1)
				if i >= len(pids) {
					break
				}
				if *held {
					if err := r.openDir(*root, pids[i]); err != nil {
						nfail++
						continue
					}
				}
				if *statm {
					if n, err := r.read(*root, pids[i], "statm"); err == nil {
						nb += int64(n)
					}
				}
				n, err := r.read(*root, pids[i], file)
				if err != nil {
					r.closeDir()
					nfail++
					continue
				}
				nf++
				nb += int64(n)
				var pss, swap int64
				if *report {
					pss, swap = rollupKiB(r.buf[:n])
				}
				var also []string
				switch {
				case *withSnapshot:
					also = []string{"status", "cgroup"}
				case *withNames:
					also = []string{"comm"}
				}
				for _, f := range also {
					if n, err := r.read(*root, pids[i], f); err == nil {
						nb += int64(n)
						if *report && f == "comm" {
							name := r.buf[:n]
							if len(name) > 0 && name[n-1] == '\n' {
								name = name[:n-1]
							}
							g := byName[string(name)]
							if g == nil {
								g = &group{name: string(name)}
								byName[g.name] = g
							}
							g.pss += pss
							g.swap += swap
							g.count++
						}
					}
				}
				if *withNames || *withSnapshot {
					if n, err := r.readlink(*root, pids[i], "exe"); err == nil {
						nb += int64(n)
					}
				}
				r.closeDir()
			}
			files.Add(nf)
			bytes.Add(nb)
			failed.Add(nfail)
		}()
	}
	wg.Wait()
	if *report {
		printReport(groups)
	}
	fmt.Printf("%d processes: read %d %s files, %d bytes; %d gone or unreadable\n",
		len(pids), files.Load(), file, bytes.Load(), failed.Load())
	return 0
}

// reader reads whole files into one buffer, reusing the path buffer too,
// so the loop allocates nothing. With dir set (-held) it reads relative to
// that process directory instead of by path from the root.
type reader struct {
	buf  []byte
	path []byte
	dir  int
}

func (r *reader) openDir(root string, pid int) error {
	r.setPath(root, pid, "")
	fd, err := unix.Open(string(r.path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	r.dir = fd
	return nil
}

func (r *reader) closeDir() {
	if r.dir > 0 {
		unix.Close(r.dir)
		r.dir = 0
	}
}

func (r *reader) setPath(root string, pid int, file string) {
	r.path = append(r.path[:0], root...)
	r.path = append(r.path, '/')
	r.path = strconv.AppendInt(r.path, int64(pid), 10)
	r.path = append(r.path, '/')
	r.path = append(r.path, file...)
}

func (r *reader) readlink(root string, pid int, file string) (int, error) {
	if r.dir > 0 {
		return unix.Readlinkat(r.dir, file, r.buf)
	}
	r.setPath(root, pid, file)
	return unix.Readlink(string(r.path), r.buf)
}

func (r *reader) read(root string, pid int, file string) (int, error) {
	var fd int
	var err error
	if r.dir > 0 {
		fd, err = unix.Openat(r.dir, file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	} else {
		r.setPath(root, pid, file)
		fd, err = unix.Open(string(r.path), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	total := 0
	for {
		if total == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		n, err := unix.Read(fd, r.buf[total:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return total, err
		}
		if n == 0 {
			return total, nil
		}
		total += n
	}
}

// group is one line of -report: a comm's processes, PSS and SwapPss in KiB.
type group struct {
	name      string
	pss, swap int64
	count     int
}

// rollupKiB returns the Pss and SwapPss lines of a smaps_rollup, in KiB.
func rollupKiB(b []byte) (pss, swap int64) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		var dst *int64
		switch {
		case bytes.HasPrefix(line, []byte("Pss:")):
			dst = &pss
		case bytes.HasPrefix(line, []byte("SwapPss:")):
			dst = &swap
		default:
			continue
		}
		var v int64
		for _, c := range line {
			if c >= '0' && c <= '9' {
				v = v*10 + int64(c-'0')
			}
		}
		*dst = v
	}
	return pss, swap
}

// printReport merges the workers' groups and prints them by RAM, largest
// first, with the totals: a report's least work after reading.
func printReport(workers []map[string]*group) {
	merged := make(map[string]*group)
	for _, m := range workers {
		for k, g := range m {
			if t := merged[k]; t != nil {
				t.pss += g.pss
				t.swap += g.swap
				t.count += g.count
			} else {
				merged[k] = g
			}
		}
	}
	list := make([]*group, 0, len(merged))
	for _, g := range merged {
		list = append(list, g)
	}
	slices.SortFunc(list, func(a, b *group) int { return cmp.Compare(b.pss, a.pss) })
	w := bufio.NewWriter(os.Stdout)
	var line []byte
	var pss, swap int64
	for _, g := range list {
		line = appendKiB(line[:0], g.pss)
		line = appendKiB(line, g.swap)
		line = append(line, "  "...)
		line = append(line, g.name...)
		line = append(line, " ("...)
		line = strconv.AppendInt(line, int64(g.count), 10)
		line = append(line, ")\n"...)
		w.Write(line)
		pss += g.pss
		swap += g.swap
	}
	w.Write(append(appendKiB(appendKiB(line[:0], pss), swap), "  total\n"...))
	w.Flush()
}

// appendKiB appends n KiB as MiB with one decimal, right-aligned in 10.
func appendKiB(b []byte, kib int64) []byte {
	var num [24]byte
	s := strconv.AppendInt(num[:0], kib*10/1024/10, 10)
	s = append(s, '.')
	s = strconv.AppendInt(s, kib*10/1024%10, 10)
	s = append(s, " MiB"...)
	for i := len(s); i < 14; i++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}
