package snapshot

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

// Encode appends the encoding of s to dst and returns the extended
// buffer. It is EncodeMeta with no Meta.
func Encode(dst []byte, s *sample.Snapshot) []byte {
	return EncodeMeta(dst, s, Meta{})
}

// EncodeMeta appends the encoding of s and m to dst and returns the
// extended buffer. In steady state (dst large enough) it allocates
// nothing: the string table's scratch space is pooled.
//
// The result exceeds MaxSize, and no decoder accepts it, only past about
// two million processes; callers that serve it check len. Values outside
// the constants a sampler produces are written as one of them: Accuracy
// other than Exact as Estimate, Cause past CauseMalformed as CauseNone,
// Meminfo.Available past AvailableUpperBound as AvailableKernel.
func EncodeMeta(dst []byte, s *sample.Snapshot, m Meta) []byte {
	e := encoders.Get().(*encoder)
	defer e.put()

	base := len(dst)
	dst = append(dst, magic...)
	dst = append(dst, Version, 0, 0, 0, 0)

	at := beginSection(&dst, tagInfo)
	dst = appendTime(dst, s.Time)
	dst = binary.AppendUvarint(dst, uint64(len(s.Procs)))
	for _, n := range [...]int{s.Gone, s.Denied, s.Kernel, s.Broken, s.Malformed} {
		dst = binary.AppendVarint(dst, int64(n))
	}
	var flags byte
	if s.MeminfoOK {
		flags |= infoMeminfoOK
	}
	if s.ConnsOK {
		flags |= infoConnsOK
	}
	dst = append(dst, flags)
	endSection(dst, at)

	if s.Meminfo != (sample.Meminfo{}) {
		mi := &s.Meminfo
		at = beginSection(&dst, tagMeminfo)
		for _, v := range [...]uint64{mi.MemTotal, mi.MemFree, mi.MemAvailable, mi.Buffers, mi.Cached,
			mi.Shmem, mi.SwapTotal, mi.SwapFree, mi.SwapCached, mi.Hugetlb} {
			dst = binary.AppendUvarint(dst, v)
		}
		avail := mi.Available
		if avail > sample.AvailableUpperBound {
			avail = sample.AvailableKernel
		}
		dst = append(dst, byte(avail))
		endSection(dst, at)
	}
	if s.MeminfoErr != nil {
		at = beginSection(&dst, tagMeminfoErr)
		dst = append(dst, s.MeminfoErr.Error()...)
		endSection(dst, at)
	}
	if !m.Taken.IsZero() {
		at = beginSection(&dst, tagTaken)
		dst = appendTime(dst, m.Taken)
		endSection(dst, at)
	}
	if k := kernelFigures(&s.Meminfo); k != [len(k)]uint64{} {
		at = beginSection(&dst, tagKernel)
		for _, v := range k {
			dst = binary.AppendUvarint(dst, v)
		}
		endSection(dst, at)
	}
	if s.StaleBound != 0 {
		at = beginSection(&dst, tagStale)
		dst = appendTime(dst, s.Oldest)
		dst = binary.AppendUvarint(dst, s.StaleBound)
		endSection(dst, at)
	}

	procs := s.Procs
	at = beginSection(&dst, tagPID)
	prev := int64(0)
	for i := range procs {
		v := int64(procs[i].PID)
		dst = binary.AppendVarint(dst, v-prev)
		prev = v
	}
	endSection(dst, at)

	at = beginSection(&dst, tagPPID)
	for i := range procs {
		dst = binary.AppendVarint(dst, int64(procs[i].PPID))
	}
	endSection(dst, at)

	at = beginSection(&dst, tagStartTime)
	var prevStart uint64
	for i := range procs {
		v := procs[i].StartTime
		dst = binary.AppendVarint(dst, int64(v-prevStart))
		prevStart = v
	}
	endSection(dst, at)

	at = beginSection(&dst, tagUID)
	for i := range procs {
		dst = binary.AppendUvarint(dst, uint64(procs[i].UID))
	}
	endSection(dst, at)

	idx := e.indexAll(procs)
	// Tags ascend: the systemd cgroup column, added later, comes after
	// the state section.
	stringColumn := func(j int) {
		at := beginSection(&dst, uint64(strTags[j]))
		for i := j; i < len(idx); i += nstr {
			dst = binary.AppendUvarint(dst, uint64(idx[i]))
		}
		endSection(dst, at)
	}
	for j, tag := range strTags {
		if tag != tagSystemdCgroup {
			stringColumn(j)
		}
	}

	figureColumn := func(tag uint64, optional bool) {
		// Figures are in bytes but counted in kB or pages: the
		// column's common trailing zeros are written once.
		var or uint64
		for i := range procs {
			or |= figure(&procs[i], tag)
		}
		if optional && or == 0 {
			return
		}
		shift := uint(bits.TrailingZeros64(or)) & 63 // all zero: 64 → 0
		at := beginSection(&dst, tag)
		dst = append(dst, byte(shift))
		for i := range procs {
			dst = binary.AppendUvarint(dst, figure(&procs[i], tag)>>shift)
		}
		endSection(dst, at)
	}
	for tag := uint64(tagRAM); tag <= tagSwap; tag++ {
		figureColumn(tag, false)
	}

	at = beginSection(&dst, tagConns)
	for i := range procs {
		dst = binary.AppendUvarint(dst, uint64(procs[i].Conns))
	}
	endSection(dst, at)

	at = beginSection(&dst, tagState)
	for i := range procs {
		dst = append(dst, stateByte(&procs[i]))
	}
	endSection(dst, at)
	if anySystemdCgroup(procs) {
		stringColumn(len(strTags) - 1)
	}
	for tag := uint64(tagPssAnon); tag <= tagSwapBound; tag++ {
		figureColumn(tag, true)
	}

	if len(e.strs) > 0 {
		at = beginSection(&dst, tagStrings)
		dst = append(dst, e.strs...)
		endSection(dst, at)
	}

	binary.LittleEndian.PutUint32(dst[base+headerLen-4:], uint32(len(dst)-base-headerLen))
	return dst
}

