package sockdiag

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// refSocketLink reads "socket:[INODE]" the slow way: prefix, suffix and a
// decimal of at most 19 digits in between (the parser's cap, which keeps
// it clear of overflow).
func refSocketLink(s string) (uint64, bool) {
	num, ok := strings.CutPrefix(s, "socket:[")
	if !ok {
		return 0, false
	}
	if num, ok = strings.CutSuffix(num, "]"); !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil || len(num) > 19 || strings.HasPrefix(num, "+") {
		return 0, false
	}
	return v, true
}

func FuzzParseSocketLink(f *testing.F) {
	for _, s := range []string{
		"socket:[12345]", "socket:[0]", "socket:[]", "socket:[12a]", "pipe:[12345]",
		"anon_inode:[eventpoll]", "/dev/null", "socket:[99999999999999999999]",
		"socket:[9999999999999999999]", "socket:[+1]", "socket:[1]]", "socket:[",
	} {
		f.Add(s)
	}
	// Real links: this process's descriptors.
	if names, err := filepath.Glob("/proc/self/fd/*"); err == nil {
		for _, n := range names {
			if l, err := os.Readlink(n); err == nil {
				f.Add(l)
			}
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParseSocketLink([]byte(s))
		want, wantOK := refSocketLink(s)
		if got != want || ok != wantOK {
			t.Fatalf("ParseSocketLink(%q) = %d, %v, reference %d, %v", s, got, ok, want, wantOK)
		}
		if ok {
			// Round trip through the kernel's format.
			if v, ok := ParseSocketLink([]byte("socket:[" + strconv.FormatUint(got, 10) + "]")); !ok || v != got {
				t.Fatalf("round trip of %d: %d, %v", got, v, ok)
			}
		}
	})
}

// nlhdr is struct nlmsghdr; diagMsg is struct inet_diag_msg.
type nlhdr struct {
	Len   uint32
	Type  uint16
	Flags uint16
	Seq   uint32
	Pid   uint32
}

type diagMsg struct {
	Family, State, Timer, Retrans     uint8
	ID                                [48]byte
	Expires, RQueue, WQueue, UID, Ino uint32
}

// refReply walks a netlink datagram the slow way, decoding each header
// and inet_diag_msg with encoding/binary. It returns the inodes it added
// (in order, zero left out), whether the dump ended and whether there was
// an error.
func refReply(b []byte, seq uint32, typ uint16) (inodes []uint64, done, bad bool) {
	for len(b) >= binary.Size(nlhdr{}) {
		var h nlhdr
		binary.Read(bytes.NewReader(b), binary.NativeEndian, &h)
		if int(h.Len) < binary.Size(h) || int(h.Len) > len(b) {
			return inodes, false, true
		}
		body := b[binary.Size(h):h.Len]
		b = b[min(int(h.Len+3)/4*4, len(b)):]
		if h.Seq != seq {
			continue
		}
		switch {
		case h.Type == unix.NLMSG_DONE:
			return inodes, true, false
		case h.Type == unix.NLMSG_ERROR:
			var e int32
			if binary.Read(bytes.NewReader(body), binary.NativeEndian, &e) == nil && e < 0 {
				return inodes, true, true
			}
			return inodes, true, false
		case h.Type == typ:
			var m diagMsg
			if binary.Read(bytes.NewReader(body), binary.NativeEndian, &m) != nil {
				return inodes, false, true
			}
			if m.State == tcpEstablished && m.Ino != 0 {
				inodes = append(inodes, uint64(m.Ino))
			}
		}
	}
	return inodes, false, false
}

// nlmsg builds one padded netlink message.
func nlmsg(typ uint16, seq uint32, payload []byte) []byte {
	var w bytes.Buffer
	binary.Write(&w, binary.NativeEndian, nlhdr{Len: uint32(16 + len(payload)), Type: typ, Flags: unix.NLM_F_MULTI, Seq: seq})
	w.Write(payload)
	for w.Len()%4 != 0 {
		w.WriteByte(0)
	}
	return w.Bytes()
}

