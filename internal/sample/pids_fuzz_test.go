package sample

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// refPIDs reads a -p list the slow way: comma-separated decimal numbers
// in digits alone (no sign), spaces around each, every one positive and
// within an int; the set of them, sorted.
func refPIDs(list string) ([]int, bool) {
	seen := map[int]bool{}
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		n, err := strconv.ParseUint(s, 10, 63)
		if err != nil || n == 0 || strings.HasPrefix(s, "+") {
			return nil, false
		}
		seen[int(n)] = true
	}
	out := make([]int, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, true
}

func FuzzParsePIDs(f *testing.F) {
	for _, s := range []string{
		"30, 1,30,2", "", "1,,2", "0", "-3", "x", "1 2", "1", " 1 ,\t2\n", "+5", "9223372036854775807",
		"9223372036854775808", "1,", "0x10", "1_000", "00042",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		got, err := ParsePIDs(list)
		want, ok := refPIDs(list)
		if (err == nil) != ok || !slices.Equal(got, want) {
			t.Fatalf("ParsePIDs(%q) = %v, %v; reference %v, %v", list, got, err, want, ok)
		}
		if err != nil {
			return
		}
		// Round trip: the list written back out reads the same.
		s := make([]string, len(got))
		for i, p := range got {
			s[i] = strconv.Itoa(p)
		}
		if again, err := ParsePIDs(strings.Join(s, ",")); err != nil || !slices.Equal(again, got) {
			t.Fatalf("round trip of %v: %v, %v", got, again, err)
		}
	})
}
