package agent

import (
	"strconv"
	"testing"
)

// refUint reads the decimal number at the start of s the slow way: its
// leading digits through strconv.ParseUint; none, or more than a uint64
// holds, is no number.
func refUint(s string) (uint64, bool) {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	v, err := strconv.ParseUint(s[:n], 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

func FuzzParseUint(f *testing.F) {
	for _, s := range []string{
		"1234", "1795660000\nprocesses 1\n", "0", "", "x", "18446744073709551615",
		"18446744073709551616", "99999999999999999999 kB", "-1", "+1", "12 34",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseUint([]byte(s))
		want, wantOK := refUint(s)
		if got != want || ok != wantOK {
			t.Fatalf("parseUint(%q) = %d, %v; reference %d, %v", s, got, ok, want, wantOK)
		}
	})
}
