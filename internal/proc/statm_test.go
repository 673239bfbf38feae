package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseStatm(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Statm
	}{
		{"765 441 413 5 0 123 0\n", Statm{Resident: 441, Shared: 413, Text: 5, Data: 123, OK: true}},
		{"765 441 413 5 0 12x 0\n", Statm{Resident: 441, Shared: 413, Text: 5, OK: true}},
		{"0 0 0 0 0 0 0\n", Statm{OK: true}},
		{"1 2 3 4", Statm{Resident: 2, Shared: 3, Text: 4, OK: true}},
		{"  1  2 3 4\n", Statm{Resident: 2, Shared: 3, Text: 4, OK: true}},
		{"", Statm{}},
		{"1 2 3\n", Statm{}},
		{"1 2 -3 4\n", Statm{}},
		{"1\t2 3 4\n", Statm{}},
		{"1 2 3 " + strings.Repeat("9", 20) + "\n", Statm{}},
		// Junk right after the fourth number is no number: found by
		// FuzzParseStatm (testdata/fuzz/FuzzParseStatm).
		{"1 2 3 4x\n", Statm{}},
		{"1 2 3 4\x00", Statm{}},
	} {
		if got := ParseStatm([]byte(tc.in)); got != tc.want {
			t.Errorf("ParseStatm(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestParseStatmNoAllocs(t *testing.T) {
	b := []byte("765 441 413 5 0 123 0\n")
	if n := testing.AllocsPerRun(100, func() { ParseStatm(b) }); n != 0 {
		t.Errorf("ParseStatm allocs = %v, want 0", n)
	}
}

// refStatm reads statm the slow way: the line's first four
// space-separated fields (and the sixth, data, when the fifth and sixth
// are numbers), each a decimal of at most 19 digits (the
// parser's cap, which keeps it clear of overflow).
func refStatm(s string) Statm {
	line, _, _ := strings.Cut(s, "\n")
	f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' })
	if len(f) < 4 {
		return Statm{}
	}
	var v [4]uint64
	for i := range v {
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil || len(f[i]) > 19 || strings.HasPrefix(f[i], "+") {
			return Statm{}
		}
		v[i] = n
	}
	st := Statm{Resident: v[1], Shared: v[2], Text: v[3], OK: true}
	if len(f) >= 6 {
		_, e1 := strconv.ParseUint(f[4], 10, 64)
		d, e2 := strconv.ParseUint(f[5], 10, 64)
		if e1 == nil && e2 == nil && len(f[4]) <= 19 && len(f[5]) <= 19 && !strings.HasPrefix(f[4], "+") && !strings.HasPrefix(f[5], "+") {
			st.Data = d
		}
	}
	return st
}

func FuzzParseStatm(f *testing.F) {
	seeds(f, "statm")
	for _, s := range []string{
		"765 441 413 5 0 123 0\n", "0 0 0 0 0 0 0\n", "1 2 3 4", "1 2 3\n",
		"9999999999999999999 1 2 3\n", "1 2 3 18446744073709551615\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ParseStatm([]byte(s))
		if want := refStatm(s); got != want {
			t.Fatalf("ParseStatm(%q) = %+v, reference %+v", s, got, want)
		}
		if got.Zero() && (got.Resident|got.Shared|got.Text) != 0 {
			t.Fatalf("Zero() with non-zero fields: %+v", got)
		}
	})
}

// refMmStat reads mm_stat the slow way: whitespace-separated fields, the
// first three decimal numbers, the third (mem_used_total) at most
// MaxBytes.
func refMmStat(s string) (uint64, bool) {
	if len(s) > maxMmStat {
		return 0, false
	}
	f := strings.Fields(s)
	if len(f) < 3 {
		return 0, false
	}
	var v uint64
	for _, x := range f[:3] {
		n, err := strconv.ParseUint(x, 10, 64)
		if err != nil || strings.HasPrefix(x, "+") {
			return 0, false
		}
		v = n
	}
	if v > MaxBytes {
		return 0, false
	}
	return v, true
}

func FuzzParseMmStat(f *testing.F) {
	paths, _ := filepath.Glob("/sys/block/zram*/mm_stat")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	for _, s := range []string{
		"  4096000   1024000   1200128        0  1200128        3        0        0        0\n",
		"0 0 4096 0 4096 0 0\n", "1 2 3\n", "a b c\n", "1 2 -3\n", "1 2 3x\n",
		"1 2 99999999999999999999\n", "1 2 4503599627370497\n", "1\u00a02\u20283\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseMmStat([]byte(s))
		want, wantOK := refMmStat(s)
		if got != want || ok != wantOK {
			t.Fatalf("parseMmStat(%q) = %d, %v, reference %d, %v", s, got, ok, want, wantOK)
		}
	})
}
