package sockdiag

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/memwho/memwho/internal/proc"
)

// ErrMalformed means a /proc/net/tcp line did not have the kernel's
// layout.
var ErrMalformed = errors.New("malformed /proc/net/tcp line")

// The kernel prints each socket of /proc/net/tcp as (tcp4_seq_show,
// get_tcp4_sock in net/ipv4/tcp_ipv4.c)
//
//	"%4d: %08X:%04X %08X:%04X %02X %08X:%08X %02X:%08lX %08X %5u %8d %lu ..."
//
// and of /proc/net/tcp6 with 32 hex digits per address. After the slot
// number and ": " the addresses and the state sit at fixed columns, so
// ParseProcNet reads them there; only the inode, after five more
// space-padded numbers, is found by scanning. It splits no fields and
// allocates nothing.
const (
	addrLen4 = 8 + 1 + 4
	addrLen6 = 32 + 1 + 4
)

// ParseProcNet adds to set the inode of every ESTABLISHED socket listed
// in b, the contents of /proc/net/tcp (v6 false) or /proc/net/tcp6 (v6
// true). The first line (the header) is skipped.
func ParseProcNet(b []byte, v6 bool, set *InodeSet) error {
	addrLen := addrLen4
	if v6 {
		addrLen = addrLen6
	}
	// The header.
	nl := indexByte(b, '\n')
	if nl < 0 {
		return nil
	}
	b = b[nl+1:]
	for len(b) > 0 {
		nl := indexByte(b, '\n')
		var line []byte
		if nl < 0 {
			line, b = b, nil
		} else {
			line, b = b[:nl], b[nl+1:]
		}
		ino, ok, err := parseLine(line, addrLen)
		if err != nil {
			return err
		}
		if ok && ino != 0 {
			set.Add(ino)
		}
	}
	return nil
}

// parseLine returns the inode of an ESTABLISHED socket's line; ok is
// false for other states.
func parseLine(line []byte, addrLen int) (ino uint64, ok bool, err error) {
	// The slot number: "%4d:", wider from slot 10000 on.
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	d := i
	for i < len(line) && isDigit(line[i]) {
		i++
	}
	if i == d || i+1 >= len(line) || line[i] != ':' || line[i+1] != ' ' {
		return 0, false, ErrMalformed
	}
	r := line[i+2:]
	stateAt := 2*addrLen + 2
	if len(r) < stateAt+3 || r[addrLen] != ' ' || r[2*addrLen+1] != ' ' || r[stateAt+2] != ' ' {
		return 0, false, ErrMalformed
	}
	if !isAddr(r[:addrLen]) || !isAddr(r[addrLen+1:2*addrLen+1]) {
		return 0, false, ErrMalformed
	}
	hi, lo := unhex(r[stateAt]), unhex(r[stateAt+1])
	if hi < 0 || lo < 0 {
		return 0, false, ErrMalformed
	}
	// Five numbers follow the state before the inode: tx:rx queues,
	// timer:expiry, retransmits, uid, timeout.
	r = r[stateAt+2:]
	for range 5 {
		var n int
		if r, n = skipToken(r); n == 0 {
			return 0, false, ErrMalformed
		}
	}
	r, _ = skipSpaces(r)
	var v uint64
	n := 0
	for n < len(r) && isDigit(r[n]) {
		d := uint64(r[n] - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false, ErrMalformed
		}
		v = v*10 + d
		n++
	}
	if n == 0 || n < len(r) && r[n] != ' ' {
		return 0, false, ErrMalformed
	}
	return v, hi<<4|lo == tcpEstablished, nil
}

// skipToken skips spaces and then one token of the characters the
// kernel prints in these columns (hex digits, ':' and '-'); n is the
// token's length, 0 when there is none or it holds anything else.
func skipToken(b []byte) ([]byte, int) {
	b, _ = skipSpaces(b)
	n := 0
	for n < len(b) && b[n] != ' ' {
		c := b[n]
		if unhex(c) < 0 && c != ':' && c != '-' {
			return b, 0
		}
		n++
	}
	return b[n:], n
}

func skipSpaces(b []byte) ([]byte, int) {
	n := 0
	for n < len(b) && b[n] == ' ' {
		n++
	}
	return b[n:], n
}

// isAddr checks "HEX:PORT" with the colon before the 4-digit port.
func isAddr(a []byte) bool {
	for i, c := range a {
		if i == len(a)-5 {
			if c != ':' {
				return false
			}
			continue
		}
		if unhex(c) < 0 {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// ReadProcNet adds the ESTABLISHED sockets of net/tcp and net/tcp6 of
// the procfs tree fs to set. On a real procfs, whose net/ is a symbolic
// link to self/net (which fs will not follow), it reads them through
// memwho's own process directory. buf is scratch space, grown as needed
// and returned for reuse. A missing tcp6 (IPv6 disabled) is not an error.
func ReadProcNet(fs *proc.FS, set *InodeSet, buf []byte) ([]byte, error) {
	dir := "net/"
	if fs.IsProcfsRoot() {
		dir = strconv.Itoa(os.Getpid()) + "/net/"
	}
	for _, f := range [...]struct {
		name string
		v6   bool
	}{{"tcp", false}, {"tcp6", true}} {
		var err error
		buf, err = fs.ReadFile(dir+f.name, buf, proc.MaxFileSize)
		if err != nil {
			if f.v6 && (err == proc.ErrNotExist || err == proc.ErrGone) {
				continue
			}
			return buf, fmt.Errorf("read %s/%s%s: %w", fs.Root(), dir, f.name, err)
		}
		if err := ParseProcNet(buf, f.v6, set); err != nil {
			return buf, fmt.Errorf("parse %s/%s%s: %w", fs.Root(), dir, f.name, err)
		}
	}
	return buf, nil
}
