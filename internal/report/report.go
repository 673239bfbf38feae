// Package report renders grouped memory figures (sample.Group values) as a
// human table, JSON or CSV, and sets the process total against
// /proc/meminfo in an optional system footer.
//
// It does not read /proc, group, sort or filter: groups arrive ready and
// are written in the order given. The renderers write to the one writer
// they are handed; the warnings about estimates (Warn) go to the one the
// caller gives for them, standard error. The small console rules the
// commands share (colour, terminals, the name column's title) are here
// too, so that the report and the live watch agree on them.
//
// Names (group keys) are raw bytes from the kernel. The table and CSV pass
// them through Sanitize so that no control sequence reaches a terminal;
// JSON keeps them exact (see JSON).
package report

import (
	"io"
	"math/bits"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/memwho/memwho/internal/sample"
)

// Options says how to render. The zero value renders a table keyed by
// "Program" without a process-count column or system footer.
type Options struct {
	// KeyHeader is the table's column title for the group key: "Program",
	// "PID", "User" or "Cgroup". Empty means "Program".
	KeyHeader string
	// By names the grouping in JSON ("program", "pid", "user",
	// "cgroup"). Empty means "program".
	By string
	// ShowCount adds the process-count column to the table (pointless
	// when every group is one process, as with --by pid).
	ShowCount bool
	// Fast says the scan read only /proc/PID/status (--fast); the table's
	// legend then gives that, not a permission problem, as the reason for
	// estimates.
	Fast bool
	// Scanner says who walked /proc for the figures, for the hint
	// after refused walks (Warn).
	Scanner Scanner
	// Color dims the estimate markers in the table. The caller decides
	// (NO_COLOR, isatty); JSON and CSV ignore it.
	Color bool
	// System adds the /proc/meminfo comparison after the total (table)
	// or a "system" object (JSON). It needs snap.MeminfoOK; CSV has no
	// place for it and ignores it.
	System bool
	// Host is the sum over every process of the snapshot, whatever the
	// table shows (--top, --filter, -p and -u choose rows, not the host):
	// the system footer sets it, not the total of the rows, against
	// /proc/meminfo. nil means the rows are every process, and the total
	// serves.
	Host *sample.Group
	// Tmpfs lists tmpfs mounts and what each holds, shown under the
	// ledger's shmem/tmpfs line with System (informational: not summed);
	// TmpfsMore counts the mounts left out of the list.
	Tmpfs     []sample.TmpfsUse
	TmpfsMore int
	// Conns adds the groups' ESTABLISHED TCP connections (Group.Conns):
	// a "TCP" column in the table, a tcp_established member in JSON
	// group objects and a last tcp_established column in CSV. The
	// caller sets it only when they were counted (Snapshot.ConnsOK).
	Conns bool
	// Hidden are the groups --top left out of the rows: the pictures
	// (HTML, SVG) draw them in their "other" rectangle and list them,
	// so that the maps are of every process selected. The table, JSON
	// and CSV leave them out.
	Hidden []sample.Group
	// HostName names the host the figures are of in the pictures; ""
	// when not known (a snapshot file).
	HostName string
	// Split adds the table columns Anon, File and Shmem after Swap: the
	// groups' RAM split by kind of page (Group.PssAnon, PssFile,
	// PssShmem). JSON and CSV always carry the split.
	Split bool
}

func (o *Options) keyHeader() string {
	if o.KeyHeader == "" {
		return "Program"
	}
	return o.KeyHeader
}

func (o *Options) by() string {
	if o.By == "" {
		return "program"
	}
	return o.By
}

// TotalLine writes the total RAM used (proportional set size, the table's
// "RAM used" total) as a plain decimal integer of bytes and a newline, for
// -t/--total. Bytes rather than a human unit so that scripts can compare
// and add it without parsing.
func TotalLine(w io.Writer, total sample.Group) error {
	var b [24]byte
	buf := strconv.AppendUint(b[:0], total.RAM, 10)
	buf = append(buf, '\n')
	_, err := w.Write(buf)
	return err
}

