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
	"syscall"
	"unsafe"
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
	// ErrTooLarge means a file exceeded MaxFileSize.
	ErrTooLarge = errors.New("file too large")
)

// MaxFileSize bounds how far a Reader grows its buffer for one file, in
// bytes. smaps of a process with a hundred thousand mappings is about
// 30 MiB; nothing we read legitimately comes near this bound.
const MaxFileSize = 256 << 20

// FS is an open procfs tree.
type FS struct {
	root string
	fd   int
}

// Open opens the procfs tree at root (normally "/proc").
func Open(root string) (*FS, error) {
	fd, err := syscall.Open(root, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", root, err)
	}
	return &FS{root: root, fd: fd}, nil
}

// Root returns the path FS was opened with.
func (fs *FS) Root() string { return fs.root }

// Close closes the directory descriptor.
func (fs *FS) Close() error {
	if fs.fd < 0 {
		return nil
	}
	err := syscall.Close(fs.fd)
	fs.fd = -1
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
			if c < '0' || c > '9' || pid > 1<<31 {
				ok = false
				break
			}
			pid = pid*10 + int(c-'0')
		}
		if ok && pid > 0 {
			dst = append(dst, pid)
		}
		b = b[reclen:]
	}
	return dst
}
