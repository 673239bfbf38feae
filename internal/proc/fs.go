// Package proc reads the memory-related files of a Linux procfs tree
// without allocating in steady state.
//
// An [FS] is an open directory descriptor on a procfs mount (or on a fake
// tree captured for tests). A [Reader] belongs to one goroutine and owns its
// scratch buffer. Two ways of reading a process keep one result from mixing
// two processes when a PID is reused while we read, because the kernel ties
// an open /proc/PID file or directory to the process it was opened for:
//
//   - [Reader.Select] and [Reader.Hold]: open one file (smaps_rollup) first,
//     read the others by path, read the held file last. A successful last
//     read proves the process lived, and kept its PID, throughout.
//   - [Reader.Open]: hold the /proc/PID directory and read every file
//     through it; reads fail with [ErrGone] once the process is gone.
//     Two syscalls dearer, for when no file can be read last.
//
// All memory sizes are stored in bytes (the kernel reports kB, which here
// always means KiB).
//
// The package parses; it does not decide. Which file to fall back to,
// how to name a program and how to group processes is package sample's job.
//
// This package's read path must not allocate: see TestNoAllocs and the
// benchmarks in reader_test.go.
package proc

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sentinel errors. They are preallocated so that the failure paths a scan
// meets thousands of times (processes exiting, permission denied) do not
// allocate either.
var (
	// ErrGone means the process exited (or its PID now names another
	// process) before or while it was read.
	ErrGone = errors.New("process gone")
	// ErrDenied means the kernel refused the read (EACCES or EPERM):
	// smaps_rollup of another user's process needs CAP_SYS_PTRACE.
	ErrDenied = errors.New("permission denied")
	// ErrNoMM means the process has no address space: a kernel thread or a
	// zombie.
	ErrNoMM = errors.New("no address space")
	// ErrMalformed means the file did not have the expected shape, for
	// example because it was truncated.
	ErrMalformed = errors.New("malformed file")
	// ErrNotExist means the file does not exist in a directory that does:
	// for example smaps_rollup on kernels older than 4.14.
	ErrNotExist = errors.New("no such file")
	// ErrTooLarge means a file exceeded its size cap (MaxFileSize for
	// smaps, MaxSmallFile for everything else).
	ErrTooLarge = errors.New("file too large")
	// ErrExhausted means memwho itself ran out of something the read
	// needs (EMFILE, ENFILE: file descriptors; ENOMEM): nothing is known
	// about the process, which may well live on, and a later read can
	// succeed.
	ErrExhausted = errors.New("out of file descriptors or memory")
	// ErrNotRegular means a path beneath the tree is a symlink, a
	// directory, a FIFO, a device or a socket where a file was expected.
	// A real procfs never has one there; a fake tree may, and memwho
	// reads none of them (a FIFO would block, /dev/zero never ends, a
	// symlink could point anywhere).
	ErrNotRegular = errors.New("not a regular file")
)

// MaxFileSize bounds how far a Reader grows its buffer for smaps, in
// bytes: smaps of a process with a hundred thousand mappings is about
// 30 MiB.
const MaxFileSize = 256 << 20

// MaxSmallFile bounds every other file, in bytes. status, stat, comm,
// cgroup and smaps_rollup are a few KiB; a command line longer than this
// is cut off from naming, nothing else.
const MaxSmallFile = 4 << 20

// DefaultRoot is where the kernel's procfs is mounted.
const DefaultRoot = "/proc"

// procRootIno is the inode number of the root directory of every procfs
// instance (PROC_ROOT_INO in fs/proc/internal.h). /proc/self/fd and every
// other directory inside procfs have other numbers.
const procRootIno = 1

// FS is an open procfs tree: the one value by which memwho names the
// tree it reads. Every file beneath it is opened relative to its
// descriptor, without following a symbolic link (openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where the kernel has it, O_NOFOLLOW
// on the last component otherwise), never blocking (O_NONBLOCK), and
// read only up to a size cap. In a tree that is not the root of a real
// procfs, a file must also be a regular file to be read at all.
type FS struct {
	root string
	fd   int
	// real reports that fd is the root directory of a procfs instance.
	real bool
	// resolve reports that the kernel has openat2 (Linux 5.6+).
	resolve bool

	// kpagecount and kpageflags, opened once by OpenKPages.
	kpOnce           sync.Once
	kpCount, kpFlags int
	kpErr            error
}

// Open opens the procfs tree at root (normally DefaultRoot) with the
// caller's own rights, and checks once whether it is the root of a real
// procfs (see [FS.IsProcfsRoot]).
func Open(root string) (*FS, error) {
	fd, err := syscall.Open(root, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	fs := &FS{root: root, fd: fd, kpCount: -1, kpFlags: -1}
	var sfs unix.Statfs_t
	var st unix.Stat_t
	if unix.Fstatfs(fd, &sfs) == nil && sfs.Type == unix.PROC_SUPER_MAGIC &&
		unix.Fstat(fd, &st) == nil && st.Ino == procRootIno {
		fs.real = true
	}
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolveFlags}
	if cfd, err := unix.Openat2(fd, ".", &how); err == nil {
		unix.Close(cfd)
		fs.resolve = true
	}
	return fs, nil
}

// resolveFlags keeps openat2 beneath the tree and off every symbolic link
// (procfs magic links such as /proc/PID/cwd included).
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS

// openFlags are added to every open beneath the tree.
const openFlags = syscall.O_RDONLY | syscall.O_CLOEXEC | syscall.O_NOCTTY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// Root returns the path FS was opened with.
func (fs *FS) Root() string { return fs.root }

