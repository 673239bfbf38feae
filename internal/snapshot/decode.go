package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

// Decode decodes one message, the whole of b, into s. It is DecodeMeta
// without the Meta.
func Decode(b []byte, s *sample.Snapshot) error {
	_, err := DecodeMeta(b, s)
	return err
}

// DecodeMeta decodes one message, the whole of b, into s and returns its
// Meta. It reuses s.Procs's backing array when it is large enough; the
// decoded strings do not alias b. On error, s holds an unspecified part
// of the message.
//
// The errors wrap ErrVersion for a newer format, ErrMalformed otherwise.
func DecodeMeta(b []byte, s *sample.Snapshot) (Meta, error) {
	var m Meta
	n, err := checkHeader(b)
	if err != nil {
		return m, err
	}
	if n != len(b)-headerLen {
		if n > len(b)-headerLen {
			return m, malformed("cut short: %d bytes of %d", len(b), headerLen+n)
		}
		return m, malformed("%d bytes after the end of the snapshot", len(b)-headerLen-n)
	}

	// Find the sections first: the string table follows the columns
	// that refer to it.
	var secs [maxKnownTag + 1][]byte
	var seen [maxKnownTag + 1]bool
	rest := b[headerLen:]
	last := uint64(0)
	for len(rest) > 0 {
		tag, k := binary.Uvarint(rest)
		if k <= 0 {
			return m, malformed("bad section tag at byte %d", len(b)-len(rest))
		}
		if tag == 0 {
			return m, malformed("section tag 0 at byte %d", len(b)-len(rest))
		}
		if tag <= last {
			return m, malformed("section %d after section %d (tags must ascend)", tag, last)
		}
		last = tag
		rest = rest[k:]
		if len(rest) < 4 {
			return m, malformed("section %d: cut short", tag)
		}
		size := binary.LittleEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(size) > uint64(len(rest)) {
			return m, malformed("section %d: %d bytes, %d left", tag, size, len(rest))
		}
		if tag <= maxKnownTag {
			secs[tag], seen[tag] = rest[:size:size], true
		}
		// Unknown sections are later additions: skipped.
		rest = rest[size:]
	}
	for _, tag := range [...]int{tagInfo, tagPID, tagPPID, tagStartTime, tagUID, tagName, tagComm,
		tagExe, tagScript, tagCgroup, tagRAM, tagPrivate, tagShared, tagSwap, tagConns, tagState} {
		if !seen[tag] {
			return m, malformed("no %s section", tagNames[tag])
		}
	}

	// info
	r := reader{b: secs[tagInfo], tag: tagInfo}
	t := r.time()
	nprocs := r.uvarint()
	var counts [5]int
	for i := range counts {
		counts[i] = int(r.varint())
	}
	flags := r.byte()
	if err := r.end(); err != nil {
		return m, err
	}
	if flags&^(infoMeminfoOK|infoConnsOK) != 0 {
		return m, malformed("info: unknown flags %#x", flags)
	}
	// Every process takes one byte of each column at least (the
	// state column exactly one): the count is checked against them all
	// before anything is allocated for it, so that a message cannot
	// claim more memory than it pays for.
	if nprocs > MaxProcs || nprocs != uint64(len(secs[tagState])) {
		return m, malformed("info: %d processes, state column of %d", nprocs, len(secs[tagState]))
	}
	for tag := tagPID; tag < tagState; tag++ {
		need := nprocs
		if tag >= tagRAM && tag <= tagSwap {
			need++ // the shift byte
		}
		if uint64(len(secs[tag])) < need {
			return m, malformed("%s: %d bytes for %d processes", tagNames[tag], len(secs[tag]), nprocs)
		}
	}
	procs := s.Procs[:0]
	*s = sample.Snapshot{
		Time: t, MeminfoOK: flags&infoMeminfoOK != 0, ConnsOK: flags&infoConnsOK != 0,
		Gone: counts[0], Denied: counts[1], Kernel: counts[2], Broken: counts[3], Malformed: counts[4],
	}

	if seen[tagMeminfo] {
		r = reader{b: secs[tagMeminfo], tag: tagMeminfo}
		mi := &s.Meminfo
		for _, p := range [...]*uint64{&mi.MemTotal, &mi.MemFree, &mi.MemAvailable, &mi.Buffers, &mi.Cached,
			&mi.Shmem, &mi.SwapTotal, &mi.SwapFree, &mi.SwapCached, &mi.Hugetlb} {
			*p = r.uvarint()
		}
		mi.Available = sample.AvailableSource(r.byte())
		if err := r.end(); err != nil {
			return m, err
		}
		if mi.Available > sample.AvailableUpperBound {
			return m, malformed("meminfo: unknown available source %d", mi.Available)
		}
	}
	if seen[tagMeminfoErr] {
		s.MeminfoErr = errors.New(string(secs[tagMeminfoErr]))
	}
	if seen[tagTaken] {
		r = reader{b: secs[tagTaken], tag: tagTaken}
		m.Taken = r.time()
		if err := r.end(); err != nil {
			return m, err
		}
	}

	if seen[tagKernel] {
		r = reader{b: secs[tagKernel], tag: tagKernel}
		mi := &s.Meminfo
		for _, p := range [...]*uint64{&mi.SReclaimable, &mi.SUnreclaim, &mi.KernelStack, &mi.PageTables,
			&mi.VmallocUsed, &mi.Percpu, &mi.Zswap, &mi.Zram} {
			*p = r.uvarint()
		}
		if err := r.end(); err != nil {
			return m, err
		}
	}

	if seen[tagLedger] {
		r = reader{b: secs[tagLedger], tag: tagLedger}
		mi := &s.Meminfo
		for _, p := range [...]*uint64{&mi.KReclaimable, &mi.Zswapped, &mi.AnonPages, &mi.HardwareCorrupted, &mi.Unaccepted, &mi.PCPFree} {
			*p = r.uvarint()
		}
		if err := r.end(); err != nil {
			return m, err
		}
	}

	if seen[tagBefore] {
		r = reader{b: secs[tagBefore], tag: tagBefore}
		span := r.uvarint()
		if span > math.MaxInt64 {
			return m, malformed("before: span %d", span)
		}
		s.BeforeSpan, s.BeforeOK = time.Duration(span), true
		b := &s.Before
		for _, p := range allFigures(b) {
			*p = r.uvarint()
		}
		b.Available = sample.AvailableSource(r.byte())
		if err := r.end(); err != nil {
			return m, err
		}
		if b.Available > sample.AvailableUpperBound {
			return m, malformed("before: unknown available source %d", b.Available)
		}
	}

	if seen[tagStale] {
		r = reader{b: secs[tagStale], tag: tagStale}
		s.Oldest = r.time()
		s.StaleBound = r.uvarint()
		if err := r.end(); err != nil {
			return m, err
		}
	}

	// The string table: one string for all its bytes, entries are
	// slices of it.
	st := tables.Get().(*table)
	defer st.put()
	if err := st.parse(secs[tagStrings]); err != nil {
		return m, err
	}

	n = int(nprocs)
	if cap(procs) >= n {
		// Nothing of the snapshot s held stays: the optional columns
		// below are skipped when absent, and left the previous values
		// on whichever process now stands at their index.
		procs = procs[:n]
		clear(procs)
	} else {
		procs = make([]sample.Process, n)
	}
	s.Procs = procs

	r = reader{b: secs[tagPID], tag: tagPID}
	prev := int64(0)
	for i := range procs {
		prev += r.varint()
		procs[i].PID = int(prev)
	}
	if err := r.end(); err != nil {
		return m, err
	}

	r = reader{b: secs[tagPPID], tag: tagPPID}
	for i := range procs {
		procs[i].PPID = int(r.varint())
	}
	if err := r.end(); err != nil {
		return m, err
	}

	r = reader{b: secs[tagStartTime], tag: tagStartTime}
	var start uint64
	for i := range procs {
		start += uint64(r.varint())
		procs[i].StartTime = start
	}
	if err := r.end(); err != nil {
		return m, err
	}

	r = reader{b: secs[tagUID], tag: tagUID}
	for i := range procs {
		v := r.uvarint()
		if v > math.MaxUint32 {
			return m, malformed("uid: %d out of range", v)
		}
		procs[i].UID = uint32(v)
	}
	if err := r.end(); err != nil {
		return m, err
	}

	for _, tag := range strTags {
		if !seen[tag] {
			continue // optional (tagSystemdCgroup); the required ones were checked
		}
		r = reader{b: secs[tag], tag: tag}
		for i := range procs {
			idx := r.uvarint()
			if idx >= uint64(len(st.off)) {
				if r.err != nil {
					break
				}
				return m, malformed("%s: string %d of %d", tagNames[tag], idx, len(st.off))
			}
			*stringField(&procs[i], tag) = st.get(idx)
		}
		if err := r.end(); err != nil {
			return m, err
		}
	}

	for tag := tagRAM; tag <= tagSwapBound; tag++ {
		if tag > tagSwap && tag < tagPssAnon {
			tag = tagPssAnon
		}
		if !seen[tag] {
			continue // optional (tagPssAnon...); the required ones were checked
		}
		if uint64(len(secs[tag])) < nprocs+1 {
			return m, malformed("%s: %d bytes for %d processes", tagNames[tag], len(secs[tag]), nprocs)
		}
		r = reader{b: secs[tag], tag: tag}
		shift := uint(r.byte())
		if shift > 63 {
			return m, malformed("%s: shift %d", tagNames[tag], shift)
		}
		limit := uint64(math.MaxUint64) >> shift
		for i := range procs {
			v := r.uvarint()
			if v > limit {
				return m, malformed("%s: %d<<%d out of range", tagNames[tag], v, shift)
			}
			*figureField(&procs[i], tag) = v << shift
		}
		if err := r.end(); err != nil {
			return m, err
		}
	}

	r = reader{b: secs[tagConns], tag: tagConns}
	for i := range procs {
		v := r.uvarint()
		if v > math.MaxUint32 {
			return m, malformed("conns: %d out of range", v)
		}
		procs[i].Conns = uint32(v)
	}
	if err := r.end(); err != nil {
		return m, err
	}

	for i, b := range secs[tagState] {
		cause := sample.Cause(b >> stCauseShift & 3)
		if b&stUnused != 0 || cause > sample.CauseMalformed {
			return m, malformed("state: unknown bits %#x", b)
		}
		p := &procs[i]
		p.UIDKnown = b&stUIDKnown != 0
		p.ExeDeleted = b&stExeDeleted != 0
		p.SwapPssMissing = b&stSwapPssMissing != 0
		p.Accuracy = sample.Accuracy(b >> stAccuracyShift & 1)
		p.Cause = cause
		if p.Bound > 0 || p.SwapBound > 0 {
			if p.Accuracy != sample.Estimate || cause != sample.CauseNone {
				return m, malformed("pid %d: a bound on figures that are not estimates read page by page", p.PID)
			}
			p.Cause = sample.CausePaced
		}
	}
	return m, nil
}

