// Package testload starts real child processes that hold a known amount of
// memory, so that memwho's figures can be checked against ground truth and
// so that benchmarks have thousands of processes to read.
//
// Children are the current executable run again with an environment
// variable set: the package's init function notices it, touches the memory
// the spec asks for, reports "ready" on a pipe and then blocks until the
// parent goes away. Any binary that imports this package (a test binary,
// tools/load) can therefore act as its own child; nothing has to be
// built or installed first.
//
// Sizes are in bytes and are rounded up to whole pages. Every page is
// touched before a child reports ready, so the memory is resident when
// Start returns.
package testload

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Spec is the memory each child of a group holds.
type Spec struct {
	// Private is anonymous private memory (MAP_PRIVATE|MAP_ANONYMOUS),
	// every page written with a non-zero byte so none is the zero page.
	Private int64
	// FileShared is the size of one regular file (created and unlinked by
	// Start) that every child of the group maps MAP_SHARED and reads page
	// by page: with n children each one's Pss share is FileShared/n.
	FileShared int64
	// MemfdShared is the size of one memfd (shmem) created by Start,
	// inherited by every child, mapped MAP_SHARED and read page by page:
	// each child's Pss share is MemfdShared/n.
	MemfdShared int64
	// Shmem is shared memory (a memfd) each child creates, writes and
	// maps MAP_SHARED by itself, so that it is charged to the child's
	// cgroup and PushToSwap can swap it out. Swapped out, it shows in
	// the child's smaps Swap but not in SwapPss, which counts only swap
	// entries in page tables.
	Shmem int64
	// COW is private memory that each child writes and then shares
	// copy-on-write with a grandchild it forks (see Group.COWPIDs): the
	// pair's Pss shares of it add up to COW, not 2*COW.
	COW int64
	// Cgroup, when set, is a cgroup directory (see NewMemCgroup) that each
	// child joins before touching any memory, so that the memory is
	// charged there and PushToSwap can reclaim it.
	Cgroup string
	// Dir is where the FileShared file is created; "" means os.TempDir().
	Dir string
	// THP is anonymous private memory the child asks to be backed by
	// transparent huge pages (MADV_HUGEPAGE, 2 MiB aligned) and writes:
	// whether it gets them depends on the host
	// (/sys/kernel/mm/transparent_hugepage) and on free memory.
	THP int64
	// Hugetlb is anonymous private memory from the huge page pool
	// (MAP_HUGETLB, 2 MiB pages), written; the pool must hold it
	// (vm.nr_hugepages) or the child fails to start.
	Hugetlb int64
	// ZeroRead is anonymous private memory the child only reads: every
	// page maps the shared zero page, which smaps counts nowhere.
	ZeroRead int64
	// FilePrivate is the size of a file each child creates (in Dir,
	// unlinked at once), maps MAP_PRIVATE and reads, then writes every
	// other page: half page cache, half its own anonymous copies.
	FilePrivate int64
	// Sparse is the size of a mapping of address space only (writable,
	// MAP_NORESERVE) in which each child writes one page per GiB: the
	// shape of a process that reserves a heap it barely uses.
	Sparse int64
	// ReservedHeld is the size of a reservation without access (PROT_NONE,
	// MAP_NORESERVE) holding one page: the child writes its first page
	// and then takes every access away, as an allocator that decommits
	// with mprotect does. Its page is resident in no mapping a reader
	// sees with access.
	ReservedHeld int64
	// Mappings is a number of separate read-only mappings of 1 GiB less
	// a page of address space each (MAP_NORESERVE, never touched), a
	// page apart so that they do not merge: a sparse address space of
	// many mappings, none of them large.
	Mappings int
	// Shuffle is the size of a block of private memory, written, that
	// the child moves (mremap) between two mappings of that size every
	// millisecond for as long as it runs: a process whose pages change
	// address while a reader goes through its address space.
	Shuffle int64
	// THPCOW is memory the child backs with transparent huge pages and
	// writes, shares with a grandchild it forks (Group.COWPIDs), and then
	// writes again at the first 4 KiB of each huge page: the child's huge
	// pages are split and that page copied, while the grandchild keeps
	// each mapped whole (by its page middle directory), all but that
	// page shared with the child.
	THPCOW int64
	// OwnText runs the children from a copy of the executable, so that
	// the pages of program text they map are not this process's too:
	// code this process runs for the first time (its garbage collector,
	// say) would otherwise map more of them and move the children's
	// Pss_File while they are measured.
	OwnText bool
	// LeaderExit makes each child's main thread exit once the memory is
	// touched, while another thread runs on and keeps the address space:
	// the thread-group leader is then a zombie with Threads above 1, and
	// /proc/PID shows no memory. Wait for it with WaitLeaderExited.
	LeaderExit bool
}

