package floor

import "testing"

func TestRollupKiB(t *testing.T) {
	for _, c := range []struct {
		in        string
		pss, swap int64
	}{
		{"Rss:  10 kB\nPss:  7 kB\nPss_Anon: 3 kB\nSwap: 4 kB\nSwapPss: 2 kB\n", 7, 2},
		{"Pss: 12 kB", 12, 0},
		{"", 0, 0},
		{"Pss_Dirty: 5 kB\n", 0, 0},
	} {
		pss, swap := rollupKiB([]byte(c.in))
		if pss != c.pss || swap != c.swap {
			t.Errorf("rollupKiB(%q) = %d, %d KiB; want %d, %d", c.in, pss, swap, c.pss, c.swap)
		}
	}
}

func TestAppendKiB(t *testing.T) {
	for kib, want := range map[int64]string{0: "       0.0 MiB", 1536: "       1.5 MiB", 10 << 20: "   10240.0 MiB"} {
		if got := string(appendKiB(nil, kib)); got != want {
			t.Errorf("appendKiB(%d) = %q, want %q", kib, got, want)
		}
	}
}
