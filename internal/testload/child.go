package testload

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// init turns this process into a child when the parent asked for one. It
// runs during package initialisation, before any main or TestMain, so that
// a test binary or a command needs no wiring to serve as its own child;
// without the environment variable it does nothing.
func init() {
	enc, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	os.Exit(runChild(enc, os.Getenv(childEnv+"_CGROUP")))
}

// childSpec is what a child decodes from its environment.
type childSpec struct {
	private, file, memfd, cow, shmem int64
	thp, hugetlb, zero, filePrivate  int64
	sparse                           int64
	exit, leaderExit                 bool
}

func parseChildSpec(enc string) (childSpec, error) {
	var c childSpec
	for _, kv := range strings.Split(enc, ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return c, fmt.Errorf("bad field %q", kv)
		}
		switch k {
		case "private":
			c.private = n
		case "file":
			c.file = n
		case "memfd":
			c.memfd = n
		case "cow":
			c.cow = n
		case "shmem":
			c.shmem = n
		case "thp":
			c.thp = n
		case "hugetlb":
			c.hugetlb = n
		case "zero":
			c.zero = n
		case "fileprivate":
			c.filePrivate = n
		case "sparse":
			c.sparse = n
		case "exit":
			c.exit = n != 0
		case "leaderexit":
			c.leaderExit = n != 0
		default:
			return c, fmt.Errorf("unknown field %q", k)
		}
	}
	return c, nil
}

func runChild(enc, cgroup string) int {
	pid := os.Getpid()
	fail := func(err error) int {
		// The ready pipe is how the parent learns why a child gave up.
		unix.Write(fdReady, []byte(fmt.Sprintf("error %d %v\n", pid, err)))
		return 1
	}
	c, err := parseChildSpec(enc)
	if err != nil {
		return fail(err)
	}
	// Transparent huge pages are off for this process: khugepaged could
	// otherwise collapse a partly used runtime arena into a 2 MiB page at
	// any moment and make the child's figures drift from its baseline.
	unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0)

	if cgroup != "" {
		// Join before touching anything: a cgroup v1 memory controller
		// does not move existing charges with the task.
		if err := os.WriteFile(cgroup+"/cgroup.procs", []byte(strconv.Itoa(pid)), 0); err != nil {
			return fail(err)
		}
	}
	// The COW fork comes first: the grandchild shares everything the
	// child has at that moment, and only the COW memory (and the small
	// runtime state) should be shared; the mappings made afterwards stay
	// the child's own.
	gpid := 0
	if c.cow > 0 {
		if err := dirtyAnon(c.cow); err != nil {
			return fail(err)
		}
		p, errno := forkSleeper(uintptr(pid))
		if errno != 0 {
			return fail(fmt.Errorf("clone: %w", errno))
		}
		gpid = int(p)
		// Reap the grandchild when Stop kills it, so it does not linger
		// as a zombie while this child still lives.
		go unix.Wait4(gpid, nil, 0, nil)
	}
	if c.private > 0 {
		if err := dirtyAnon(c.private); err != nil {
			return fail(err)
		}
	}
	if c.shmem > 0 {
		if err := dirtyShmem(c.shmem); err != nil {
			return fail(err)
		}
	}
	if c.thp > 0 {
		if err := dirtyTHP(c.thp); err != nil {
			return fail(err)
		}
	}
	if c.hugetlb > 0 {
		if err := dirtyHugetlb(c.hugetlb); err != nil {
			return fail(err)
		}
	}
	if c.zero > 0 {
		if err := readZero(c.zero); err != nil {
			return fail(err)
		}
	}
	if c.sparse > 0 {
		b, err := unix.Mmap(-1, 0, int(roundPage(c.sparse)), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
		if err != nil {
			return fail(fmt.Errorf("mmap sparse %d: %w", c.sparse, err))
		}
		for i := 0; i < len(b); i += 1 << 30 {
			b[i] = pattern
		}
	}
	if c.filePrivate > 0 {
		if err := privateFile(os.Getenv(childEnv+"_DIR"), c.filePrivate); err != nil {
			return fail(err)
		}
	}
	if c.file > 0 {
		if err := readShared(fdFile, c.file); err != nil {
			return fail(err)
		}
	}
	if c.memfd > 0 {
		if err := readShared(fdMemfd, c.memfd); err != nil {
			return fail(err)
		}
	}
	if c.exit {
		return 0
	}
	// The descriptors of the shared objects are no longer needed: the
	// mappings hold the objects.
	unix.Close(fdFile)
	unix.Close(fdMemfd)
	var started chan struct{}
	if c.leaderExit {
		// Another thread takes over the wait on the lifeline before the
		// main thread goes.
		started = make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(started)
			os.Exit(waitLifeline())
		}()
		<-started
	}
	if _, err := unix.Write(fdReady, []byte(fmt.Sprintf("ready %d %d\n", pid, gpid))); err != nil {
		return 1
	}
	unix.Close(fdReady)
	if c.leaderExit {
		// Package initialisation runs on the main goroutine locked to
		// the main thread, so this exit(2) (not exit_group) ends the
		// thread-group leader alone. syscall.Syscall rather than
		// RawSyscall: the runtime then hands this thread's P to the
		// waiting thread once the leader is gone.
		syscall.Syscall(syscall.SYS_EXIT, 0, 0, 0)
	}
	return waitLifeline()
}