// childEnv carries the encoded Spec to a child; its presence is what makes
// a process a child.
const childEnv = "MEMWHO_TESTLOAD_CHILD"

// Fixed descriptor numbers in every child. Fixed slots keep the child's
// parsing trivial; unused slots are simply closed.
const (
	fdLifeline = 0 // read end of a pipe the parent never writes: EOF means the parent is gone
	fdReady    = 3 // write end of the shared ready pipe
	fdFile     = 4 // the FileShared file
	fdMemfd    = 5 // the MemfdShared memfd
)

// Group is a set of running children started by Start.
type Group struct {
	// PIDs are the children, in start order.
	PIDs []int
	// COWPIDs[i] is the grandchild that shares PIDs[i]'s COW memory, or
	// 0 when Spec.COW and Spec.THPCOW are 0.
	COWPIDs []int

	procs    []*os.Process
	pidfds   []int // pidfds of the grandchildren, -1 when none
	lifeline *os.File
	stopOnce sync.Once
}

// Start starts n children holding spec's memory and returns once every one
// of them has touched all of it. ctx bounds only the start: once Start has
// returned, the children run until Stop (or until this process dies: they
// get SIGKILL as parent-death signal and also exit when their lifeline pipe
// reaches EOF).
func Start(ctx context.Context, n int, spec Spec) (*Group, error) {
	if n < 1 {
		return nil, errors.New("testload: need at least one child")
	}
	if spec.Private < 0 || spec.FileShared < 0 || spec.MemfdShared < 0 || spec.COW < 0 || spec.Shmem < 0 ||
		spec.THP < 0 || spec.Hugetlb < 0 || spec.ZeroRead < 0 || spec.FilePrivate < 0 || spec.Sparse < 0 ||
		spec.ReservedHeld < 0 || spec.Mappings < 0 || spec.Shuffle < 0 || spec.THPCOW < 0 {
		return nil, errors.New("testload: negative size")
	}
	g := &Group{PIDs: make([]int, 0, n), COWPIDs: make([]int, n)}
	ok := false
	defer func() {
		if !ok {
			g.Stop()
		}
	}()

	// The lifeline's write end stays only in this process: when it dies,
	// by any means, every child's blocking read returns EOF.
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer lifeR.Close()
	g.lifeline = lifeW

	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	defer readyW.Close() // closed early below; the second Close is harmless

	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()

	files := []*os.File{fdLifeline: lifeR, 1: devnull, 2: os.Stderr, fdReady: readyW, fdFile: nil, fdMemfd: nil}
	if spec.FileShared > 0 {
		f, err := sharedFile(spec.Dir, spec.FileShared)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		files[fdFile] = f
	}
	if spec.MemfdShared > 0 {
		f, err := sharedMemfd(spec.MemfdShared)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		files[fdMemfd] = f
	}

	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("testload: %w", err)
	}
	if spec.OwnText {
		var remove func()
		if exe, remove, err = ownCopy(exe); err != nil {
			return nil, err
		}
		defer remove()
	}
	env := childEnviron(spec, false)
	for i := 0; i < n; i++ {
		p, err := os.StartProcess(exe, []string{exe}, &os.ProcAttr{
			Env:   env,
			Files: files,
			Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
		})
		if err != nil {
			return nil, fmt.Errorf("testload: start child %d of %d: %w", i+1, n, err)
		}
		g.procs = append(g.procs, p)
		g.PIDs = append(g.PIDs, p.Pid)
	}
	// Only the children may hold the write end now, so a child that
	// dies before reporting cannot leave the reader hanging forever.
	readyW.Close()

	index := make(map[int]int, n)
	for i, pid := range g.PIDs {
		index[pid] = i
	}
	msgs := make(chan string, 64)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(readyR)
		for sc.Scan() {
			msgs <- sc.Text()
		}
	}()

	ready := make([]bool, n)
	left := n
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for left > 0 {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("testload: %d of %d children not ready: %w", left, n, ctx.Err())
		case m, more := <-msgs:
			if !more {
				return nil, fmt.Errorf("testload: %d of %d children exited before ready", left, n)
			}
			f := strings.Fields(m)
			if len(f) < 2 {
				return nil, fmt.Errorf("testload: bad message from child: %q", m)
			}
			pid, _ := strconv.Atoi(f[1])
			i, known := index[pid]
			if !known {
				return nil, fmt.Errorf("testload: message from unknown pid: %q", m)
			}
			if f[0] != "ready" || len(f) != 3 {
				return nil, fmt.Errorf("testload: child %d: %s", pid, strings.Join(f[2:], " "))
			}
			gpid, _ := strconv.Atoi(f[2])
			g.COWPIDs[i] = gpid
			if !ready[i] {
				ready[i] = true
				left--
			}
		case <-tick.C:
			// A child that died early never reports; notice it
			// instead of waiting for ctx.
			for i, r := range ready {
				if !r && exited(g.PIDs[i]) {
					return nil, fmt.Errorf("testload: child %d exited before ready", g.PIDs[i])
				}
			}
		}
	}

	// Hold a pidfd per grandchild so that Stop can kill it without
	// racing pid reuse.
	g.pidfds = make([]int, n)
	for i, gpid := range g.COWPIDs {
		g.pidfds[i] = -1
		if gpid > 0 {
			fd, err := unix.PidfdOpen(gpid, 0)
			if err != nil {
				return nil, fmt.Errorf("testload: pidfd of grandchild %d: %w", gpid, err)
			}
			g.pidfds[i] = fd
		}
	}
	ok = true
	return g, nil
}

