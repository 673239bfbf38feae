package store

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/memwho/memwho/internal/report"
)

// UsageColumns is the CSV header of TableUsage, in column order. It is
// part of the export format: append new columns at the end only.
var UsageColumns = []string{"time", "host", "kind", "key", "pid", "start_time", "count", "pss", "private", "shared", "swap", "estimated", "mem_limit", "mem_limit_free"}

// SampleColumns is the CSV header of TableSamples, in column order. It is
// part of the export format: append new columns at the end only.
var SampleColumns = []string{"time", "host", "boot_id", "mem_total", "mem_free", "mem_available", "buffers", "cached", "shmem", "swap_total", "swap_free", "hugetlb", "procs", "denied"}

// IsTextColumn reports whether the CSV column named col (of UsageColumns
// or SampleColumns) holds text rather than a number or a time: the
// columns whose values come from outside memwho (names, host, boot id).
func IsTextColumn(col string) bool {
	switch col {
	case "host", "kind", "key", "boot_id":
		return true
	}
	return false
}

// TimeLayout is how CSV writes times: RFC 3339, milliseconds, UTC.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Millis returns t as stored: Unix milliseconds.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis is the inverse of Millis, in UTC.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// AppendHeader appends table t's CSV header line.
func AppendHeader(dst []byte, t Table) []byte {
	cols := UsageColumns
	if t == TableSamples {
		cols = SampleColumns
	}
	for i, c := range cols {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, c...)
	}
	return append(dst, '\n')
}

// AppendUsageCSV appends the CSV line of row r of sample s.
func AppendUsageCSV(dst []byte, s *Sample, r *Row) []byte {
	dst = s.Time.UTC().AppendFormat(dst, TimeLayout)
	dst = append(dst, ',')
	dst = AppendCSVField(dst, s.Host)
	dst = append(dst, ',')
	dst = append(dst, r.Kind.String()...)
	dst = append(dst, ',')
	dst = AppendCSVField(dst, r.Key)
	for _, n := range [...]uint64{uint64(r.PID), r.StartTime, uint64(r.Count), r.PSS, r.Private, r.Shared, r.Swap, uint64(r.Estimated), r.MemLimit, r.MemLimitFree} {
		dst = append(dst, ',')
		dst = strconv.AppendUint(dst, n, 10)
	}
	return append(dst, '\n')
}

// AppendSampleCSV appends the CSV line of sample s (TableSamples).
func AppendSampleCSV(dst []byte, s *Sample) []byte {
	dst = s.Time.UTC().AppendFormat(dst, TimeLayout)
	dst = append(dst, ',')
	dst = AppendCSVField(dst, s.Host)
	dst = append(dst, ',')
	dst = AppendCSVField(dst, s.BootID)
	m := &s.Meminfo
	for _, n := range [...]uint64{m.MemTotal, m.MemFree, m.MemAvailable, m.Buffers, m.Cached, m.Shmem, m.SwapTotal, m.SwapFree, m.Hugetlb, uint64(s.Procs), uint64(s.Denied)} {
		dst = append(dst, ',')
		dst = strconv.AppendUint(dst, n, 10)
	}
	return append(dst, '\n')
}

