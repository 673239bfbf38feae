package proc

import "bytes"

// VMA is one line of /proc/PID/maps: a mapping of the process's address
// space. Name aliases the buffer the line was parsed from.
type VMA struct {
	Start, End uint64 // addresses, End exclusive
	// Shared is the mapping's fourth permission letter 's' (MAP_SHARED):
	// its pages live in the page cache or in shmem, not in anonymous
	// memory.
	Shared   bool
	Offset   uint64 // file offset in bytes
	Major    uint32 // device of the mapped file, 0 for anonymous mappings
	Minor    uint32
	Inode    uint64
	Name     []byte // the path, or [heap], [stack], [vdso]..., or empty
	ReadOnly bool   // no 'w' permission
	// NoAccess is "---": a reservation of address space (a heap's
	// uncommitted part, a guard region), which rarely holds pages.
	NoAccess bool
}

// Size returns the mapping's length in bytes.
func (v *VMA) Size() uint64 { return v.End - v.Start }

// Maps reads /proc/PID/maps of the process Select or Open chose. The
// result aliases the Reader's buffer: parse it with NextVMA before the
// next read. The kernel prints maps without walking page tables (and
// since Linux 6.17 under per-mapping locks), so reading it never stops
// the process for long.
func (r *Reader) Maps() ([]byte, error) {
	b, err := r.readFile(r.pidfd, "maps\x00", false)
	if err == ErrNoMM || err == nil && len(b) == 0 {
		// A process without an address space prints nothing.
		return nil, ErrNoMM
	}
	return b, err
}

// NextVMA parses the first line of b, a /proc/PID/maps text, into v and
// returns the lines after it. It returns ErrMalformed for a line that is
// not "start-end perms offset major:minor inode [name]" with hex
// addresses, start below end, and a trailing newline.
func NextVMA(b []byte, v *VMA) (rest []byte, err error) {
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return nil, ErrMalformed
	}
	line, rest := b[:nl], b[nl+1:]
	var ok bool
	var n int
	if v.Start, n, ok = parseHex(line); !ok || n >= len(line) || line[n] != '-' {
		return nil, ErrMalformed
	}
	line = line[n+1:]
	if v.End, n, ok = parseHex(line); !ok || v.End <= v.Start || n+6 > len(line) || line[n] != ' ' {
		return nil, ErrMalformed
	}
	perms := line[n+1 : n+5]
	if line[n+5] != ' ' || perms[3] != 's' && perms[3] != 'p' {
		return nil, ErrMalformed
	}
	v.Shared = perms[3] == 's'
	v.ReadOnly = perms[1] != 'w'
	v.NoAccess = perms[0] == '-' && perms[1] == '-' && perms[2] == '-'
	line = line[n+6:]
	if v.Offset, n, ok = parseHex(line); !ok || n >= len(line) || line[n] != ' ' {
		return nil, ErrMalformed
	}
	line = line[n+1:]
	var maj, min uint64
	if maj, n, ok = parseHex(line); !ok || n >= len(line) || line[n] != ':' || maj > 1<<32-1 {
		return nil, ErrMalformed
	}
	line = line[n+1:]
	if min, n, ok = parseHex(line); !ok || n >= len(line) || line[n] != ' ' || min > 1<<32-1 {
		return nil, ErrMalformed
	}
	v.Major, v.Minor = uint32(maj), uint32(min)
	line = line[n+1:]
	if v.Inode, n, ok = parseUint(line); !ok || n < len(line) && line[n] != ' ' {
		return nil, ErrMalformed
	}
	line = line[n:]
	for len(line) > 0 && line[0] == ' ' {
		line = line[1:]
	}
	v.Name = line
	return rest, nil
}

// parseHex parses leading lowercase or uppercase hex digits (at most 16),
// reporting how many bytes it used.
func parseHex(b []byte) (v uint64, n int, ok bool) {
	for n < len(b) {
		c := b[n]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return v, n, n > 0
		}
		if n == 16 {
			return 0, 0, false
		}
		v = v<<4 | uint64(d)
		n++
	}
	return v, n, n > 0
}