// exited reports whether the child pid has terminated, without reaping it.
func exited(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if err != nil {
		return errors.Is(err, unix.ECHILD)
	}
	// With WNOHANG and no state change Linux stores si_signo = 0; an
	// exited child gives SIGCHLD.
	return info.Signo == int32(unix.SIGCHLD)
}

// All returns the children followed by the grandchildren that exist.
func (g *Group) All() []int {
	all := append([]int(nil), g.PIDs...)
	for _, p := range g.COWPIDs {
		if p > 0 {
			all = append(all, p)
		}
	}
	return all
}

// Stop kills every child and grandchild and reaps the children. It is safe
// to call more than once and on a partly started group.
func (g *Group) Stop() error {
	g.stopOnce.Do(func() {
		for _, fd := range g.pidfds {
			if fd >= 0 {
				unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			}
		}
		if g.lifeline != nil {
			g.lifeline.Close()
		}
		for _, p := range g.procs {
			p.Kill()
		}
		for _, p := range g.procs {
			p.Wait()
		}
		// Grandchildren are reaped by their parent (or by init once it
		// is gone); wait until they have actually exited so a caller can
		// rely on the memory being released.
		deadline := time.Now().Add(5 * time.Second)
		for _, fd := range g.pidfds {
			if fd < 0 {
				continue
			}
			for time.Now().Before(deadline) {
				pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				n, err := unix.Poll(pfd, 100)
				if n > 0 || (err != nil && err != unix.EINTR) {
					break
				}
			}
			unix.Close(fd)
		}
	})
	return nil
}