func figure(p *sample.Process, tag uint64) uint64 { return *figureField(p, int(tag)) }

// figureField is the field of p that figure column tag holds: one
// mapping for the encoder and the decoder.
func figureField(p *sample.Process, tag int) *uint64 {
	switch tag {
	case tagRAM:
		return &p.RAM
	case tagPrivate:
		return &p.Private
	case tagShared:
		return &p.Shared
	case tagPssAnon:
		return &p.PssAnon
	case tagPssFile:
		return &p.PssFile
	case tagPssShmem:
		return &p.PssShmem
	case tagPrivateHugetlb:
		return &p.PrivateHugetlb
	case tagBound:
		return &p.Bound
	case tagSwapBound:
		return &p.SwapBound
	}
	return &p.Swap
}

// stringField is the field of p that string column tag holds.
func stringField(p *sample.Process, tag int) *string {
	switch tag {
	case tagName:
		return &p.Name
	case tagComm:
		return &p.Comm
	case tagExe:
		return &p.Exe
	case tagScript:
		return &p.Script
	case tagCgroup:
		return &p.Cgroup
	}
	return &p.SystemdCgroup
}

// kernelFigures are the values of the kernel section, in its order.
func kernelFigures(m *sample.Meminfo) [8]uint64 {
	return [...]uint64{m.SReclaimable, m.SUnreclaim, m.KernelStack, m.PageTables,
		m.VmallocUsed, m.Percpu, m.Zswap, m.Zram}
}

func stateByte(p *sample.Process) byte {
	var b byte
	if p.UIDKnown {
		b |= stUIDKnown
	}
	if p.ExeDeleted {
		b |= stExeDeleted
	}
	if p.SwapPssMissing {
		b |= stSwapPssMissing
	}
	if p.Accuracy != sample.Exact {
		b |= 1 << stAccuracyShift
	}
	if p.Cause <= sample.CauseMalformed {
		b |= byte(p.Cause) << stCauseShift
	}
	return b
}

func appendTime(dst []byte, t time.Time) []byte {
	dst = binary.AppendVarint(dst, t.Unix())
	return binary.AppendUvarint(dst, uint64(t.Nanosecond()))
}

// beginSection appends a section's tag and a placeholder for its
// length, and returns where its payload starts.
func beginSection(dst *[]byte, tag uint64) int {
	*dst = binary.AppendUvarint(*dst, tag)
	*dst = append(*dst, 0, 0, 0, 0)
	return len(*dst)
}

// endSection fills in the length of the section whose payload starts at
// at.
func endSection(dst []byte, at int) {
	binary.LittleEndian.PutUint32(dst[at-4:], uint32(len(dst)-at))
}

// encoder is the string table under construction.
type encoder struct {
	index map[string]uint32 // string → index; "" is 0 and not stored
	strs  []byte            // the table's payload: uvarint length, bytes
	idx   []uint32          // nstr string indexes per process
}

// nstr is the number of string fields of a process (strTags).
const nstr = len(strTags)

// anySystemdCgroup reports whether a process has a SystemdCgroup: the
// column is left out otherwise.
func anySystemdCgroup(procs []sample.Process) bool {
	for i := range procs {
		if procs[i].SystemdCgroup != "" {
			return true
		}
	}
	return false
}

// indexAll interns the strings of procs and returns their indexes, nstr
// per process.
func (e *encoder) indexAll(procs []sample.Process) []uint32 {
	idx := slices.Grow(e.idx[:0], nstr*len(procs))[:nstr*len(procs)]
	var prev [nstr]string
	var prevIdx [nstr]uint32
	for i := range procs {
		p := &procs[i]
		f := [nstr]string{p.Name, p.Comm, p.Exe, p.Script, p.Cgroup, p.SystemdCgroup}
		out := idx[i*nstr : i*nstr+nstr : i*nstr+nstr]
	fields:
		for j, v := range f {
			// The map is most of the cost: a process's name is
			// often its comm or exe, and neighbours often share a
			// program or cgroup.
			switch {
			case v == "":
				out[j] = 0
				continue
			case v == prev[j]:
				out[j] = prevIdx[j]
				continue
			}
			for k := range j {
				if f[k] == v {
					out[j] = out[k]
					continue fields
				}
			}
			out[j] = e.intern(v)
		}
		prev = f
		copy(prevIdx[:], out)
	}
	e.idx = idx
	return idx
}

var encoders = sync.Pool{New: func() any {
	return &encoder{index: make(map[string]uint32)}
}}

func (e *encoder) intern(s string) uint32 {
	if i, ok := e.index[s]; ok {
		return i
	}
	i := uint32(len(e.index) + 1)
	e.index[s] = i
	e.strs = binary.AppendUvarint(e.strs, uint64(len(s)))
	e.strs = append(e.strs, s...)
	return i
}

func (e *encoder) put() {
	// A table from a huge snapshot is not kept for every later one.
	if len(e.index) > 1<<16 || cap(e.strs) > 4<<20 || cap(e.idx) > nstr<<16 {
		return
	}
	clear(e.index)
	e.strs = e.strs[:0]
	encoders.Put(e)
}