// units are the binary prefixes HumanBytes steps through; uint64 bytes
// never reach 16 EiB, so EiB is the last one needed.
var units = [...]string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// HumanBytes appends n bytes in binary units with one decimal ("1.5 MiB"),
// or as a whole number below 1 KiB ("512 B"). The figure is rounded half
// up to the nearest tenth, and a value that would round to 1024.0 of a
// unit is written as 1.0 of the next ("1.0 MiB", never "1024.0 KiB"), so
// the widest output is "1023.9 KiB" (10 bytes).
func HumanBytes(dst []byte, n uint64) []byte {
	if n < 1024 {
		dst = strconv.AppendUint(dst, n, 10)
		return append(dst, " B"...)
	}
	u := 1
	var tenths uint64
	for {
		div := uint64(1) << (10 * u)
		// tenths = round(n*10/div), in 128 bits: n*10 may overflow 64.
		hi, lo := bits.Mul64(n, 10)
		lo, carry := bits.Add64(lo, div/2, 0)
		hi += carry
		tenths, _ = bits.Div64(hi, lo, div) // hi < 10 < div: no panic
		if tenths < 10240 || u == len(units)-1 {
			break
		}
		u++
	}
	dst = strconv.AppendUint(dst, tenths/10, 10)
	dst = append(dst, '.', byte('0'+tenths%10), ' ')
	return append(dst, units[u]...)
}

// appendSignedBytes is HumanBytes with a leading '-' for negative values;
// the system footer's "not in any process" difference can be negative.
func appendSignedBytes(dst []byte, v int64) []byte {
	if v < 0 {
		dst = append(dst, '-')
		return HumanBytes(dst, uint64(-(v+1))+1) // no overflow at MinInt64
	}
	return HumanBytes(dst, uint64(v))
}

const hexDigits = "0123456789abcdef"

// Sanitize appends s to dst with everything that could move the cursor,
// change the terminal's state or disguise the text replaced by a
// backslash escape, and returns the extended slice. It allocates only when
// dst lacks capacity.
//
// The escapes are:
//
//	\\      a backslash
//	\n \t \r  newline, tab, carriage return
//	\xNN    any other C0 control byte, DEL (0x7f), or a byte that is not
//	        part of valid UTF-8
//	\uNNNN  a valid UTF-8 encoded C1 control (U+0080–U+009F), a Unicode
//	        bidirectional control (U+061C, U+200E, U+200F, U+202A–U+202E,
//	        U+2066–U+2069), which could make a name display reversed, any
//	        other invisible format character (Unicode category Cf: zero
//	        width space and joiners, U+FEFF, soft hyphen...), which could
//	        make two names look alike, or a line or paragraph separator
//	        (U+2028, U+2029)
//	\U00NNNNNN  such a character beyond U+FFFF (the Cf tag characters
//	        U+E0001–U+E007F, for example)
//
// Hex digits are lower case. Every other byte is copied, so plain names
// are unchanged. The mapping is injective: the raw bytes can be recovered
// by undoing the escapes above, and the output is always valid UTF-8.
func Sanitize(dst []byte, s string) []byte {
	start := 0 // s[start:i] is safe and not yet copied
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != 0x7f && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\':
				dst = append(dst, '\\', '\\')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\r':
				dst = append(dst, '\\', 'r')
			default:
				dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		case unsafeRune(r):
			dst = append(dst, s[start:i]...)
			if r > 0xffff {
				dst = append(dst, '\\', 'U', '0', '0',
					hexDigits[r>>20&0xf], hexDigits[r>>16&0xf], hexDigits[r>>12&0xf],
					hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
				break
			}
			dst = append(dst, '\\', 'u',
				hexDigits[r>>12&0xf], hexDigits[r>>8&0xf],
				hexDigits[r>>4&0xf], hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

// unsafeRune reports whether r, a valid non-ASCII rune, must be escaped:
// C1 controls (some terminals act on them), bidirectional controls and
// other invisible format characters (category Cf), and the Unicode line
// and paragraph separators.
func unsafeRune(r rune) bool {
	switch {
	case unicode.Is(unicode.Cf, r):
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x2028 && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// swapSource names where a group's swap figure came from: "swap_pss"
// (SwapPss, shared swapped pages divided among their processes) or "swap"
// (some of it counted in full: no SwapPss on this kernel, or a
// status-based estimate whose VmSwap is a full count). A swap of 0 B is
// exact however it was read, as the table's marks say: an estimated
// process with no swap, or a kernel without SwapPss on a host with no
// swap in use, adds nothing counted in full.
func swapSource(g *sample.Group) string {
	if g.SwapEstimated() || (g.SwapPssMissing && g.Swap > 0) {
		return "swap"
	}
	return "swap_pss"
}

// host returns the group the system footer counts as "processes".
func (o *Options) host(total *sample.Group) *sample.Group {
	if o.Host != nil {
		return o.Host
	}
	return total
}
