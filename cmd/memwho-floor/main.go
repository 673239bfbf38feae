// Command memwho-floor is the lower bound memwho's scan is measured
// against: it lists /proc and reads every /proc/PID/smaps_rollup (or, with
// -status, every /proc/PID/status, the floor for memwho --fast) with bare
// open/read/close into one reused buffer, parsing nothing. Almost all of the
// cost of reading smaps_rollup is the kernel's page-table walk, which no
// reader can avoid, so memwho's time over this floor is its own overhead.
//
//	memwho-floor [-status] [-names | -snapshot] [-parallel N] [-root /proc]
//	memwho-floor -startup
//
// With -names it also reads each process's comm and exe link, the two
// reads a report by program cannot do without: the floor of a default
// report, where plain -status and smaps_rollup are the floors of reading
// figures alone. With -snapshot it reads status, cgroup and the exe link
// instead: what a snapshot file holds for every grouping (the uid and the
// task name from status, the cgroups), the floor of memwho snapshot.
//
// With -startup it reads one file, /proc/self/stat, and exits: a minimal
// static Go program that reads /proc, the floor of memwho's start-up.
//
// It prints how many files and bytes it read and how many processes were
// gone or unreadable.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

func main() {
	root := flag.String("root", "/proc", "procfs mount point")
	status := flag.Bool("status", false, "read /proc/PID/status instead of smaps_rollup")
	withNames := flag.Bool("names", false, "also read comm and the exe link of every process")
	withSnapshot := flag.Bool("snapshot", false, "also read status, cgroup and the exe link of every process")
	parallel := flag.Int("parallel", 1, "number of goroutines reading files")
	startup := flag.Bool("startup", false, "read /proc/self/stat and exit (the start-up floor)")
	held := flag.Bool("held", false, "open each /proc/PID directory once and read its files relative to it, as memwho does so that a reused PID cannot mix two processes")
	flag.Parse()
	if *startup {
		var buf [1024]byte
		fd, err := unix.Open("/proc/self/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			os.Exit(1)
		}
		n, _ := unix.Read(fd, buf[:])
		unix.Close(fd)
		if n <= 0 {
			os.Exit(1)
		}
		return
	}
	file := "smaps_rollup"
	if *status {
		file = "status"
	}

	d, err := os.Open(*root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "memwho-floor: %v\n", err)
		os.Exit(1)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "memwho-floor: %v\n", err)
		os.Exit(1)
	}
	var pids []int
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}

	var (
		next                 atomic.Int64
		files, bytes, failed atomic.Int64
		wg                   sync.WaitGroup
	)
	for range max(*parallel, 1) {
		wg.Add(1)
		go func() {
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
				n, err := r.read(*root, pids[i], file)
				if err != nil {
					r.closeDir()
					nfail++
					continue
				}
				nf++
				nb += int64(n)
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
	fmt.Printf("%d processes: read %d %s files, %d bytes; %d gone or unreadable\n",
		len(pids), files.Load(), file, bytes.Load(), failed.Load())
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
