package sample

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLedgerSums (docs/safe.md, the sixteenth review): with the
// swap cache out of the swap ledger, both ledgers still sum exactly to
// MemTotal and SwapTotal (capped at 2^56) for any meminfo, SwapCached
// changes no swap line (it may exceed SwapTotal, or be 2^64-1), and no
// swap line is the cache.
func TestLedgerSums(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 26))
	pick := func() uint64 {
		switch r.IntN(5) {
		case 0:
			return 0
		case 1:
			return r.Uint64() // anything, 2^64-1 included
		case 2:
			return 1<<56 - 1 + r.Uint64N(3)
		}
		return r.Uint64N(1 << 40)
	}
	for i := range 5000 {
		m := Meminfo{
			MemTotal: pick(), MemFree: pick(), MemAvailable: pick(), Buffers: pick(), Cached: pick(),
			Shmem: pick(), SwapTotal: pick(), SwapFree: pick(), SwapCached: pick(), Hugetlb: pick(),
			SReclaimable: pick(), SUnreclaim: pick(), KernelStack: pick(), PageTables: pick(),
			VmallocUsed: pick(), Percpu: pick(), Zswap: pick(), Zram: pick(),
		}
		host := Group{RAM: pick(), PssAnon: pick(), PssFile: pick(), PssShmem: pick(), PrivateHugetlb: pick(), Swap: pick()}
		l := HostLedger(&host, &m)
		if got, want := ledgerSum(l.RAM), capped(m.MemTotal); got != want {
			t.Fatalf("%d: RAM ledger %d, MemTotal %d (capped %d)", i, got, m.MemTotal, want)
		}
		if got, want := ledgerSum(l.Swap), capped(m.SwapTotal); got != want {
			t.Fatalf("%d: swap ledger %d, SwapTotal %d (capped %d)", i, got, m.SwapTotal, want)
		}
		for _, line := range l.Swap {
			if strings.Contains(line.Name, "cache") {
				t.Fatalf("swap line %q", line.Name)
			}
		}
		m2 := m
		m2.SwapCached = r.Uint64()
		if l2 := HostLedger(&host, &m2); ledgerSum(l2.Swap) != ledgerSum(l.Swap) || l2.Swap[len(l2.Swap)-1] != l.Swap[len(l.Swap)-1] {
			t.Fatalf("%d: SwapCached changed the swap ledger", i)
		}
	}
}
