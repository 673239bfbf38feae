package report

import (
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/memwho/memwho/internal/sample"
)

// Schema is the value of the "schema" member of JSON output. It changes
// only when a member is removed or changes meaning; new members may be
// added within a version.
const Schema = "memwho.report/v1"

// JSON writes one JSON object and a newline. Every size is an integer
// number of bytes. Members, in this order:
//
//	schema               "memwho.report/v1"
//	time                 snapshot time, RFC 3339 in UTC, whole seconds
//	                     (year 1 when snap is nil)
//	by                   opt.By ("program", "pid", "user", "cgroup", "unit", "slice", "container")
//	groups               array of group objects, in the order given
//	total                a group object for the total, key "total"
//	system               present only with opt.System and snap.MeminfoOK:
//	                     mem_total_bytes, mem_free_bytes,
//	                     mem_available_bytes, buffers_bytes, cached_bytes,
//	                     shmem_bytes, hugetlb_bytes, swap_total_bytes,
//	                     swap_free_bytes (as in /proc/meminfo);
//	                     host_used_bytes (MemTotal - MemAvailable),
//	                     swap_used_bytes (SwapTotal - SwapFree),
//	                     process_ram_bytes, process_swap_bytes (summed
//	                     over every process, whatever groups shows);
//	                     not_in_process_bytes (host_used_bytes -
//	                     process_ram_bytes; signed, may be negative);
//	                     swap_cached_bytes (SwapCached);
//	                     swap_not_in_process_bytes (swap_used_bytes -
//	                     process_swap_bytes: shmem/tmpfs swapped out and
//	                     swap-cache slots processes map again; signed;
//	                     the swap ledger's last line); mem_available_source
//	                     ("meminfo", or "estimate" /
//	                     "estimate_no_watermarks" where the kernel gave
//	                     no MemAvailable and memwho computed it);
//	                     free_used_procps3_bytes (what procps-ng 3.3's
//	                     free showed as used: MemTotal - MemFree -
//	                     Buffers - Cached - SReclaimable; host_used_bytes
//	                     is procps-ng 4's); process_accuracy,
//	                     process_swap_source and
//	                     process_estimated_processes: as a group's
//	                     accuracy, swap_source and estimate count, for
//	                     every process (process_ram_bytes and what is
//	                     computed from it; the table's total and
//	                     estimated_processes cover only the rows shown);
//	                     ledger: the host ledger
//	                     (sample.HostLedger), an array of {"name",
//	                     "source", "bytes", "accuracy"} ("estimate" on the
//	                     lines computed from processes' estimates, the
//	                     lines the table marks ~) whose bytes sum exactly to
//	                     mem_total_bytes, every line always present, the
//	                     last ("not accounted") signed; swap_ledger: the
//	                     same for swap_total_bytes (no swap cache line:
//	                     SwapCached overlaps SwapPss; see
//	                     swap_cached_bytes); tmpfs: tmpfs mounts
//	                     as {"mount", "used_bytes"} (statfs; not part
//	                     of the ledger's sum: their pages may be swapped
//	                     out or mapped by processes), [] when not read
//	                     (a snapshot file, a tree not the live /proc);
//	                     tmpfs_more: mounts left out of that list
//	skipped              processes left out: {"gone": exited during the
//	                     scan, "kernel": kernel threads and zombies,
//	                     "broken": stat or status unparsable}
//	denied_processes     processes whose exact figures were not permitted
//	malformed_processes  processes whose smaps_rollup was unparsable
//	estimated_processes  processes with status-based estimates in the total
//
// A group object has key, key_base64 (only when needed, see below),
// count, pids (array, ascending), ram_bytes, private_bytes, shared_bytes,
// swap_bytes, pss_anon_bytes, pss_file_bytes, pss_shmem_bytes,
// private_hugetlb_bytes (the split of ram_bytes: Pss_Anon, Pss_File,
// Pss_Shmem and Private_Hugetlb of smaps_rollup, zero before kernel 5.8;
// RssAnon, RssFile, RssShmem for estimates), accuracy ("exact", or
// "estimate" when any process's figures
// came from /proc/PID/status or were read page by page without every
// shared page's share), ram_bound_bytes and swap_bound_bytes (only for
// groups of processes read page by page: ram_bytes and swap_bytes are
// within them of the truth), swap_source ("swap_pss", or "swap" when
// some swap was counted in full) and, with opt.Conns (--conns),
// tcp_established (ESTABLISHED TCP sockets, IPv4 and IPv6).
//
// The key is the exact raw name when it is valid UTF-8; control
// characters, C1 controls, bidi controls and U+2028/U+2029 are written as
// \uXXXX JSON escapes, so the output is safe to print and decodes to the
// exact name. A key that is not valid UTF-8 cannot be a JSON string: then
// "key" holds the Sanitize form (for display) and "key_base64" the exact
// bytes in standard base64. Consumers wanting exact bytes use key_base64
// when present, key otherwise.
func JSON(w io.Writer, groups []sample.Group, total sample.Group, snap *sample.Snapshot, opt Options) error {
	if snap == nil {
		snap = new(sample.Snapshot)
	}
	buf := make([]byte, 0, 200*(len(groups)+2)+512)
	buf = append(buf, `{"schema":`...)
	buf = appendJSONString(buf, Schema)
	buf = append(buf, `,"time":`...)
	buf = appendJSONString(buf, snap.Time.UTC().Format(time.RFC3339))
	buf = append(buf, `,"by":`...)
	buf = appendJSONString(buf, opt.by())
	buf = append(buf, `,"groups":[`...)
	for i := range groups {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONGroup(buf, &groups[i], opt.Conns)
	}
	buf = append(buf, `],"total":`...)
	total.Key = "total" // whatever the caller left there, as in CSV
	buf = appendJSONGroup(buf, &total, opt.Conns)
	if opt.System && snap.MeminfoOK {
		m := &snap.Meminfo
		procs := opt.host(&total)
		buf = append(buf, `,"system":{`...)
		buf = appendJSONUint(buf, "mem_total_bytes", m.MemTotal, false)
		buf = appendJSONUint(buf, "mem_free_bytes", m.MemFree, true)
		buf = appendJSONUint(buf, "mem_available_bytes", m.MemAvailable, true)
		buf = appendJSONUint(buf, "buffers_bytes", m.Buffers, true)
		buf = appendJSONUint(buf, "cached_bytes", m.Cached, true)
		buf = appendJSONUint(buf, "shmem_bytes", m.Shmem, true)
		buf = appendJSONUint(buf, "hugetlb_bytes", m.Hugetlb, true)
		buf = appendJSONUint(buf, "swap_total_bytes", m.SwapTotal, true)
		buf = appendJSONUint(buf, "swap_free_bytes", m.SwapFree, true)
		buf = appendJSONUint(buf, "host_used_bytes", m.Used(), true)
		buf = appendJSONUint(buf, "swap_used_bytes", m.SwapUsed(), true)
		buf = append(buf, `,"not_in_process_bytes":`...)
		buf = strconv.AppendInt(buf, m.NotInProcess(procs.RAM), 10)
		buf = appendJSONUint(buf, "swap_cached_bytes", m.SwapCached, true)
		buf = appendJSONUint(buf, "process_ram_bytes", procs.RAM, true)
		buf = appendJSONUint(buf, "process_swap_bytes", procs.Swap, true)
		buf = append(buf, `,"swap_not_in_process_bytes":`...)
		buf = strconv.AppendInt(buf, m.SwapNotInProcess(procs.Swap), 10)
		buf = append(buf, `,"mem_available_source":`...)
		buf = appendJSONString(buf, m.Available.String())
		l := sample.HostLedger(procs, m)
		buf = append(buf, `,"free_used_procps3_bytes":`...)
		buf = strconv.AppendInt(buf, l.FreeUsedProcps3, 10)
		ramMark, swapMark := marks(procs)
		buf = append(buf, `,"process_accuracy":`...)
		buf = appendJSONString(buf, procs.Accuracy().String())
		buf = append(buf, `,"process_swap_source":`...)
		buf = appendJSONString(buf, swapSource(procs))
		buf = appendJSONInt(buf, "process_estimated_processes", procs.Estimated, true)
		buf = appendJSONLedger(buf, "ledger", l.RAM, ramLineFromProcs, ramMark != 0)
		buf = appendJSONLedger(buf, "swap_ledger", l.Swap, swapLineFromProcs, swapMark != 0)
		buf = append(buf, `,"tmpfs":[`...)
		for i, m := range opt.Tmpfs {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"mount":`...)
			buf = appendJSONString(buf, m.Mount)
			buf = appendJSONUint(buf, "used_bytes", m.Used, true)
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
		buf = appendJSONInt(buf, "tmpfs_more", opt.TmpfsMore, true)
		buf = append(buf, '}')
	}
	buf = append(buf, `,"skipped":{`...)
	buf = appendJSONInt(buf, "gone", snap.Gone, false)
	buf = appendJSONInt(buf, "kernel", snap.Kernel, true)
	buf = appendJSONInt(buf, "broken", snap.Broken, true)
	buf = append(buf, '}')
	buf = appendJSONInt(buf, "denied_processes", snap.Denied, true)
	buf = appendJSONInt(buf, "malformed_processes", snap.Malformed, true)
	buf = appendJSONInt(buf, "estimated_processes", total.Estimated, true)
	buf = append(buf, "}\n"...)
	_, err := w.Write(buf)
	return err
}

// appendJSONLedger appends ,"name":[{"name":..,"source":..,"bytes":..,
// "accuracy":..},...]. A line is an estimate when it is computed from the
// processes' figures (fromProcs) and those hold one (est): the lines the
// table marks.
func appendJSONLedger(buf []byte, name string, lines []sample.LedgerLine, fromProcs func([]sample.LedgerLine, int) bool, est bool) []byte {
	buf = append(buf, `,"`...)
	buf = append(buf, name...)
	buf = append(buf, `":[`...)
	for i, l := range lines {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"name":`...)
		buf = appendJSONString(buf, l.Name)
		buf = append(buf, `,"source":`...)
		buf = appendJSONString(buf, l.Source)
		buf = append(buf, `,"bytes":`...)
		buf = strconv.AppendInt(buf, l.Bytes, 10)
		acc := sample.Exact
		if est && fromProcs(lines, i) {
			acc = sample.Estimate
		}
		buf = append(buf, `,"accuracy":`...)
		buf = appendJSONString(buf, acc.String())
		buf = append(buf, '}')
	}
	return append(buf, ']')
}

func appendJSONGroup(buf []byte, g *sample.Group, conns bool) []byte {
	buf = append(buf, '{')
	buf = appendJSONKey(buf, g.Key)
	buf = appendJSONInt(buf, "count", g.Count, true)
	buf = append(buf, `,"pids":[`...)
	for i, pid := range g.PIDs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, int64(pid), 10)
	}
	buf = append(buf, ']')
	buf = appendJSONUint(buf, "ram_bytes", g.RAM, true)
	buf = appendJSONUint(buf, "private_bytes", g.Private, true)
	buf = appendJSONUint(buf, "shared_bytes", g.Shared, true)
	buf = appendJSONUint(buf, "swap_bytes", g.Swap, true)
	buf = appendJSONUint(buf, "pss_anon_bytes", g.PssAnon, true)
	buf = appendJSONUint(buf, "pss_file_bytes", g.PssFile, true)
	buf = appendJSONUint(buf, "pss_shmem_bytes", g.PssShmem, true)
	buf = appendJSONUint(buf, "private_hugetlb_bytes", g.PrivateHugetlb, true)
	buf = append(buf, `,"accuracy":`...)
	buf = appendJSONString(buf, g.Accuracy().String())
	if g.Bound > 0 || g.SwapBound > 0 {
		buf = appendJSONUint(buf, "ram_bound_bytes", g.Bound, true)
		buf = appendJSONUint(buf, "swap_bound_bytes", g.SwapBound, true)
	}
	buf = append(buf, `,"swap_source":`...)
	buf = appendJSONString(buf, swapSource(g))
	if conns {
		buf = appendJSONUint(buf, "tcp_established", g.Conns, true)
	}
	return append(buf, '}')
}

// appendJSONUint appends "name":n, preceded by a comma when comma is set.
// name must need no escaping.
func appendJSONUint(buf []byte, name string, n uint64, comma bool) []byte {
	if comma {
		buf = append(buf, ',')
	}
	buf = append(buf, '"')
	buf = append(buf, name...)
	buf = append(buf, `":`...)
	return strconv.AppendUint(buf, n, 10)
}

func appendJSONInt(buf []byte, name string, n int, comma bool) []byte {
	if comma {
		buf = append(buf, ',')
	}
	buf = append(buf, '"')
	buf = append(buf, name...)
	buf = append(buf, `":`...)
	return strconv.AppendInt(buf, int64(n), 10)
}

// appendJSONString appends s, which must be valid UTF-8, as a quoted JSON
// string.
func appendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	buf = appendJSONStringBody(buf, s)
	return append(buf, '"')
}

// AppendJSONString appends s as a quoted JSON string escaped the way
// every JSON memwho writes is (see appendJSONStringBody): it decodes to
// exactly s, and printing it raw moves no cursor and reorders no text.
// Bytes of s that are not valid UTF-8 become U+FFFD, as encoding/json
// does; callers that must keep them exact carry the bytes separately
// (JSON's key_base64).
func AppendJSONString(buf []byte, s string) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return appendJSONString(buf, s)
}

// String is a string that encoding/json writes with AppendJSONString's
// escapes, for the JSON memwho builds with encoding/json (leaks --json):
// every JSON output then escapes names the same way.
type String string

// MarshalJSON implements json.Marshaler.
func (s String) MarshalJSON() ([]byte, error) {
	return AppendJSONString(nil, string(s)), nil
}

// appendJSONStringBody escapes the quote, the backslash, C0 controls and
// DEL, and the runes Sanitize escapes (C1, bidi and other invisible
// format characters, U+2028/U+2029), all as \uXXXX (a UTF-16 surrogate
// pair beyond U+FFFF) except \" and \\. The JSON decodes to exactly s;
// the escapes only keep the raw text harmless on a terminal.
func appendJSONStringBody(buf []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != 0x7f && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			default:
				buf = append(buf, `\u00`...)
				buf = append(buf, hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r) {
			buf = append(buf, s[start:i]...)
			if r > 0xffff {
				hi, lo := utf16.EncodeRune(r)
				buf = appendJSONEscape(buf, hi)
				buf = appendJSONEscape(buf, lo)
			} else {
				buf = appendJSONEscape(buf, r)
			}
			start = i + size
		}
		i += size
	}
	return append(buf, s[start:]...)
}

// appendJSONEscape appends \uXXXX for r <= U+FFFF.
func appendJSONEscape(buf []byte, r rune) []byte {
	return append(buf, '\\', 'u',
		hexDigits[r>>12&0xf], hexDigits[r>>8&0xf],
		hexDigits[r>>4&0xf], hexDigits[r&0xf])
}