// AppendCSVField appends one text field quoted the way PostgreSQL's COPY
// (FORMAT csv) quotes it: in double quotes (doubled inside) when it holds
// a comma, a double quote, CR or LF, or is empty; as is otherwise. (Go's
// encoding/csv also quotes a leading space, which PostgreSQL does not:
// the two stores must give the same bytes.)
func AppendCSVField(dst []byte, s string) []byte {
	if s != "" && !NeedsQuotes(s) {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}

// CleanKey makes s storable as text in both databases: PostgreSQL text
// must be valid UTF-8 without NUL, and process names may be any bytes. It
// returns s itself when s is valid UTF-8 without NUL or backslash (nearly
// every name). Otherwise every invalid byte and NUL becomes the four
// characters \xNN and every backslash is doubled, so that two different
// names never share a key: a name that only holds the characters
// `\xff` stays apart from one holding the byte 0xff. A cleaned key always
// holds a backslash and an untouched one never does; UncleanKey undoes it.
func CleanKey(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 && strings.IndexByte(s, '\\') < 0 {
		return s
	}
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case (r == utf8.RuneError && size == 1) || r == 0:
			c := s[i]
			b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
		case r == '\\':
			b = append(b, '\\', '\\')
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// UncleanKey returns the name CleanKey(name) was made from. A key holding
// no backslash is the name itself; ok is false for a string CleanKey
// cannot have returned (it is the key of no name).
func UncleanKey(key string) (name string, ok bool) {
	if strings.IndexByte(key, '\\') < 0 {
		return key, true
	}
	b := make([]byte, 0, len(key))
	for i := 0; i < len(key); i++ {
		if key[i] != '\\' {
			b = append(b, key[i])
			continue
		}
		switch {
		case i+1 < len(key) && key[i+1] == '\\':
			b = append(b, '\\')
			i++
		case i+3 < len(key) && key[i+1] == 'x' && isLowerHex(key[i+2]) && isLowerHex(key[i+3]):
			b = append(b, unhex(key[i+2])<<4|unhex(key[i+3]))
			i += 3
		default:
			return "", false
		}
	}
	// Only CleanKey's own output: a key an older memwho wrote holds the
	// name as it was, and `\x73shd` read as an escape would name a
	// process "sshd".
	if name = string(b); CleanKey(name) != key {
		return "", false
	}
	return name, true
}

// KeyName is the name a stored key stands for (UncleanKey), or the key
// itself when it is no CleanKey output (written by an older memwho that
// did not double backslashes). Tables show names, as the live report does.
func KeyName(key string) string {
	if name, ok := UncleanKey(key); ok {
		return name
	}
	return key
}

func isLowerHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// CompareRows is the order of rows within a sample: kind, then key (byte
// order), then pid and start time.
func CompareRows(a, b *Row) int {
	if a.Kind != b.Kind {
		return int(a.Kind) - int(b.Kind)
	}
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	if a.PID != b.PID {
		if a.PID < b.PID {
			return -1
		}
		return 1
	}
	if a.StartTime != b.StartTime {
		if a.StartTime < b.StartTime {
			return -1
		}
		return 1
	}
	return 0
}

// SortRows puts rows in the order they are written (CompareRows), which
// is the order they are read and exported in.
func SortRows(rows []Row) {
	slices.SortFunc(rows, func(a, b Row) int { return CompareRows(&a, &b) })
}

// AppendSafeField appends text cell s as the export writes it, in one
// pass: neutralised, then quoted as AppendCSVField quotes. Neutralised
// means escaped by report.Sanitize (control characters, invalid UTF-8,
// bidi controls and other invisible characters become backslash escapes,
// a backslash is doubled) and, when the escaped text starts with = + - @
// or ', prefixed with one ' (OWASP's advice against formula injection).
// The result is byte for byte what export.CellWriter makes of
// AppendCSVField(s): both stores' exports must stay identical.
//
// The ' prefix is decided on s[0]: the escaped text starts with s[0]
// exactly when s[0] is printable ASCII other than a backslash, and
// otherwise with a backslash or a byte >= 0x80, neither a formula start.
// Sanitize leaves commas and double quotes as they are and removes CR and
// LF, so the need for quotes is decided on s as well.
func AppendSafeField(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, '"', '"')
	}
	// Sanitize leaves commas and double quotes as they are and escapes
	// CR and LF.
	quote := false
	for i := 0; i < len(s) && !quote; i++ {
		quote = s[i] == ',' || s[i] == '"'
	}
	if quote {
		dst = append(dst, '"')
	}
	if report.FormulaStart(s[0]) {
		dst = append(dst, '\'')
	}
	if !quote {
		return report.Sanitize(dst, s)
	}
	// Rare: double the quotes of the escaped text in place.
	start := len(dst)
	dst = report.Sanitize(dst, s)
	n := strings.Count(unsafe.String(&dst[start], len(dst)-start), `"`)
	if n > 0 {
		end := len(dst)
		dst = slices.Grow(dst, n)[:end+n]
		for i, j := end-1, end+n-1; i >= start; i-- {
			dst[j] = dst[i]
			j--
			if dst[i] == '"' {
				dst[j] = '"'
				j--
			}
		}
	}
	return append(dst, '"')
}

// NeedsQuotes reports whether a CSV field holding s must be quoted: it
// holds a comma, a double quote, CR or LF. (A loop over a table: for the
// short fields of the export it is several times faster than
// strings.ContainsAny, which was a third of the export's CSV rewriting.)
func NeedsQuotes(s string) bool {
	for i := 0; i < len(s); i++ {
		if quoteBytes[s[i]] {
			return true
		}
	}
	return false
}

var quoteBytes = [256]bool{',': true, '"': true, '\r': true, '\n': true}