func diag(state uint8, ino uint32) []byte {
	var w bytes.Buffer
	binary.Write(&w, binary.NativeEndian, diagMsg{Family: unix.AF_INET, State: state, Ino: ino})
	return w.Bytes()
}

func FuzzParseReply(f *testing.F) {
	const byFamily = unix.SOCK_DIAG_BY_FAMILY
	cat := func(bs ...[]byte) []byte { return slices.Concat(bs...) }
	errno := func(e int32) []byte { return binary.NativeEndian.AppendUint32(nil, uint32(e)) }
	for _, b := range [][]byte{
		nil,
		nlmsg(unix.NLMSG_DONE, 1, errno(0)),
		cat(nlmsg(byFamily, 1, diag(tcpEstablished, 48213)), nlmsg(byFamily, 1, diag(10, 1165)), nlmsg(unix.NLMSG_DONE, 1, errno(0))),
		cat(nlmsg(byFamily, 0, diag(tcpEstablished, 7)), nlmsg(byFamily, 1, diag(tcpEstablished, 0))),
		nlmsg(byFamily, 1, diag(tcpEstablished, 1)[:40]),
		nlmsg(unix.NLMSG_ERROR, 1, errno(-int32(unix.EINVAL))),
		nlmsg(tcpdiagGetsock, 1, diag(tcpEstablished, 9)),
		nlmsg(byFamily, 1, diag(tcpEstablished, 5))[:80], // cut short
		{1, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}, // length 1
	} {
		f.Add(b, uint32(1), false)
	}
	for _, b := range liveReplies(f) {
		f.Add(b, uint32(1), false)
	}
	var set, want InodeSet
	f.Fuzz(func(t *testing.T, b []byte, seq uint32, compat bool) {
		typ := uint16(byFamily)
		if compat {
			typ = tcpdiagGetsock
		}
		set.Reset()
		want.Reset()
		done, err := parseReply(b, seq, typ, &set)
		inodes, wantDone, bad := refReply(b, seq, typ)
		if done != wantDone || (err != nil) != bad {
			t.Fatalf("parseReply(%x) = done %v, err %v; reference done %v, bad %v", b, done, err, wantDone, bad)
		}
		for _, ino := range inodes {
			want.Add(ino)
		}
		if set.Len() != want.Len() {
			t.Fatalf("parseReply(%x) found %d inodes, reference %v", b, set.Len(), inodes)
		}
		for _, ino := range inodes {
			if !set.Has(ino) {
				t.Fatalf("parseReply(%x) missed inode %d", b, ino)
			}
		}
	})
}

// liveReplies sends the dump request of Dumper.dump for IPv4 and IPv6 to
// the running kernel, with sequence number 1, and returns the datagrams
// of its answers as they came. Nil where sock_diag is unavailable.
func liveReplies(f *testing.F) [][]byte {
	d, err := Open()
	if err != nil {
		f.Logf("no live seeds: %v", err)
		return nil
	}
	defer d.Close()
	var out [][]byte
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		d.seq = 0
		r := d.req[:sizeofNlmsghdr+sizeofReq]
		clear(r)
		ne := binary.NativeEndian
		ne.PutUint32(r[0:], uint32(len(r)))
		ne.PutUint16(r[4:], unix.SOCK_DIAG_BY_FAMILY)
		ne.PutUint16(r[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
		ne.PutUint32(r[8:], 1)
		q := r[sizeofNlmsghdr:]
		q[0], q[1] = family, unix.IPPROTO_TCP
		ne.PutUint32(q[4:], 1<<tcpEstablished)
		if err := writeAll(d.fd, r); err != nil {
			return out
		}
		for range 100 {
			n, err := recv(d.fd, d.buf)
			if err != nil || n > len(d.buf) {
				return out
			}
			out = append(out, bytes.Clone(d.buf[:n]))
			var set InodeSet
			if done, err := parseReply(d.buf[:n], 1, unix.SOCK_DIAG_BY_FAMILY, &set); done || err != nil {
				break
			}
		}
	}
	return out
}
