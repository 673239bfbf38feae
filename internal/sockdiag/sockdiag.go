// Package sockdiag finds the inodes of ESTABLISHED TCP sockets (IPv4 and
// IPv6) and counts them per process.
//
// Sockets have no owner in the kernel's socket tables: the link from a
// socket to a process is a file descriptor. So counting is two steps:
//
//  1. dump the ESTABLISHED sockets' inode numbers into an [InodeSet], with
//     a NETLINK_SOCK_DIAG request that asks the kernel to filter by state
//     ([Dumper]), or, where sock_diag is unavailable, by reading
//     /proc/net/tcp and /proc/net/tcp6 ([ReadProcNet], a fixed-width
//     parser that splits no fields);
//  2. read every /proc/PID/fd/N link of a process and count the
//     "socket:[INODE]" targets that are in the set ([FDCounter]).
//
// Step 2 dominates the cost (one readlink per descriptor) and, for other
// users' processes, needs CAP_DAC_READ_SEARCH and CAP_SYS_PTRACE; that is
// why callers make connection counts opt-in.
//
// Both sources see only the caller's network namespace: sockets of a
// container with its own namespace are not listed, and its processes
// count 0. Reading /proc/PID/net/tcp of one member per namespace would
// cover them; this package does not.
//
// Nothing here allocates in steady state: buffers and the set are reused.
package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// InodeSet is a set of socket inode numbers, reused across dumps.
type InodeSet struct{ m map[uint64]struct{} }

// Reset empties the set, keeping its storage.
func (s *InodeSet) Reset() {
	if s.m == nil {
		s.m = make(map[uint64]struct{}, 1024)
	}
	clear(s.m)
}

// Add adds inode to the set.
func (s *InodeSet) Add(inode uint64) {
	if s.m == nil {
		s.m = make(map[uint64]struct{}, 1024)
	}
	s.m[inode] = struct{}{}
}

// Has reports whether inode is in the set.
func (s *InodeSet) Has(inode uint64) bool {
	_, ok := s.m[inode]
	return ok
}

// Range calls f for every inode of the set, in no order, until f returns
// false. f must not change the set.
func (s *InodeSet) Range(f func(inode uint64) bool) {
	for ino := range s.m {
		if !f(ino) {
			return
		}
	}
}

// Len returns the number of inodes in the set.
func (s *InodeSet) Len() int { return len(s.m) }

// tcpEstablished is TCP_ESTABLISHED in include/net/tcp_states.h.
const tcpEstablished = 1

// Layout of the messages (include/uapi/linux/netlink.h, inet_diag.h).
const (
	sizeofNlmsghdr = 16
	// struct inet_diag_req_v2: family, protocol, ext, pad (u8 each),
	// states (u32), struct inet_diag_sockid (48 bytes).
	sizeofReq = 8 + 48
	// struct inet_diag_req, the request of TCPDIAG_GETSOCK: family,
	// src_len, dst_len, ext (u8 each), struct inet_diag_sockid, states
	// and dbs (u32 each).
	sizeofReqCompat = 4 + 48 + 8
	offCompatStates = 4 + 48
	// tcpdiagGetsock is TCPDIAG_GETSOCK (include/uapi/linux/inet_diag.h).
	tcpdiagGetsock = 18
	// struct inet_diag_msg: family, state, timer, retrans (u8 each),
	// id (48 bytes), expires, rqueue, wqueue, uid, inode (u32 each).
	offMsgState = 1
	offMsgInode = 4 + 48 + 16
	sizeofMsg   = offMsgInode + 4
)

// Dumper lists ESTABLISHED TCP sockets through NETLINK_SOCK_DIAG. It owns
// its netlink socket and buffers; it is not safe for concurrent use.
type Dumper struct {
	fd  int
	seq uint32
	req [sizeofNlmsghdr + max(sizeofReq, sizeofReqCompat)]byte
	buf []byte
	// perFamily is set once the one-request dump of both families was
	// refused.
	perFamily bool
}

// Open opens a NETLINK_SOCK_DIAG socket.
func Open() (*Dumper, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("open sock_diag socket: %w", err)
	}
	if err := unix.Connect(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("connect sock_diag socket: %w", err)
	}
	// 64 KiB holds any one datagram of a dump: the kernel fills at
	// most 32 KiB per message batch.
	return &Dumper{fd: fd, buf: make([]byte, 64<<10)}, nil
}

