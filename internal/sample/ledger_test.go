package sample

import (
	"math"
	"testing"
	"time"
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
		KReclaimable: 31000 * k, Zswapped: 7000 * k, HardwareCorrupted: 64 * k, Unaccepted: 128 * k,
		PCPFree: 90000 * k,
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
		"kernel: other reclaimable":   1000 * k,
		"kernel: page tables":         4000 * k,
		"kernel: stacks":              3000 * k,
		"kernel: vmalloc":             10000 * k,
		"kernel: per-CPU":             1000 * k,
		"huge page pools":             4096 * k,
		"zswap pool":                  2000 * k,
		"zram devices":                6000 * k,
		"hardware corrupted":          64 * k,
		"unaccepted":                  128 * k,
		"free":                        400000 * k,
		// The free pages on per-CPU lists were in the remainder
		// (1,696 MiB of 1,712 MiB "not accounted" after a program
		// freed 2 GiB).
		"free on per-CPU lists": 90000 * k,
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
	// Not summed: the swap cache, and what zswap holds compressed in
	// RAM (139 MiB of 188 MiB "swapped out" went unsaid).
	wantAlso := map[string]int64{"also in RAM: swap cache": 5000 * k, "also in RAM: zswap, compressed": 7000 * k}
	if len(l.SwapAlso) != len(wantAlso) {
		t.Errorf("swap, not summed: %v", l.SwapAlso)
	}
	for _, line := range l.SwapAlso {
		if line.Bytes != wantAlso[line.Name] || line.Source == "" {
			t.Errorf("swap, not summed: %s = %d (%q), want %d", line.Name, line.Bytes, line.Source, wantAlso[line.Name])
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
				KernelStack: big, PageTables: big, VmallocUsed: big, Percpu: big, Zswap: big, Zram: big,
				KReclaimable: big, Zswapped: big, AnonPages: big, HardwareCorrupted: big, Unaccepted: big, PCPFree: big}},
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

// TestSnapshotLedgerMovement: with meminfo read before the walk too,
// the ledger says how its host lines moved while the processes were
// read, and what the remainder would be with the figures from before:
// a program that freed 1 GiB during the walk made "not accounted" read
// -1 GiB with nothing to say why.
func TestSnapshotLedgerMovement(t *testing.T) {
	const g = 1 << 30
	after := Meminfo{MemTotal: 16 * g, MemFree: 9 * g, Cached: 2 * g, PCPFree: g / 8, Zram: g / 4}
	before := after
	before.MemFree = 8 * g
	before.Zram = 0 // zram is read once, beside the walk
	// The processes were read while the program still held its 1 GiB.
	host := Group{RAM: 5 * g, PssAnon: 5 * g}
	snap := Snapshot{Meminfo: after, MeminfoOK: true, Before: before, BeforeOK: true, BeforeSpan: 1500 * time.Millisecond}
	l := SnapshotLedger(&host, &snap)
	rest := l.RAM[len(l.RAM)-1].Bytes
	if want := int64(16*g - 5*g - 2*g - 9*g - g/8 - g/4); rest != want {
		t.Fatalf("not accounted = %d, want %d", rest, want)
	}
	if l.Moved == nil {
		t.Fatal("no movement: the walk read meminfo before too")
	}
	if got, want := l.Moved.RemainderBefore, rest+g; got != want {
		t.Errorf("remainder with the figures before = %d, want %d", got, want)
	}
	if l.Moved.Span != 1500*time.Millisecond {
		t.Errorf("span %v", l.Moved.Span)
	}
	if len(l.Moved.Lines) != 1 || l.Moved.Lines[0] != (MovedLine{Name: "free", Before: 8 * g, After: 9 * g}) {
		t.Errorf("moved lines %+v, want free from 8 to 9 GiB", l.Moved.Lines)
	}
	snap.BeforeOK = false
	if SnapshotLedger(&host, &snap).Moved != nil {
		t.Error("movement without a read before the walk")
	}
}