// checkHeader checks the header at the start of b and returns the
// length it gives for the rest of the message.
func checkHeader(b []byte) (int, error) {
	// Magic and version are the same in every version; what follows
	// them depends on the version.
	if len(b) < len(magic)+1 {
		if string(b) == magic[:len(b)] {
			return 0, malformed("cut short: %d bytes", len(b))
		}
		return 0, malformed("not a memwho snapshot")
	}
	if string(b[:len(magic)]) != magic {
		return 0, malformed("not a memwho snapshot")
	}
	switch v := b[len(magic)]; {
	case v == 0:
		return 0, malformed("version 0")
	case v > Version:
		return 0, fmt.Errorf("%w: format version %d is newer than this memwho reads (%d): upgrade memwho", ErrVersion, v, Version)
	}
	if len(b) < headerLen {
		return 0, malformed("cut short: %d bytes", len(b))
	}
	n := binary.LittleEndian.Uint32(b[headerLen-4:])
	if uint64(n) > MaxSize-uint64(headerLen) {
		return 0, malformed("%d bytes, more than the %d a snapshot may have", uint64(n)+uint64(headerLen), MaxSize)
	}
	return int(n), nil
}

// reader reads the values of one section; the first error sticks and
// later reads return zero.
type reader struct {
	b   []byte
	off int
	tag int
	err error
}