// Close closes the netlink socket.
func (d *Dumper) Close() error {
	if d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// Established adds the inode of every ESTABLISHED TCP socket, IPv4 and
// IPv6, to set (which it does not reset). Sockets without an inode
// (orphans whose descriptor is closed) are left out.
//
// The kernel answers a dump by walking its whole established-socket
// hash table (262,144 buckets on a 24 GiB machine), empty or not, once
// per request: about 2.5 ms of system time, more than the sockets
// themselves cost on most hosts. So it asks once for both families,
// with the TCPDIAG_GETSOCK request that inet_diag keeps for
// compatibility (it dumps every family in one walk), and falls back to
// one SOCK_DIAG_BY_FAMILY request per family when that is refused.
func (d *Dumper) Established(set *InodeSet) error {
	if !d.perFamily {
		err := d.dump(0, set)
		if err == nil {
			return nil
		}
		d.perFamily = true
	}
	for _, family := range [...]uint8{unix.AF_INET, unix.AF_INET6} {
		if err := d.dump(family, set); err != nil {
			return err
		}
	}
	return nil
}

// ErrTruncated means a netlink message did not fit the receive buffer.
var ErrTruncated = errors.New("sock_diag: message truncated")

// dump sends one dump request, for one family, or with family 0 the
// TCPDIAG_GETSOCK request for all, and reads its answer into set.
func (d *Dumper) dump(family uint8, set *InodeSet) error {
	d.seq++
	ne := binary.NativeEndian
	typ := uint16(unix.SOCK_DIAG_BY_FAMILY)
	r := d.req[:sizeofNlmsghdr+sizeofReq]
	if family == 0 {
		typ = tcpdiagGetsock
		r = d.req[:sizeofNlmsghdr+sizeofReqCompat]
	}
	clear(r)
	ne.PutUint32(r[0:], uint32(len(r)))
	ne.PutUint16(r[4:], typ)
	ne.PutUint16(r[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(r[8:], d.seq)
	q := r[sizeofNlmsghdr:]
	if family == 0 {
		q[0] = unix.AF_INET // ignored: the kernel dumps every family
		ne.PutUint32(q[offCompatStates:], 1<<tcpEstablished)
	} else {
		q[0] = family
		q[1] = unix.IPPROTO_TCP
		ne.PutUint32(q[4:], 1<<tcpEstablished)
	}
	if err := writeAll(d.fd, r); err != nil {
		return fmt.Errorf("sock_diag request: %w", err)
	}
	for {
		n, err := recv(d.fd, d.buf)
		if err != nil {
			return fmt.Errorf("sock_diag receive: %w", err)
		}
		if n > len(d.buf) {
			return ErrTruncated
		}
		if done, err := parseReply(d.buf[:n], d.seq, typ, set); done || err != nil {
			return err
		}
	}
}

// parseReply walks the netlink messages of one datagram b of a dump's
// answer: it adds to set the inode of every ESTABLISHED socket in the
// messages of type typ that answer request seq, and reports done at
// NLMSG_DONE or NLMSG_ERROR. Messages of other requests are skipped; a
// header whose length does not fit b, or a socket message too short for
// an inet_diag_msg, is an error. Trailing bytes too few for a header are
// ignored, as the kernel's NLMSG_OK does.
func parseReply(b []byte, seq uint32, typ uint16, set *InodeSet) (done bool, err error) {
	ne := binary.NativeEndian
	for len(b) >= sizeofNlmsghdr {
		l := int(ne.Uint32(b[0:]))
		mtyp := ne.Uint16(b[4:])
		mseq := ne.Uint32(b[8:])
		if l < sizeofNlmsghdr || l > len(b) {
			return false, fmt.Errorf("sock_diag: bad message length %d", l)
		}
		payload := b[sizeofNlmsghdr:l]
		// Messages are padded to 4 bytes.
		next := (l + 3) &^ 3
		b = b[min(next, len(b)):]
		if mseq != seq {
			continue // a late answer to an earlier request
		}
		switch mtyp {
		case unix.NLMSG_DONE:
			return true, nil
		case unix.NLMSG_ERROR:
			if len(payload) >= 4 {
				if e := int32(ne.Uint32(payload)); e < 0 {
					return true, fmt.Errorf("sock_diag: %w", syscall.Errno(-e))
				}
			}
			return true, nil
		case typ:
			if len(payload) < sizeofMsg {
				return false, fmt.Errorf("sock_diag: short message (%d bytes)", len(payload))
			}
			if payload[offMsgState] != tcpEstablished {
				continue
			}
			if ino := ne.Uint32(payload[offMsgInode:]); ino != 0 {
				set.Add(uint64(ino))
			}
		}
	}
	return false, nil
}

func writeAll(fd int, b []byte) error {
	for {
		_, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		return err
	}
}

func recv(fd int, b []byte) (int, error) {
	for {
		// MSG_TRUNC makes a datagram socket return the datagram's real
		// length, so a truncation shows.
		n, _, e := syscall.Syscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), unix.MSG_TRUNC, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
}
