package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// The rpm nfpm writes (through rpmpack) lacks what rpmbuild gives every
// package and that nfpm has no setting for: its payload holds absolute
// paths (so "rpm2cpio x.rpm | cpio -id", as rpmlint and people run it,
// writes into /), it cannot carry file capabilities (%caps), and its
// requirements can be ordered before %post only, not %pre. finishRPM
// rewrites those parts of the package and its digests; the rest stays
// nfpm's bytes.

// rpmOptions are what finishRPM adds.
type rpmOptions struct {
	// Caps maps an installed path to its capabilities in cap_to_text
	// form ("cap_sys_ptrace=ep"), as %caps(...) in a spec file.
	Caps map[string]string
	// PreRequires are requirements (already in the package) that %pre
	// needs: Requires(pre).
	PreRequires []string
	// Order are packages whose scriptlets are ordered before this
	// package's %post, %preun and %postun when they are installed,
	// without requiring them (Fedora's %systemd_ordering for systemd).
	Order []string
}

// Header tags and types (rpm's lib/rpmtag.h).
const (
	tagSigHeader    = 62
	tagImmutable    = 63
	tagSigSize      = 1000
	tagSigSHA256    = 273
	tagSigPayload   = 1007
	tagDirIndexes   = 1116
	tagBaseNames    = 1117
	tagDirNames     = 1118
	tagRequireFlags = 1048
	tagRequireName  = 1049
	tagRequireVer   = 1050
	tagFileCaps     = 5010
	tagOrderName    = 5035
	tagOrderVersion = 5036
	tagOrderFlags   = 5037
	tagPayloadDig   = 5092

	typeInt16       = 3
	typeInt32       = 4
	typeInt64       = 5
	typeString      = 6
	typeBin         = 7
	typeStringArray = 8
	typeI18N        = 9

	senseLess         = 1 << 1
	senseEqual        = 1 << 3
	senseScriptPre    = 1 << 9
	senseScriptPost   = 1 << 10
	senseScriptPreun  = 1 << 11
	senseScriptPostun = 1 << 12
	senseRPMLib       = 1 << 24
)

const leadSize = 96

var headerMagic = []byte{0x8e, 0xad, 0xe8, 0x01, 0, 0, 0, 0}

type entry struct {
	typ   int32
	count int32
	data  []byte
}

// header is a parsed rpm header without its region entry.
type header map[int32]entry

// parseHeader reads a header at the start of b and returns it and its
// length in bytes.
func parseHeader(b []byte) (header, int, error) {
	if len(b) < 16 || !bytes.Equal(b[:8], headerMagic) {
		return nil, 0, errors.New("no rpm header magic")
	}
	n := int(binary.BigEndian.Uint32(b[8:]))
	size := int(binary.BigEndian.Uint32(b[12:]))
	start := 16 + 16*n
	if n < 1 || n > 1<<16 || size < 0 || start+size > len(b) {
		return nil, 0, errors.New("rpm header out of bounds")
	}
	store := b[start : start+size]
	h := header{}
	for i := range n {
		ix := b[16+16*i:]
		tag := int32(binary.BigEndian.Uint32(ix))
		typ := int32(binary.BigEndian.Uint32(ix[4:]))
		off := int(int32(binary.BigEndian.Uint32(ix[8:])))
		count := int32(binary.BigEndian.Uint32(ix[12:]))
		if tag == tagImmutable || tag == tagSigHeader {
			continue
		}
		if off < 0 || off > len(store) || count < 0 {
			return nil, 0, fmt.Errorf("tag %d out of bounds", tag)
		}
		l, err := dataLen(store[off:], typ, int(count))
		if err != nil {
			return nil, 0, fmt.Errorf("tag %d: %w", tag, err)
		}
		h[tag] = entry{typ, count, bytes.Clone(store[off : off+l])}
	}
	return h, start + size, nil
}

func dataLen(b []byte, typ int32, count int) (int, error) {
	width := map[int32]int{1: 1, 2: 1, typeInt16: 2, typeInt32: 4, typeInt64: 8, typeBin: 1}
	if w, ok := width[typ]; ok {
		if w*count > len(b) {
			return 0, errors.New("data out of bounds")
		}
		return w * count, nil
	}
	switch typ {
	case typeString, typeStringArray, typeI18N:
		l := 0
		for range count {
			i := bytes.IndexByte(b[l:], 0)
			if i < 0 {
				return 0, errors.New("unterminated string")
			}
			l += i + 1
		}
		return l, nil
	}
	return 0, fmt.Errorf("unknown type %d", typ)
}

