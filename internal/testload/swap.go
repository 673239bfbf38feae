package testload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// swapDir holds swapfiles: it must be on a real disk filesystem, because
// swapon refuses files on tmpfs and overlayfs, and /tmp is often tmpfs.
const swapDir = "/var/tmp"

// swapLock serialises the tests (of any package, in any process) that
// enable swap or push memory to it: one test's cleanup must not swapoff
// the file another test is still measuring.
const swapLock = "/var/tmp/memwho-testload-swap.lock"

// holdSwapLock takes swapLock until the test ends.
func holdSwapLock(t testing.TB) {
	t.Helper()
	lock, err := os.OpenFile(swapLock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatalf("swap lock: %v", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		lock.Close()
		t.Fatalf("swap lock: %v", err)
	}
	t.Cleanup(func() { lock.Close() }) // closing releases the flock
}

// EnsureSwap makes sure at least size bytes of swap are free, creating a
// swapfile under /var/tmp when there is not enough, and removes it when the
// test ends. It holds an exclusive lock until then, so swap-using tests run
// one at a time. It skips the test when not root or when mkswap, swapon or
// swapoff are missing, and fails it when swapon fails on a system that has
// the tools.
func EnsureSwap(t testing.TB, size int64) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: enabling swap needs root")
	}
	holdSwapLock(t)

	swaps, err := readSwaps()
	if err != nil {
		t.Fatalf("%v", err)
	}
	tools := map[string]string{}
	for _, name := range []string{"mkswap", "swapon", "swapoff"} {
		p, err := lookSbin(name)
		if err != nil {
			t.Skipf("skipping: %s not found (util-linux): %v", name, err)
		}
		tools[name] = p
	}
	var free int64
	for _, s := range swaps {
		// Holding the lock means no other test is using a memwho
		// swapfile: one still listed was left by a killed run.
		if strings.Contains(s.path, "/memwho-swap-") {
			if out, err := exec.Command(tools["swapoff"], s.path).CombinedOutput(); err != nil {
				t.Logf("swapoff stale %s: %v: %s", s.path, err, out)
				free += s.size - s.used
				continue
			}
			os.RemoveAll(filepath.Dir(s.path))
			continue
		}
		free += s.size - s.used
	}
	if free >= size {
		return
	}

	dir, err := os.MkdirTemp(swapDir, "memwho-swap-")
	if err != nil {
		t.Skipf("skipping: no directory for a swapfile: %v", err)
	}
	file := filepath.Join(dir, "swapfile")
	if err := makeSwapfile(file, size, tools["mkswap"]); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("%v", err)
	}
	if out, err := exec.Command(tools["swapon"], file).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		var st unix.Statfs_t
		unix.Statfs(swapDir, &st)
		t.Skipf("skipping: swapon %s failed (filesystem magic %#x): %v: %s", file, st.Type, err, out)
	}
	t.Logf("enabled %s of swap at %s", FormatSize(size), file)
	t.Cleanup(func() {
		// swapoff reads every swapped page back into memory; with
		// the test's processes gone that is quick.
		if out, err := exec.Command(tools["swapoff"], file).CombinedOutput(); err != nil {
			t.Errorf("swapoff %s: %v: %s (remove it by hand)", file, err, out)
			return
		}
		os.RemoveAll(dir)
	})
}

// makeSwapfile creates a fully allocated file of size bytes, mode 0600 as
// swapon insists, and formats it.
func makeSwapfile(file string, size int64, mkswap string) error {
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	// swapon rejects files with holes; fallocate gives none on ext4 and
	// xfs, writing zeros covers filesystems without it.
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		buf := make([]byte, 1<<20)
		for off := int64(0); off < size; off += int64(len(buf)) {
			if _, err := f.WriteAt(buf[:min(int64(len(buf)), size-off)], off); err != nil {
				return fmt.Errorf("write swapfile: %w", err)
			}
		}
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if out, err := exec.Command(mkswap, file).CombinedOutput(); err != nil {
		return fmt.Errorf("mkswap %s: %v: %s", file, err, out)
	}
	return nil
}

type swapArea struct {
	path       string
	size, used int64 // bytes
}

// readSwaps parses /proc/swaps (sizes there are in KiB).
func readSwaps() ([]swapArea, error) {
	b, err := os.ReadFile("/proc/swaps")
	if err != nil {
		return nil, err
	}
	var areas []swapArea
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 4 {
			continue
		}
		size, _ := strconv.ParseInt(f[2], 10, 64)
		used, _ := strconv.ParseInt(f[3], 10, 64)
		// Paths with spaces are escaped as \040 by the kernel.
		path := strings.ReplaceAll(f[0], `\040`, " ")
		areas = append(areas, swapArea{path: path, size: size << 10, used: used << 10})
	}
	return areas, nil
}

// lookSbin finds a system tool in PATH or in the sbin directories, which a
// test's PATH often lacks.
func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// MemCgroup is a memory cgroup created for one test. Children join it by
// setting Spec.Cgroup to Path, and PushToSwap then reclaims their memory
// into swap.
type MemCgroup struct {
	// Path is the cgroup's directory.
	Path string
	v2   bool
}

