package proc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestZramUsed(t *testing.T) {
	sys := t.TempDir()
	write := func(rel, data string) {
		t.Helper()
		p := filepath.Join(sys, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := ZramUsed(sys); n != 0 || err != nil {
		t.Errorf("no block directory: ZramUsed = %d, %v, want 0, nil", n, err)
	}
	if n, err := ZramUsed(filepath.Join(sys, "absent")); n != 0 || err != nil {
		t.Errorf("no sysfs: ZramUsed = %d, %v, want 0, nil", n, err)
	}
	// As on a host: /sys/block entries are symlinks into /sys/devices.
	write("devices/virtual/block/zram0/mm_stat", "  4096000   1024000   1200128        0  1200128        3        0        0        0\n")
	if err := os.MkdirAll(filepath.Join(sys, "block"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../devices/virtual/block/zram0", filepath.Join(sys, "block", "zram0")); err != nil {
		t.Fatal(err)
	}
	write("block/zram1/mm_stat", "0 0 4096 0 4096 0 0\n") // a kernel with fewer columns
	write("block/zram2/disksize", "0\n")                  // not initialised: no mm_stat
	write("block/sda/mm_stat", "1 1 999999 0 0 0 0\n")    // not zram
	if n, err := ZramUsed(sys); n != 1200128+4096 || err != nil {
		t.Errorf("ZramUsed = %d, %v, want %d, nil", n, err, 1200128+4096)
	}
	// A symlink out of the sysfs root is not followed.
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "mm_stat"), []byte("1 1 7 0 0 0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(sys, "block", "zram9")); err != nil {
		t.Fatal(err)
	}
	if n, err := ZramUsed(sys); n != 1200128+4096 || err != nil {
		t.Errorf("with a symlink out of the root: ZramUsed = %d, %v, want %d, nil", n, err, 1200128+4096)
	}
	write("block/zram3/mm_stat", "a b c\n")
	if _, err := ZramUsed(sys); err != ErrMalformed {
		t.Errorf("malformed mm_stat: err = %v, want ErrMalformed", err)
	}
}

func TestParseMmStat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"1 2 3\n", 3, true},
		{"  10  20  30  0 0 0 0 0 0\n", 30, true},
		{"1 2\n", 0, false},
		{"1 2 -3\n", 0, false},
		{"1 2 3x\n", 0, false},
		{"1 2 99999999999999999999\n", 0, false},
		{"1 2 4503599627370497\n", 0, false}, // past MaxBytes
		{"1 2 3 " + strings.Repeat("0 ", 3000) + "\n", 0, false},
	} {
		got, ok := parseMmStat([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseMmStat(%.40q) = %d, %v, want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestParseMeminfoKernel: the kernel lines the host ledger itemises.
func TestParseMeminfoKernel(t *testing.T) {
	in := "MemTotal: 1000 kB\nSUnreclaim: 1 kB\nKernelStack: 2 kB\nPageTables: 3 kB\nSecPageTables: 4 kB\n" +
		"VmallocUsed: 5 kB\nPercpu: 6 kB\nZswap: 7 kB\nZswapped: 8 kB\nAnonPages: 9 kB\nHardwareCorrupted: 10 kB\nUnaccepted: 11 kB\nVmallocTotal: 999 kB\n"
	var m Meminfo
	if err := ParseMeminfo([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	got := [...]uint64{m.SUnreclaim, m.KernelStack, m.PageTables, m.SecPageTables, m.VmallocUsed, m.Percpu, m.Zswap,
		m.Zswapped, m.AnonPages, m.HardwareCorrupted, m.Unaccepted}
	for i, v := range got {
		if v != uint64(i+1)*1024 {
			t.Errorf("field %d = %d, want %d", i, v, (i+1)*1024)
		}
	}
}
