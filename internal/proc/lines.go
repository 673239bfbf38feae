package proc

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// The "Key:   value" files (status, meminfo, smaps, smaps_rollup) share
// one scanner. Each parser loops
//
//	for len(b) > 0 {
//		var key, val []byte
//		key, val, b = cutKey(b)
//		switch string(key) { ... default: continue }
//	}
//
// and owns only its switch: which keys it wants, and what it requires.

// wholeLines reports whether b is a non-empty file whose last line is
// complete. A file that ends mid-line was cut short, and the number on its
// last line may have lost digits.
func wholeLines(b []byte) bool {
	return len(b) > 0 && b[len(b)-1] == '\n'
}

// cutKey cuts the first line off b and splits it at its first colon: key
// is what comes before, val what follows (with its blanks and unit), rest
// the lines after. A line with no colon, or nothing before it, gives a nil
// key, which matches no case of a parser's switch. The slices alias b.
//
// It takes and returns the slice rather than being a method on a scanner
// so that b stays in registers. A method, or two IndexByte calls a line
// in a function the compiler cannot inline, made the parsers 7-40%
// slower than the loop each used to write out; this one, with colonIndex,
// parses status as fast as that loop and meminfo and smaps 6-12% faster
// (docs/performance.md).
func cutKey(b []byte) (key, val, rest []byte) {
	line := b
	if nl := bytes.IndexByte(b, '\n'); nl >= 0 {
		line, rest = b[:nl], b[nl+1:]
	}
	if c := colonIndex(line); c > 0 {
		return line[:c], line[c+1:], rest
	}
	return nil, nil, rest
}

// colonIndex is bytes.IndexByte(line, ':') for the short keys of /proc
// files: it tests 8 bytes at a time in a register, where a call to the
// vector search costs more than the search (a key is 3 to 26 bytes).
func colonIndex(line []byte) int {
	const ones, highs, colons = 0x0101010101010101, 0x8080808080808080, ':' * 0x0101010101010101
	i := 0
	for ; i+8 <= len(line); i += 8 {
		// A zero byte of w is a colon of line. (w-ones)&^w has the high
		// bit set in its lowest zero byte; bits above it may be wrong,
		// so only the lowest set bit counts.
		w := binary.LittleEndian.Uint64(line[i:]) ^ colons
		if m := (w - ones) &^ w & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(line); i++ {
		if line[i] == ':' {
			return i
		}
	}
	return -1
}
