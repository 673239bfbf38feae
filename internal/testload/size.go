package testload

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize parses a byte count such as "4096", "64KiB", "8MiB", "1GiB".
// K, KB, KiB, M, MB, MiB, G, GB and GiB (any case) are all powers of 1024,
// as in /proc and in the memory tools this project is compared with.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	var mul int64
	switch unit {
	case "", "b":
		mul = 1
	case "k", "kb", "kib":
		mul = 1 << 10
	case "m", "mb", "mib":
		mul = 1 << 20
	case "g", "gb", "gib":
		mul = 1 << 30
	default:
		return 0, fmt.Errorf("size %q: unknown unit %q", s, unit)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: not a non-negative integer", s)
	}
	if n > (1<<62)/mul {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n * mul, nil
}

// FormatSize renders n bytes in the largest binary unit that divides it
// exactly, so ParseSize(FormatSize(n)) == n.
func FormatSize(n int64) string {
	switch {
	case n != 0 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "GiB"
	case n != 0 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "MiB"
	case n != 0 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "KiB"
	}
	return strconv.FormatInt(n, 10)
}
