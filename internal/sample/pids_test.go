package sample

import (
	"slices"
	"strings"
	"testing"
)

// TestParsePIDsDigitsOnly: -p lists around the digits-only rule: signs,
// other scripts' digits, bases and exponents, ids past int, empty
// items, and the spaces that stay allowed around an id (a no-break
// space included, as strings.TrimSpace takes it).
func TestParsePIDsDigitsOnly(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int // nil: refused
	}{
		{"+5", nil}, {"-0", nil}, {"0", nil}, {"00", nil}, {"1,+2", nil}, {"\u0665", nil}, {"\uff15", nil},
		{"0x10", nil}, {"1e3", nil}, {"1_0", nil}, {"9223372036854775808", nil}, {strings.Repeat("9", 400), nil},
		{"1,", nil}, {",1", nil}, {",", nil}, {" ", nil}, {"1;2", nil}, {"1\x002", nil}, {"1 2", nil},
		{"007", []int{7}}, {" 1 ,\t2\n", []int{1, 2}}, {"1,\u00a02", []int{1, 2}}, {"3,1,3", []int{1, 3}},
		{"2147483648", []int{2147483648}}, // past pid_max: named, and reported missing
	} {
		got, err := ParsePIDs(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("ParsePIDs(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParsePIDs(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
