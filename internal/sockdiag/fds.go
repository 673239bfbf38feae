package sockdiag

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/memwho/memwho/internal/proc"
)

// FDCounter counts, per process, the descriptors that are sockets of an
// InodeSet, by reading the /proc/PID/fd links. It owns its buffers: give
// each goroutine its own.
type FDCounter struct {
	fs     *proc.FS
	dirbuf []byte
	link   [64]byte
	path   [32]byte
	how    unix.OpenHow
	socks  []uint64 // Count's scratch
}

// NewFDCounter returns a counter for the procfs tree fs, which stays
// owned by the caller.
func NewFDCounter(fs *proc.FS) *FDCounter {
	return &FDCounter{fs: fs, dirbuf: make([]byte, 16<<10)}
}

// Count returns how many of pid's descriptors are sockets in set. It
// returns the errno of opening /proc/PID/fd when that fails (EACCES for
// another user's process without CAP_DAC_READ_SEARCH, ENOENT when the
// process is gone); links that cannot be read (a descriptor closed
// meanwhile, or EACCES without CAP_SYS_PTRACE) do not count.
func (c *FDCounter) Count(pid int, set *InodeSet) (uint32, error) {
	var err error
	c.socks, err = c.Sockets(pid, c.socks[:0])
	var n uint32
	for _, ino := range c.socks {
		if set.Has(ino) {
			n++
		}
	}
	return n, err
}

// Sockets appends to dst the inodes of pid's descriptors that are
// sockets, of any kind and state, with the errors of Count. A socket
// held by two descriptors is listed twice, as Count counts it twice.
func (c *FDCounter) Sockets(pid int, dst []uint64) ([]uint64, error) {
	p := c.appendPath(pid)
	dfd, err := c.fs.OpenAt(c.fs.Fd(), &p[0], true, &c.how)
	if err != nil {
		return dst, err
	}
	defer syscall.Close(dfd)
	for {
		m, err := syscall.ReadDirent(dfd, c.dirbuf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return dst, err
		}
		if m <= 0 {
			return dst, nil
		}
		b := c.dirbuf[:m]
		// linux_dirent64: ino u64, off s64, reclen u16, type u8, name
		// with its NUL: a record is at least 20 bytes.
		for len(b) >= 20 {
			reclen := int(*(*uint16)(unsafe.Pointer(&b[16])))
			if reclen < 20 || reclen > len(b) {
				break
			}
			name := b[19:reclen] // NUL-terminated, then padding
			b = b[reclen:]
			if name[0] == '.' {
				continue
			}
			ino, ok, err := c.socketInode(dfd, &name[0])
			if err != nil {
				// Out of memory: the table is not known,
				// not one socket fewer.
				return dst, err
			}
			if ok {
				dst = append(dst, ino)
			}
		}
	}
}

// Size returns the size /proc/PID/fd reports, one statx and no path
// resolution beyond the procfs root: since Linux 6.2 the number of open
// descriptors, which changes when the process opens or closes one (not
// when it closes one and opens another). Before 6.2 it is 0 on procfs.
func (c *FDCounter) Size(pid int) (uint64, error) {
	p := c.appendPath(pid)
	var stx unix.Statx_t
	_, _, e := syscall.Syscall6(unix.SYS_STATX, uintptr(c.fs.Fd()), uintptr(unsafe.Pointer(&p[0])),
		unix.AT_SYMLINK_NOFOLLOW, unix.STATX_SIZE, uintptr(unsafe.Pointer(&stx)), 0)
	if e != 0 {
		return 0, e
	}
	return stx.Size, nil
}

// appendPath makes "PID/fd\x00" in c.path.
func (c *FDCounter) appendPath(pid int) []byte {
	p := proc.AppendInt(c.path[:0], pid)
	return append(p, "/fd\x00"...)
}

// socketInode reads the link name (NUL-terminated, relative to dfd) and
// parses "socket:[INODE]". A link that cannot be read is no socket (the
// descriptor was closed meanwhile), except for ENOMEM, which is returned:
// it says nothing of the descriptor.
func (c *FDCounter) socketInode(dfd int, name *byte) (uint64, bool, error) {
	l, _, e := syscall.Syscall6(syscall.SYS_READLINKAT, uintptr(dfd), uintptr(unsafe.Pointer(name)),
		uintptr(unsafe.Pointer(&c.link[0])), uintptr(len(c.link)), 0, 0)
	if f := proc.Injected("readlink", name); f != 0 {
		e = f
	}
	if e == syscall.ENOMEM {
		return 0, false, e
	}
	if e != 0 {
		return 0, false, nil
	}
	ino, ok := ParseSocketLink(c.link[:l])
	return ino, ok, nil
}

// ParseSocketLink parses the target of a /proc/PID/fd link that is a
// socket, "socket:[12345]", into its inode number.
func ParseSocketLink(b []byte) (uint64, bool) {
	const prefix = "socket:["
	if len(b) < len(prefix)+2 || string(b[:len(prefix)]) != prefix || b[len(b)-1] != ']' {
		return 0, false
	}
	var v uint64
	digits := b[len(prefix) : len(b)-1]
	if len(digits) > 19 {
		return 0, false
	}
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, false
		}
		v = v*10 + uint64(d-'0')
	}
	return v, true
}

// Source lists ESTABLISHED sockets through sock_diag while it works and
// through /proc/net/tcp{,6} otherwise. For a procfs root other than
// /proc (a captured tree in tests) it reads only the files: sock_diag
// would describe the live kernel instead.
type Source struct {
	fs  *proc.FS
	d   *Dumper
	buf []byte
	// ProcNet is true once the source has fallen back to
	// /proc/net/tcp{,6}.
	ProcNet bool
	// DiagErr is why sock_diag was given up, if it was.
	DiagErr error
}

// NewSource returns a Source for the procfs tree fs (owned by the
// caller).
func NewSource(fs *proc.FS) *Source {
	s := &Source{fs: fs}
	if !fs.IsProcfsRoot() {
		s.ProcNet = true
		return s
	}
	d, err := Open()
	if err != nil {
		s.ProcNet, s.DiagErr = true, err
		return s
	}
	s.d = d
	return s
}

// Established resets set and fills it with the inodes of the ESTABLISHED
// TCP sockets.
func (s *Source) Established(set *InodeSet) error {
	set.Reset()
	if s.d != nil {
		err := s.d.Established(set)
		if err == nil {
			return nil
		}
		// Fall back for good: a kernel without inet_diag, or a
		// sandbox that refuses the request, will not change its mind.
		s.d.Close()
		s.d = nil
		s.ProcNet, s.DiagErr = true, err
		set.Reset()
	}
	var err error
	s.buf, err = ReadProcNet(s.fs, set, s.buf)
	return err
}

// Close releases the netlink socket.
func (s *Source) Close() error {
	if s.d != nil {
		return s.d.Close()
	}
	return nil
}