// childEnviron is the complete environment of a child. GOMAXPROCS=1 and
// GOGC=off keep each child's own runtime footprint small and still: with
// no collections its heap never changes after the start, which keeps a
// baseline child comparable with a loaded one.
func childEnviron(spec Spec, exitAfterTouch bool) []string {
	var b strings.Builder
	fmt.Fprintf(&b, "private=%d,file=%d,memfd=%d,cow=%d,shmem=%d", spec.Private, spec.FileShared, spec.MemfdShared, spec.COW, spec.Shmem)
	for _, f := range []struct {
		k string
		v int64
	}{{"thp", spec.THP}, {"hugetlb", spec.Hugetlb}, {"zero", spec.ZeroRead}, {"fileprivate", spec.FilePrivate}, {"sparse", spec.Sparse},
		{"reservedheld", spec.ReservedHeld}, {"mappings", int64(spec.Mappings)}, {"shuffle", spec.Shuffle}, {"thpcow", spec.THPCOW}} {
		if f.v > 0 {
			fmt.Fprintf(&b, ",%s=%d", f.k, f.v)
		}
	}
	if exitAfterTouch {
		b.WriteString(",exit=1")
	}
	if spec.LeaderExit {
		b.WriteString(",leaderexit=1")
	}
	env := []string{childEnv + "=" + b.String(), "GOMAXPROCS=1", "GOGC=off"}
	if spec.Cgroup != "" {
		env = append(env, childEnv+"_CGROUP="+spec.Cgroup)
	}
	if spec.FilePrivate > 0 {
		dir := spec.Dir
		if dir == "" {
			dir = os.TempDir()
		}
		env = append(env, childEnv+"_DIR="+dir)
	}
	return env
}

// pattern fills shared objects; any non-zero byte would do.
const pattern = 0x5a

// sharedFile creates an unlinked regular file of size bytes, written so
// that it has no holes and its pages are in the page cache.
func sharedFile(dir string, size int64) (*os.File, error) {
	f, err := os.CreateTemp(dir, "memwho-testload-")
	if err != nil {
		return nil, fmt.Errorf("testload: %w", err)
	}
	// Unlinked at once: the children inherit the descriptor, and nothing
	// is left on disk whatever happens to this process.
	os.Remove(f.Name())
	if err := fill(f, size); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sharedMemfd creates a memfd of size bytes, fully written so its shmem
// pages exist before any child maps it.
func sharedMemfd(size int64) (*os.File, error) {
	fd, err := unix.MemfdCreate("memwho-testload", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("testload: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd:memwho-testload")
	if err := fill(f, size); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func fill(f *os.File, size int64) error {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = pattern
	}
	size = roundPage(size)
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return fmt.Errorf("testload: fill %s: %w", f.Name(), err)
		}
	}
	return nil
}

var pageSize = int64(os.Getpagesize())

func roundPage(n int64) int64 {
	return (n + pageSize - 1) / pageSize * pageSize
}

// ownCopy copies the executable exe into a new temporary directory and
// returns the copy's path and a function that removes the directory
// (running children keep their mapping of the copy).
func ownCopy(exe string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "memwho-testload-exe-")
	if err != nil {
		return "", nil, fmt.Errorf("testload: %w", err)
	}
	remove := func() { os.RemoveAll(dir) }
	src, err := os.Open(exe)
	if err != nil {
		remove()
		return "", nil, fmt.Errorf("testload: %w", err)
	}
	defer src.Close()
	dst := filepath.Join(dir, "child")
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err == nil {
		_, err = io.Copy(f, src)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		remove()
		return "", nil, fmt.Errorf("testload: copy %s: %w", exe, err)
	}
	return dst, remove, nil
}