// NewMemCgroup creates a memory cgroup and removes it when the test ends
// (register it before starting the children that join it, so that they
// are stopped first). On cgroup v1 it is nested in this process's own
// memory cgroup; on cgroup v2 it is created at the root of the hierarchy,
// the only place where the memory controller is certain to be delegated
// to children. It skips the test when not root or when no memory
// controller is mounted.
func NewMemCgroup(t testing.TB) *MemCgroup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: creating a memory cgroup needs root")
	}
	parent, v2, err := memCgroupParent()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	dir, err := os.MkdirTemp(parent, "memwho-test-")
	if err != nil {
		t.Skipf("skipping: cannot create a memory cgroup under %s: %v", parent, err)
	}
	c := &MemCgroup{Path: dir, v2: v2}
	t.Cleanup(func() {
		// rmdir fails while the kernel still has the last tasks on its
		// way out; the group's processes are reaped by now, so retry
		// briefly.
		var err error
		for range 50 {
			if err = unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("remove cgroup %s: %v", dir, err)
	})
	need := "memory.limit_in_bytes"
	if v2 {
		need = "memory.reclaim"
	}
	if _, err := os.Stat(filepath.Join(dir, need)); err != nil {
		t.Skipf("skipping: cgroup %s has no %s: %v", dir, need, err)
	}
	return c
}

// memCgroupParent finds where to create a test memory cgroup.
func memCgroupParent() (parent string, v2 bool, err error) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", false, err
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false, err
	}
	var v2mount string
	sc := bufio.NewScanner(bytes.NewReader(mounts))
	for sc.Scan() {
		// mountinfo: id parent dev root mountpoint opts ... - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		root, mnt := f[3], f[4]
		switch g[0] {
		case "cgroup":
			if !hasOpt(g[2], "memory") {
				continue
			}
			// v1: nest under our own memory cgroup, translated from the
			// hierarchy's namespace to this mount.
			for _, line := range strings.Split(string(own), "\n") {
				parts := strings.SplitN(line, ":", 3)
				if len(parts) == 3 && hasOpt(parts[1], "memory") {
					rel := strings.TrimPrefix(parts[2], root)
					return filepath.Join(mnt, rel), false, nil
				}
			}
		case "cgroup2":
			if v2mount == "" {
				v2mount = mnt
			}
		}
	}
	if v2mount != "" {
		ctl, err := os.ReadFile(filepath.Join(v2mount, "cgroup.subtree_control"))
		if err == nil && hasField(string(ctl), "memory") {
			return v2mount, true, nil
		}
		return "", false, fmt.Errorf("memory controller not enabled at %s (cgroup v2)", v2mount)
	}
	return "", false, errors.New("no memory cgroup controller mounted")
}

func hasOpt(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

func hasField(s, want string) bool {
	for _, f := range strings.Fields(s) {
		if f == want {
			return true
		}
	}
	return false
}

// PushToSwap reclaims memory from the cgroup until every one of pids (which
// must have joined it) has at least bytes swapped out, as VmSwap in
// /proc/PID/status shows (or smaps_rollup's Swap, which also counts the
// process's shared memory swapped out: Spec.Shmem). Call EnsureSwap first. On cgroup v1 it writes
// memory.force_empty, on v2 memory.reclaim; both reclaim the cgroup's
// anonymous memory into swap. It fails the test when the target cannot be
// reached.
func (c *MemCgroup) PushToSwap(t testing.TB, bytes int64, pids ...int) {
	t.Helper()
	done := func() (bool, string) {
		var b strings.Builder
		all := true
		for _, pid := range pids {
			st, err := ProcKB(pid, "status")
			if err != nil {
				t.Fatalf("status of %d: %v", pid, err)
			}
			swapped := st["VmSwap"]
			if ru, err := ProcKB(pid, "smaps_rollup"); err == nil {
				swapped = max(swapped, ru["Swap"])
			}
			fmt.Fprintf(&b, " pid %d swapped %d kB;", pid, swapped>>10)
			if swapped < bytes {
				all = false
			}
		}
		return all, b.String()
	}
	write := func(file string, v int64) error {
		return os.WriteFile(filepath.Join(c.Path, file), []byte(strconv.FormatInt(v, 10)), 0)
	}
	if !c.v2 {
		// The kernel's default of 60 would also do for anonymous-only
		// memory; 100 removes any doubt. Not every kernel allows it.
		write("memory.swappiness", 100)
	}
	var last string
	for range 20 {
		ok, state := done()
		if ok {
			return
		}
		last = state
		if c.v2 {
			// EAGAIN means less than asked was reclaimed; just go on.
			write("memory.reclaim", bytes)
			continue
		}
		// force_empty reclaims every page charged to the cgroup (it does
		// not need the cgroup to be empty, despite its name); pages the
		// runtime touches again come back, the child's idle memory does
		// not. Lowering memory.limit_in_bytes instead stalls a few pages
		// short, at the per-CPU charge batch.
		if err := write("memory.force_empty", 0); err != nil {
			t.Fatalf("memory.force_empty: %v", err)
		}
	}
	t.Fatalf("could not push %d kB to swap:%s", bytes>>10, last)
}