// alignment of integer data in the store, as rpm checks it.
var alignment = map[int32]int{typeInt16: 2, typeInt32: 4, typeInt64: 8}

// bytes serialises h with the region entry region (immutable or
// signature), tags in ascending order, as rpm and rpmpack write them.
func (h header) bytes(region int32) []byte {
	tags := make([]int32, 0, len(h))
	for t := range h {
		tags = append(tags, t)
	}
	slices.Sort(tags)
	var store bytes.Buffer
	offsets := make([]int, len(tags))
	for i, t := range tags {
		e := h[t]
		if a := alignment[e.typ]; a > 0 && store.Len()%a != 0 {
			store.Write(make([]byte, a-store.Len()%a))
		}
		offsets[i] = store.Len()
		store.Write(e.data)
	}
	n := len(tags) + 1
	trailer := indexEntry(region, typeBin, int32(-16*n), 16)
	store.Write(trailer)
	var out bytes.Buffer
	out.Write(headerMagic)
	binary.Write(&out, binary.BigEndian, []int32{int32(n), int32(store.Len())})
	out.Write(indexEntry(region, typeBin, int32(store.Len()-16), 16))
	for i, t := range tags {
		out.Write(indexEntry(t, h[t].typ, int32(offsets[i]), h[t].count))
	}
	out.Write(store.Bytes())
	return out.Bytes()
}

func indexEntry(tag, typ, off, count int32) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint32(b, uint32(tag))
	binary.BigEndian.PutUint32(b[4:], uint32(typ))
	binary.BigEndian.PutUint32(b[8:], uint32(off))
	binary.BigEndian.PutUint32(b[12:], uint32(count))
	return b
}

func (h header) strings(tag int32) []string {
	e, ok := h[tag]
	if !ok {
		return nil
	}
	parts := bytes.Split(bytes.TrimSuffix(e.data, []byte{0}), []byte{0})
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out
}

func (h header) uint32s(tag int32) []uint32 {
	e := h[tag]
	out := make([]uint32, e.count)
	for i := range out {
		out[i] = binary.BigEndian.Uint32(e.data[4*i:])
	}
	return out
}

func stringArray(s []string) entry {
	var b bytes.Buffer
	for _, x := range s {
		b.WriteString(x)
		b.WriteByte(0)
	}
	return entry{typeStringArray, int32(len(s)), b.Bytes()}
}

func uint32Array(v []uint32) entry {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.BigEndian.PutUint32(b[4*i:], x)
	}
	return entry{typeInt32, int32(len(v)), b}
}

func stringEntry(s string) entry { return entry{typeString, 1, append([]byte(s), 0)} }

// finishRPM returns the package in with the changes described above.
func finishRPM(in []byte, opt rpmOptions) ([]byte, error) {
	if len(in) < leadSize || !bytes.Equal(in[:4], []byte{0xed, 0xab, 0xee, 0xdb}) {
		return nil, errors.New("not an rpm")
	}
	_, sigLen, err := parseHeader(in[leadSize:])
	if err != nil {
		return nil, fmt.Errorf("signature header: %w", err)
	}
	hdrStart := leadSize + sigLen + (8-sigLen%8)%8
	h, hdrLen, err := parseHeader(in[hdrStart:])
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	payload := in[hdrStart+hdrLen:]

	names, err := fileNames(h)
	if err != nil {
		return nil, err
	}
	if len(opt.Caps) > 0 {
		caps := make([]string, len(names))
		for path, c := range opt.Caps {
			i := slices.Index(names, path)
			if i < 0 {
				return nil, fmt.Errorf("capabilities for %s: not in the package", path)
			}
			caps[i] = c
		}
		h[tagFileCaps] = stringArray(caps)
		addRequire(h, "rpmlib(FileCaps)", "4.6.1-1", senseRPMLib|senseLess|senseEqual)
	}
	addRequire(h, "rpmlib(PayloadFilesHavePrefix)", "4.0-1", senseRPMLib|senseLess|senseEqual)
	if err := requirePre(h, opt.PreRequires); err != nil {
		return nil, err
	}
	for _, o := range opt.Order {
		h[tagOrderName] = stringArray(append(h.strings(tagOrderName), o))
		h[tagOrderVersion] = stringArray(append(h.strings(tagOrderVersion), ""))
		h[tagOrderFlags] = uint32Array(append(h.uint32s(tagOrderFlags), senseScriptPost|senseScriptPreun|senseScriptPostun))
	}

	cpio, err := gunzip(payload)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	cpio, err = prefixCpio(cpio)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	zw.Write(cpio)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	payload = z.Bytes()
	sum := sha256.Sum256(payload)
	h[tagPayloadDig] = stringArray([]string{hex.EncodeToString(sum[:])})

	hb := h.bytes(tagImmutable)
	hsum := sha256.Sum256(hb)
	sig := header{
		tagSigSize:    uint32Array([]uint32{uint32(len(hb) + len(payload))}),
		tagSigSHA256:  stringEntry(hex.EncodeToString(hsum[:])),
		tagSigPayload: uint32Array([]uint32{uint32(len(cpio))}),
	}
	sb := sig.bytes(tagSigHeader)
	var out bytes.Buffer
	out.Write(in[:leadSize])
	out.Write(sb)
	out.Write(make([]byte, (8-len(sb)%8)%8))
	out.Write(hb)
	out.Write(payload)
	return out.Bytes(), nil
}