// waitLifeline blocks until the parent closes the lifeline or dies and
// returns the child's exit code.
func waitLifeline() int {

	// A blocking read keeps the runtime from declaring a deadlock and
	// costs nothing.
	var b [1]byte
	for {
		n, err := unix.Read(fdLifeline, b[:])
		if err == unix.EINTR {
			continue
		}
		if n <= 0 || err != nil {
			return 0
		}
	}
}

// dirtyAnon maps size bytes of private anonymous memory and writes a
// non-zero byte to every page, so each page is a real private dirty page
// (a read would map the shared zero page instead). The mapping is never
// unmapped: it lives as long as the child.
func dirtyAnon(size int64) error {
	b, err := unix.Mmap(-1, 0, int(roundPage(size)), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("mmap private %d: %w", size, err)
	}
	for i := 0; i < len(b); i += int(pageSize) {
		b[i] = pattern
	}
	return nil
}

// dirtyShmem creates a memfd of size bytes, maps it MAP_SHARED and writes
// every page: shmem charged to this process's cgroup. The mapping keeps
// the memfd alive; its descriptor is closed.
func dirtyShmem(size int64) error {
	fd, err := unix.MemfdCreate("memwho-testload-shmem", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("memfd_create: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, roundPage(size)); err != nil {
		return fmt.Errorf("ftruncate memfd: %w", err)
	}
	b, err := unix.Mmap(fd, 0, int(roundPage(size)), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap shmem %d: %w", size, err)
	}
	for i := 0; i < len(b); i += int(pageSize) {
		b[i] = pattern
	}
	return nil
}

// readShared maps the inherited object at fd MAP_SHARED and reads every
// page, which maps the page-cache or shmem pages the parent filled.
func readShared(fd int, size int64) error {
	b, err := unix.Mmap(fd, 0, int(roundPage(size)), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap shared fd %d: %w", fd, err)
	}
	var s byte
	for i := 0; i < len(b); i += int(pageSize) {
		s += b[i]
	}
	// KeepAlive keeps the page reads from being optimised away.
	runtime.KeepAlive(s)
	return nil
}

// hugeSize is the size of a transparent or hugetlb huge page on x86-64.
const hugeSize = 2 << 20

// dirtyTHP maps size bytes (rounded up to 2 MiB) of anonymous memory at a
// 2 MiB boundary, asks for transparent huge pages and writes every page.
// The child turned THP off for itself at start; it turns it on again.
func dirtyTHP(size int64) error {
	unix.Prctl(unix.PR_SET_THP_DISABLE, 0, 0, 0, 0)
	n := int((size + hugeSize - 1) / hugeSize * hugeSize)
	b, err := unix.Mmap(-1, 0, n+hugeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("mmap thp %d: %w", size, err)
	}
	off := 0
	if a := int(uintptr(unsafe.Pointer(&b[0])) % hugeSize); a != 0 {
		off = hugeSize - a
	}
	b = b[off : off+n]
	if err := unix.Madvise(b, unix.MADV_HUGEPAGE); err != nil {
		return fmt.Errorf("madvise hugepage: %w", err)
	}
	for i := 0; i < len(b); i += int(pageSize) {
		b[i] = pattern
	}
	return nil
}

// dirtyHugetlb maps size bytes (rounded up to 2 MiB) from the hugetlb pool
// and writes every huge page.
func dirtyHugetlb(size int64) error {
	n := int((size + hugeSize - 1) / hugeSize * hugeSize)
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_HUGETLB)
	if err != nil {
		return fmt.Errorf("mmap hugetlb %d: %w", size, err)
	}
	for i := 0; i < len(b); i += hugeSize {
		b[i] = pattern
	}
	return nil
}

// readZero maps size bytes of anonymous memory and reads every page,
// which maps the zero page there.
func readZero(size int64) error {
	b, err := unix.Mmap(-1, 0, int(roundPage(size)), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("mmap zero %d: %w", size, err)
	}
	var s byte
	for i := 0; i < len(b); i += int(pageSize) {
		s += b[i]
	}
	runtime.KeepAlive(s)
	return nil
}

// privateFile creates a file of size bytes in dir (unlinked at once),
// maps it MAP_PRIVATE, reads every page and writes every other one.
func privateFile(dir string, size int64) error {
	f, err := os.CreateTemp(dir, "memwho-testload-private-")
	if err != nil {
		return err
	}
	os.Remove(f.Name())
	defer f.Close()
	if err := fill(f, size); err != nil {
		return err
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(roundPage(size)), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		return fmt.Errorf("mmap private file %d: %w", size, err)
	}
	var s byte
	for i := 0; i < len(b); i += int(pageSize) {
		s += b[i]
	}
	runtime.KeepAlive(s)
	for i := 0; i < len(b); i += 2 * int(pageSize) {
		b[i] = pattern + 1
	}
	return nil
}
