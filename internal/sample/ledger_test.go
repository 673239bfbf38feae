package sample

import (
	"math"
	"testing"
)

func ledgerSum(lines []LedgerLine) int64 {
	var s int64
	for _, l := range lines {
		s += l.Bytes
	}
	return s
}

func TestHostLedger(t *testing.T) {
	const k = 1024
	// A host as /proc/meminfo gives it, and processes that account for
	// part of it.
	m := Meminfo{
		MemTotal: 1000000 * k, MemFree: 400000 * k, MemAvailable: 700000 * k,
		Buffers: 10000 * k, Cached: 300000 * k, Shmem: 50000 * k,
		SwapTotal: 100000 * k, SwapFree: 60000 * k, SwapCached: 5000 * k,
		Hugetlb: 8192 * k, SReclaimable: 30000 * k, SUnreclaim: 20000 * k,
		KernelStack: 3000 * k, PageTables: 4000 * k, VmallocUsed: 13000 * k,
		Percpu: 1000 * k, Zswap: 2000 * k, Zram: 6000 * k,
	}
	host := Group{RAM: 154096 * k, PssAnon: 100000 * k, PssFile: 40000 * k, PssShmem: 10000 * k,
		PrivateHugetlb: 4096 * k, Swap: 30000 * k}
	l := HostLedger(&host, &m)
	want := map[string]int64{
		"processes: anonymous":        100000 * k,
		"processes: file-backed":      40000 * k,
		"processes: shmem":            10000 * k,
		"processes: huge pages":       4096 * k,
		"processes: not split":        0,
		"page cache no process maps":  (300000 + 10000 - 50000 - 40000) * k,
		"shmem/tmpfs no process maps": 40000 * k,
		"kernel: slab, reclaimable":   30000 * k,
		"kernel: slab, unreclaimable": 20000 * k,
		"kernel: page tables":         4000 * k,
		"kernel: stacks":              3000 * k,
		"kernel: vmalloc":             10000 * k,
		"kernel: per-CPU":             1000 * k,
		"huge page pools":             4096 * k,
		"zswap pool":                  2000 * k,
		"zram devices":                6000 * k,
		"free":                        400000 * k,
	}
	var rest int64 = 1000000 * k
	for _, v := range want {
		rest -= v
	}
	want["not accounted"] = rest
	if len(l.RAM) != len(want) {
		t.Errorf("%d RAM lines, want %d", len(l.RAM), len(want))
	}
	for _, line := range l.RAM {
		if w, ok := want[line.Name]; !ok || w != line.Bytes {
			t.Errorf("%s = %d, want %d", line.Name, line.Bytes, w)
		}
		if line.Source == "" {
			t.Errorf("%s has no source", line.Name)
		}
	}
	if last := l.RAM[len(l.RAM)-1]; last.Name != "not accounted" {
		t.Errorf("last RAM line %q, want the remainder", last.Name)
	}
	// SwapCached (5000 k) is no line: it overlaps SwapPss. Used swap
	// (40000 k) less the processes' 30000 k is the remainder.
	wantSwap := []int64{30000 * k, 60000 * k, 10000 * k}
	if len(l.Swap) != len(wantSwap) {
		t.Fatalf("%d swap lines, want %d: %v", len(l.Swap), len(wantSwap), l.Swap)
	}
	for i, line := range l.Swap {
		if line.Bytes != wantSwap[i] {
			t.Errorf("swap %s = %d, want %d", line.Name, line.Bytes, wantSwap[i])
		}
	}
	if l.FreeUsed != 300000*k || l.FreeUsedProcps3 != (1000000-400000-10000-300000-30000)*k {
		t.Errorf("free used = %d, %d", l.FreeUsed, l.FreeUsedProcps3)
	}
}

// TestHostLedgerAddsUp: whatever the inputs, the lines sum exactly to
// MemTotal and SwapTotal, only the remainders go negative, and nothing
// overflows.
func TestHostLedgerAddsUp(t *testing.T) {
	const big = math.MaxUint64
	for _, tc := range []struct {
		name string
		host Group
		m    Meminfo
	}{
		{"zero", Group{}, Meminfo{}},
		{"only total", Group{}, Meminfo{MemTotal: 1 << 30, SwapTotal: 1 << 20}},
		{"estimates over-count", Group{RAM: 4 << 30, PssAnon: 1 << 30, PssFile: 3 << 30, Swap: 2 << 20},
			Meminfo{MemTotal: 2 << 30, Cached: 1 << 30, SwapTotal: 1 << 20}},
		{"split exceeds RAM", Group{RAM: 10, PssAnon: 20, PssFile: 20, PssShmem: 20, PrivateHugetlb: 20},
			Meminfo{MemTotal: 100, Shmem: 50, Cached: 10, Hugetlb: 5}},
		{"shmem exceeds cached", Group{}, Meminfo{MemTotal: 100, Shmem: 80, Cached: 10, Buffers: 1}},
		{"all max", Group{RAM: big, PssAnon: big, PssFile: big, PssShmem: big, PrivateHugetlb: big, Swap: big},
			Meminfo{MemTotal: 1 << 52, MemFree: big, MemAvailable: big, Buffers: big, Cached: big, Shmem: big,
				SwapTotal: 1 << 52, SwapFree: big, SwapCached: big, Hugetlb: big, SReclaimable: big, SUnreclaim: big,
				KernelStack: big, PageTables: big, VmallocUsed: big, Percpu: big, Zswap: big, Zram: big}},
		{"free past total", Group{}, Meminfo{MemTotal: 1 << 20, MemFree: 1 << 40, SwapTotal: 1, SwapFree: 1 << 40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := HostLedger(&tc.host, &tc.m)
			if s := ledgerSum(l.RAM); s != int64(tc.m.MemTotal) {
				t.Errorf("RAM lines sum to %d, want MemTotal %d", s, tc.m.MemTotal)
			}
			if s := ledgerSum(l.Swap); s != int64(tc.m.SwapTotal) {
				t.Errorf("swap lines sum to %d, want SwapTotal %d", s, tc.m.SwapTotal)
			}
			for _, lines := range [][]LedgerLine{l.RAM, l.Swap} {
				for i, line := range lines[:len(lines)-1] {
					if line.Bytes < 0 {
						t.Errorf("line %d %s = %d: only the remainder may be negative", i, line.Name, line.Bytes)
					}
				}
			}
		})
	}
}
