package floor

import (
	"strings"
	"testing"
)

// TestRollupKiBOddText: -report's smaps_rollup reader (a bench tool's;
// it reads the kernel's text, or a tree given with -root) on text no
// kernel writes: a value-less line, CRLF, a later Pss line, the other
// Pss_ lines, a number past int64 (wraps, never a panic), no newline.
func TestRollupKiBOddText(t *testing.T) {
	for _, c := range []struct {
		in        string
		pss, swap int64
	}{
		{"Pss:\nSwapPss:\n", 0, 0},
		{"Pss: 7 kB\r\nSwapPss: 2 kB\r\n", 7, 2},
		{"Pss: 7 kB\nPss: 9 kB\n", 9, 0},
		{"Pss_Anon: 1 kB\nPss_File: 2 kB\nPss_Shmem: 3 kB\nPss_Dirty: 4 kB\n", 0, 0},
		{"SwapPss: 5 kB", 0, 5},
		{"\n\n\n", 0, 0},
	} {
		pss, swap := rollupKiB([]byte(c.in))
		if pss != c.pss || swap != c.swap {
			t.Errorf("rollupKiB(%q) = %d, %d KiB; want %d, %d", c.in, pss, swap, c.pss, c.swap)
		}
	}
	rollupKiB([]byte("Pss: " + strings.Repeat("9", 100) + " kB\n")) // no panic
}