// fileNames lists the package's paths in header order.
func fileNames(h header) ([]string, error) {
	base := h.strings(tagBaseNames)
	dirs := h.strings(tagDirNames)
	idx := h.uint32s(tagDirIndexes)
	if len(base) != len(idx) {
		return nil, errors.New("header: base names and directory indexes differ in number")
	}
	out := make([]string, len(base))
	for i, b := range base {
		if int(idx[i]) >= len(dirs) {
			return nil, errors.New("header: directory index out of range")
		}
		out[i] = dirs[idx[i]] + b
	}
	return out, nil
}

func addRequire(h header, name, version string, flags uint32) {
	names := h.strings(tagRequireName)
	if slices.Contains(names, name) {
		return
	}
	h[tagRequireName] = stringArray(append(names, name))
	h[tagRequireVer] = stringArray(append(h.strings(tagRequireVer), version))
	h[tagRequireFlags] = uint32Array(append(h.uint32s(tagRequireFlags), flags))
}

// requirePre orders the named requirements before %pre. nfpm has only
// rpm.requires.post; a name given there and here is both.
func requirePre(h header, pre []string) error {
	names := h.strings(tagRequireName)
	flags := h.uint32s(tagRequireFlags)
	for _, p := range pre {
		found := false
		for i, n := range names {
			if n == p {
				flags[i] |= senseScriptPre
				found = true
			}
		}
		if !found {
			return fmt.Errorf("Requires(pre) %s: not a requirement of the package (add it to depends)", p)
		}
	}
	if len(pre) > 0 {
		h[tagRequireFlags] = uint32Array(flags)
	}
	return nil
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// prefixCpio rewrites a newc archive's absolute names to "./"-relative
// ones, as rpmbuild writes them.
func prefixCpio(in []byte) ([]byte, error) {
	var out bytes.Buffer
	pad4 := func(n int) int { return (4 - n%4) % 4 }
	for off := 0; ; {
		if off+110 > len(in) || string(in[off:off+6]) != "070701" {
			return nil, fmt.Errorf("no newc header at byte %d", off)
		}
		field := func(i int) (int, error) {
			v, err := strconv.ParseUint(string(in[off+6+8*i:off+14+8*i]), 16, 32)
			return int(v), err
		}
		size, err1 := field(6)
		nameSize, err2 := field(11)
		if err := errors.Join(err1, err2); err != nil || nameSize < 1 {
			return nil, fmt.Errorf("bad newc header at byte %d", off)
		}
		nameAt := off + 110
		dataAt := nameAt + nameSize + pad4(110+nameSize)
		end := dataAt + size + pad4(size)
		if end > len(in) {
			return nil, fmt.Errorf("entry at byte %d runs past the archive", off)
		}
		name := string(in[nameAt : nameAt+nameSize-1])
		if len(name) > 0 && name[0] == '/' {
			name = "." + name
		}
		hdr := bytes.Clone(in[off : off+110])
		copy(hdr[6+8*11:], fmt.Sprintf("%08X", len(name)+1))
		out.Write(hdr)
		out.WriteString(name)
		out.WriteByte(0)
		out.Write(make([]byte, pad4(110+len(name)+1)))
		out.Write(in[dataAt:end])
		off = end
		if name == "TRAILER!!!" {
			// What follows is padding.
			return out.Bytes(), nil
		}
	}
}
