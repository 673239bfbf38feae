package proc

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Reader reads one process at a time. It owns a growable buffer that holds
// the last file read; parsers work on it in place. A Reader is not safe for
// concurrent use: give each goroutine its own.
type Reader struct {
	fs    *FS
	pidfd int
	pid   int
	// held is a file of the selected process kept open by Hold, or -1;
	// heldSingle says it is printed in one piece (see readFile).
	held       int
	heldSingle bool
	buf        []byte
	// how is openat2's argument, kept here so that opens do not allocate.
	how unix.OpenHow
	// path holds "PID\x00" for Open, or "PID/" plus a file name for the
	// reads of Select.
	path   [40]byte
	prefix int
}

// direct is the pidfd of a Reader set up by Select: files are opened by
// "PID/name" relative to the procfs root.
const direct = -2

// NewReader returns a Reader for fs with a 4 KiB buffer, enough for status
// and smaps_rollup of most processes; it grows when a file is larger.
func (fs *FS) NewReader() *Reader {
	return &Reader{fs: fs, pidfd: -1, held: -1, buf: make([]byte, 4096)}
}

// Open opens the /proc/PID directory; every read until Close goes through
// it. It returns ErrGone when the process does not exist.
func (r *Reader) Open(pid int) error {
	r.Close()
	return r.openDir(pid, append(AppendInt(r.path[:0], pid), 0))
}

// openDir holds the directory at p (NUL-terminated, in r.path) as the
// process pid's: every read until Close goes through it.
func (r *Reader) openDir(pid int, p []byte) error {
	fd, err := r.fs.OpenAt(r.fs.fd, &p[0], true, &r.how)
	if err != nil {
		return mapErrno(err, ErrGone)
	}
	r.pidfd, r.pid = fd, pid
	return nil
}

// Select makes later reads open "PID/name" relative to the procfs root,
// without holding the process directory open: two syscalls fewer per
// process than Open. It does not check that the process exists: the first
// read does. Reads by path alone may see two processes if the PID is
// reused between them; pair them with Hold to rule that out.
func (r *Reader) Select(pid int) {
	r.Close()
	p := AppendInt(r.path[:0], pid)
	p = append(p, '/')
	r.pidfd, r.pid, r.prefix = direct, pid, len(p)
}

// at returns the directory descriptor and the NUL-terminated path by which
// to open name (which ends in NUL) relative to dirfd.
func (r *Reader) at(dirfd int, name string) (int, *byte) {
	if dirfd != direct {
		return dirfd, unsafe.StringData(name)
	}
	p := append(r.path[:r.prefix], name...)
	return r.fs.fd, &p[0]
}

// PID returns the process Open last opened.
func (r *Reader) PID() int { return r.pid }

// Close closes the process directory and the held file, if open.
func (r *Reader) Close() {
	if r.pidfd >= 0 {
		syscall.Close(r.pidfd)
		r.pidfd = -1
	}
	if r.held >= 0 {
		syscall.Close(r.held)
		r.held = -1
	}
}

// Hold opens the file name (NUL-terminated, "smaps_rollup\x00") of the
// process chosen by Select and keeps it open until Close, to be read last
// with RollupHeld.
//
// This is how a scan that reads several files by path still never mixes
// two processes, without the two syscalls of holding the directory: an
// open /proc/PID file is bound to the process it was opened for, and
// reading it once that process has been reaped fails (ESRCH). A PID is
// reused only after its process is reaped. So when the held read comes
// after every other read and succeeds, the process was alive from the
// open to that read, and every read by path in between saw it.
//
// It returns ErrNotExist when the process or the file does not exist.
func (r *Reader) Hold(name string) error {
	if r.held >= 0 {
		syscall.Close(r.held)
		r.held = -1
	}
	dfd, path := r.at(r.pidfd, name)
	fd, err := r.fs.OpenAt(dfd, path, false, &r.how)
	if err != nil {
		return mapFileErrno(err)
	}
	r.held, r.heldSingle = fd, name != "smaps\x00"
	return nil
}

// ReadFile reads the file name (relative to the open process directory)
// and returns its contents, valid until the next read. name must end in a
// NUL byte ("stat\x00"), so it can be passed to the kernel as it is.
func (r *Reader) ReadFile(name string) ([]byte, error) {
	return r.readFile(r.pidfd, name, false)
}

// readTaskFile reads a file every live process has, so that its absence,
// like ESRCH, means the process is gone.
func (r *Reader) readTaskFile(name string) ([]byte, error) {
	b, err := r.readFile(r.pidfd, name, true)
	if err == ErrNotExist || err == ErrNoMM {
		return nil, ErrGone
	}
	return b, err
}

// readFile reads a whole file relative to dirfd into r.buf.
//
// With single set, a read that returns less than it was offered ends the
// file. That holds for regular files and for the /proc files printed in
// one piece (single_open seq_files: stat, status, comm, smaps_rollup,
// meminfo, cgroup), which hand out all that remains on each read, and it
// saves the read that would return 0 — one syscall in four for a small
// file. smaps, printed a mapping at a time, can return short reads in the
// middle and is read until a read returns 0.
func (r *Reader) readFile(dirfd int, name string, single bool) ([]byte, error) {
	dfd, path := r.at(dirfd, name)
	fd, err := r.fs.OpenAt(dfd, path, false, &r.how)
	if err != nil {
		return nil, mapFileErrno(err)
	}
	limit := MaxSmallFile
	if name == "smaps\x00" {
		limit = MaxFileSize
	}
	b, err := r.readFD(fd, single, limit)
	syscall.Close(fd)
	return b, err
}