// Fd returns the directory descriptor of the tree's root, for opens
// through [FS.OpenAt]. It stays owned by fs.
func (fs *FS) Fd() int { return fs.fd }

// IsProcfsRoot reports whether the tree is the root directory of a
// procfs instance: statfs says procfs and the inode is procfs's root
// inode. /proc/self/fd, /proc/PID/cwd and every other directory inside
// procfs fail the second test; a directory anybody filled fails the
// first. Only such a tree may be read with privilege.
func (fs *FS) IsProcfsRoot() bool { return fs.real }

// OpenAt opens path (NUL-terminated, relative to dirfd, which is fs.Fd()
// or a directory opened beneath it) under the tree's rules: no symbolic
// link anywhere in path, never blocking, close-on-exec. With dir set the
// path must be a directory; otherwise, in a tree that is not a real
// procfs root, it must be a regular file (a real procfs holds nothing
// else below a process directory). how is scratch space the caller
// owns, so that the open does not allocate.
func (fs *FS) OpenAt(dirfd int, path *byte, dir bool, how *unix.OpenHow) (int, error) {
	if e := injected("open", path); e != 0 {
		return -1, e
	}
	flags := openFlags
	if dir {
		flags |= syscall.O_DIRECTORY
	}
	var fd int
	var err error
	if fs.resolve {
		how.Flags, how.Mode, how.Resolve = uint64(flags), 0, resolveFlags
		fd, err = openat2(dirfd, path, how)
	} else {
		fd, err = openat(dirfd, path, flags)
	}
	if err != nil {
		if err == syscall.ELOOP || err == syscall.EXDEV {
			// A symlink, or a path that would leave the tree.
			return -1, ErrNotRegular
		}
		return -1, err
	}
	if !dir && !fs.real {
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			syscall.Close(fd)
			return -1, ErrNotRegular
		}
	}
	return fd, nil
}

func openat2(dirfd int, path *byte, how *unix.OpenHow) (int, error) {
	for range 16 {
		fd, _, e := syscall.Syscall6(unix.SYS_OPENAT2, uintptr(dirfd),
			uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(how)), unsafe.Sizeof(*how), 0, 0)
		// EAGAIN: a rename raced the lookup; the kernel asks to retry.
		if e == syscall.EINTR || e == syscall.EAGAIN {
			continue
		}
		if e != 0 {
			return -1, e
		}
		return int(fd), nil
	}
	return -1, syscall.EAGAIN
}

// ReadFile reads the file at name (relative to the tree's root, e.g.
// "sys/kernel/random/boot_id") under the tree's rules into buf[:0],
// growing it up to max bytes, and returns it. It is for the few files
// read outside the per-process hot path.
func (fs *FS) ReadFile(name string, buf []byte, max int) ([]byte, error) {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return buf[:0], err
	}
	var how unix.OpenHow
	fd, err := fs.OpenAt(fs.fd, p, false, &how)
	if err != nil {
		return buf[:0], mapFileErrno(err)
	}
	defer syscall.Close(fd)
	if cap(buf) == 0 {
		buf = make([]byte, 0, 4096)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= max {
				return buf[:0], ErrTooLarge
			}
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return buf[:0], mapFileErrno(err)
		}
		if m == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+m]
	}
}

// Close closes the directory descriptor.
func (fs *FS) Close() error {
	if fs.fd < 0 {
		return nil
	}
	err := syscall.Close(fs.fd)
	fs.fd = -1
	for _, fd := range []*int{&fs.kpCount, &fs.kpFlags} {
		if *fd >= 0 {
			syscall.Close(*fd)
			*fd = -1
		}
	}
	return err
}

// PIDs appends the numeric entries of the procfs root to dst[:0] and
// returns it, in the order the kernel lists them (ascending on a real
// /proc). buf is scratch space for getdents; pass the same one each time.
func (fs *FS) PIDs(dst []int, buf []byte) ([]int, []byte, error) {
	dst = dst[:0]
	if len(buf) < 8192 {
		buf = make([]byte, 16384)
	}
	if _, err := syscall.Seek(fs.fd, 0, 0); err != nil {
		return dst, buf, fmt.Errorf("rewind %s: %w", fs.root, err)
	}
	for {
		n, err := syscall.ReadDirent(fs.fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return dst, buf, fmt.Errorf("list %s: %w", fs.root, err)
		}
		if n <= 0 {
			return dst, buf, nil
		}
		dst = appendDirentPIDs(dst, buf[:n])
	}
}

// appendDirentPIDs walks linux_dirent64 records: ino u64, off s64,
// reclen u16, type u8, then the NUL-terminated name.
func appendDirentPIDs(dst []int, b []byte) []int {
	for len(b) >= 19 {
		reclen := int(*(*uint16)(unsafe.Pointer(&b[16])))
		if reclen < 19 || reclen > len(b) {
			break
		}
		name := b[19:reclen]
		pid, ok := 0, len(name) > 0 && name[0] != 0
		for _, c := range name {
			if c == 0 {
				break
			}
			if c < '0' || c > '9' {
				ok = false
				break
			}
			// Checked after the step (FuzzDirentPIDs): checked
			// before, "7000000000" passed as 7e9.
			if pid = pid*10 + int(c-'0'); pid > 1<<31 {
				ok = false
				break
			}
		}
		if ok && pid > 0 {
			dst = append(dst, pid)
		}
		b = b[reclen:]
	}
	return dst
}