func (r *reader) uvarint() uint64 {
	// Most values are one byte: keep that path small enough to inline.
	if r.off < len(r.b) && r.b[r.off] < 0x80 {
		r.off++
		return uint64(r.b[r.off-1])
	}
	return r.uvarintSlow()
}

func (r *reader) uvarintSlow() uint64 {
	v, k := binary.Uvarint(r.b[r.off:])
	if k <= 0 {
		if r.err == nil {
			r.err = malformed("%s: bad or missing number at byte %d", tagNames[r.tag], r.off)
		}
		return 0
	}
	r.off += k
	return v
}

func (r *reader) varint() int64 {
	if r.off < len(r.b) && r.b[r.off] < 0x80 {
		r.off++
		x := int64(r.b[r.off-1])
		return x>>1 ^ -(x & 1)
	}
	return r.varintSlow()
}

func (r *reader) varintSlow() int64 {
	// binary.Varint's zigzag, on the one uvarint reader.
	u := r.uvarintSlow()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *reader) byte() byte {
	if r.off >= len(r.b) {
		if r.err == nil {
			r.err = malformed("%s: cut short", tagNames[r.tag])
		}
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *reader) time() time.Time {
	sec := r.varint()
	nsec := r.uvarint()
	if nsec >= 1e9 && r.err == nil {
		r.err = malformed("%s: %d nanoseconds", tagNames[r.tag], nsec)
	}
	return time.Unix(sec, int64(nsec))
}

// end returns the first error, or an error when bytes are left over.
func (r *reader) end() error {
	if r.err == nil && r.off != len(r.b) {
		r.err = malformed("%s: %d bytes left over", tagNames[r.tag], len(r.b)-r.off)
	}
	return r.err
}

// table is a decoded string table: entry i (from 1) is
// all[off[i-1]:off[i]] minus its length prefix; see get.
type table struct {
	all string
	// off[i] is where entry i's bytes start in all, end[i] where they
	// end; entry 0 is "".
	off, end []uint32
}

var tables = sync.Pool{New: func() any { return new(table) }}

func (t *table) parse(b []byte) error {
	t.off = append(t.off[:0], 0)
	t.end = append(t.end[:0], 0)
	if len(b) == 0 {
		t.all = ""
		return nil
	}
	t.all = string(b)
	for pos := 0; pos < len(b); {
		n, k := binary.Uvarint(b[pos:])
		// Entries are not empty ("" is entry 0), so each takes two
		// bytes at least and the index grows with the input.
		if k <= 0 || n == 0 || n > uint64(len(b)-pos-k) {
			return malformed("strings: bad entry %d at byte %d", len(t.off), pos)
		}
		pos += k
		t.off = append(t.off, uint32(pos))
		pos += int(n)
		t.end = append(t.end, uint32(pos))
	}
	return nil
}

func (t *table) get(i uint64) string { return t.all[t.off[i]:t.end[i]] }

func (t *table) put() {
	t.all = ""
	if cap(t.off) > 1<<16 {
		return
	}
	tables.Put(t)
}