// readHeld reads the file Hold opened, then closes it.
func (r *Reader) readHeld() ([]byte, error) {
	if r.held < 0 {
		return nil, ErrGone
	}
	limit := MaxSmallFile
	if !r.heldSingle {
		limit = MaxFileSize // smaps
	}
	b, err := r.readFD(r.held, r.heldSingle, limit)
	syscall.Close(r.held)
	r.held = -1
	return b, err
}

// readFD reads fd from its current offset to the end into r.buf, at
// most limit bytes; see readFile for single.
func (r *Reader) readFD(fd int, single bool, limit int) ([]byte, error) {
	return r.readAt(fd, single, limit, -1)
}

// preadFD reads a file printed in one piece from offset 0 into r.buf, at
// most limit bytes: for a procfs file, a read at offset 0 prints it anew.
// A short read ends it, as in readFile.
func (r *Reader) preadFD(fd int, limit int) ([]byte, error) {
	return r.readAt(fd, true, limit, 0)
}

// readAt is readFD (at < 0: from the current offset) and preadFD (at 0:
// by pread from that offset on, which leaves the file offset alone).
func (r *Reader) readAt(fd int, single bool, limit, at int) ([]byte, error) {
	n := 0
	for {
		if n == len(r.buf) {
			if len(r.buf) >= limit {
				return nil, ErrTooLarge
			}
			// Grow and keep reading: seq_file hands out the rest of the
			// file on the next read, so nothing needs re-reading.
			nb := make([]byte, 2*len(r.buf))
			copy(nb, r.buf[:n])
			r.buf = nb
		}
		var m int
		var err error
		if at < 0 {
			m, err = read(fd, r.buf[n:])
		} else {
			m, err = pread(fd, r.buf[n:], at+n)
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, mapFileErrno(err)
		}
		if m == 0 {
			break
		}
		n += m
		if single && n < len(r.buf) {
			break
		}
	}
	return r.buf[:n], nil
}

// Readlink reads the symbolic link name (NUL-terminated, relative to the
// process directory) into dst[:0] and returns it.
func (r *Reader) Readlink(name string, dst []byte) ([]byte, error) {
	if cap(dst) < 256 {
		dst = make([]byte, 0, 4096)
	}
	dst = dst[:cap(dst)]
	dfd, path := r.at(r.pidfd, name)
	if e := injected("readlink", path); e != 0 {
		return dst[:0], mapErrno(e, ErrNotExist)
	}
	n, _, e := syscall.Syscall6(syscall.SYS_READLINKAT, uintptr(dfd),
		uintptr(unsafe.Pointer(path)),
		uintptr(unsafe.Pointer(&dst[0])), uintptr(len(dst)), 0, 0)
	if e != 0 {
		return dst[:0], mapErrno(e, ErrNotExist)
	}
	return dst[:n], nil
}

func openat(dirfd int, path *byte, flags int) (int, error) {
	for {
		fd, _, e := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(dirfd),
			uintptr(unsafe.Pointer(path)), uintptr(flags), 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return -1, e
		}
		return int(fd), nil
	}
}

func pread(fd int, b []byte, off int) (int, error) {
	n, _, e := syscall.Syscall6(syscall.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(off), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func read(fd int, b []byte) (int, error) {
	n, _, e := syscall.Syscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// mapErrno turns an errno into one of the package's sentinels so callers
// can branch on them; notExist is what ENOENT means in the caller's context
// (the process is gone, or just this file is missing).
func mapErrno(err error, notExist error) error {
	if Exhausted(err) {
		return ErrExhausted
	}
	switch err {
	case syscall.ENOENT:
		return notExist
	case syscall.ESRCH:
		return ErrGone
	case syscall.EACCES, syscall.EPERM:
		return ErrDenied
	case syscall.ENOTDIR:
		return ErrGone
	case syscall.EISDIR:
		// read(2) of a directory: a fake tree with a directory where
		// a file belongs.
		return ErrNotRegular
	}
	return err
}

// mapFileErrno maps the errno of opening or reading a file in a process
// directory. ESRCH there means the task has no address space (a kernel
// thread, a zombie, or a process in the middle of exiting): the kernel
// returns it from smaps and smaps_rollup when there is no mm to walk.
func mapFileErrno(err error) error {
	if err == syscall.ESRCH {
		return ErrNoMM
	}
	return mapErrno(err, ErrNotExist)
}

// AppendInt appends the decimal form of v to b without allocating: the
// PID and TID parts of every path beneath the tree.
func AppendInt(b []byte, v int) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}

// Exe reads the /proc/PID/exe link of the open process into dst[:0]. It
// returns ErrDenied for another user's process without ptrace access and
// ErrNotExist for kernel threads.
func (r *Reader) Exe(dst []byte) ([]byte, error) {
	return r.Readlink("exe\x00", dst)
}

// Cmdline reads /proc/PID/cmdline of the open process: the arguments, each
// ended by a NUL. The result aliases the Reader's buffer.
func (r *Reader) Cmdline() ([]byte, error) {
	b, err := r.readFile(r.pidfd, "cmdline\x00", false)
	if err == ErrNotExist || err == ErrNoMM {
		return nil, ErrGone
	}
	return b, err
}

// Comm reads /proc/PID/comm of the open process: the raw task name, without
// the newline the kernel appends. The result aliases the Reader's buffer.
func (r *Reader) Comm() ([]byte, error) {
	b, err := r.readTaskFile("comm\x00")
	if err != nil {
		return nil, err
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, ErrMalformed
	}
	return b[:len(b)-1], nil
}

// Exhausted reports whether err is an errno that says the caller ran out
// of file descriptors or memory (EMFILE, ENFILE, ENOMEM), which says
// nothing of the process it was reading: what ErrExhausted stands for.
func Exhausted(err error) bool {
	return err == syscall.EMFILE || err == syscall.ENFILE || err == syscall.ENOMEM
}
