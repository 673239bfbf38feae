package sample

// LedgerLine is one line of the host ledger (Ledger).
type LedgerLine struct {
	// Name says what the memory is ("processes: anonymous", "free").
	Name string
	// Source says where the figure comes from: the /proc or /sys lines
	// and the arithmetic.
	Source string
	// Bytes is the line's figure in bytes. Only the remainder (the last
	// line) can be negative.
	Bytes int64
}

// TmpfsUse is what one tmpfs mount holds, shown beside the ledger's
// shmem/tmpfs line for information: it is not one of the lines that add
// up, since a tmpfs's pages may be swapped out or mapped by processes
// (and so counted on other lines).
type TmpfsUse struct {
	// Mount is the mount point as mountinfo gives it, escapes decoded:
	// any bytes; renderers must sanitise it.
	Mount string
	// Used is the mount's blocks in use times the block size (statfs),
	// in bytes.
	Used uint64
}

// Ledger is the host's memory itemised so that it adds up: RAM's lines
// sum exactly to MemTotal and swap's to SwapTotal, each ending with a
// remainder for what the kernel does not itemise.
type Ledger struct {
	// RAM sums to MemTotal; its last line is the remainder.
	RAM []LedgerLine
	// Swap sums to SwapTotal; its last line is the remainder.
	Swap []LedgerLine
	// FreeUsed is what free(1) of procps-ng 4 shows as "used":
	// MemTotal - MemAvailable, in bytes (Meminfo.Used).
	FreeUsed int64
	// FreeUsedProcps3 is what procps-ng 3.3 showed as "used": MemTotal -
	// MemFree - Buffers - Cached - SReclaimable, in bytes; negative on a
	// malformed meminfo only.
	FreeUsedProcps3 int64
}

// ledgerMax caps every figure a ledger adds, in bytes (64 PiB, past any
// machine and past proc.MaxBytes): twenty lines of it still sum well
// inside an int64, so the remainder never overflows and the lines add up
// exactly to MemTotal whatever the inputs.
const ledgerMax = 1 << 56

func capped(v uint64) int64 { return int64(min(v, ledgerMax)) }

// sub is a - b in bytes, or 0 when b exceeds a: a line the processes
// over-count (estimates count shared pages in full) shows 0, and the
// excess turns up, negative, in the remainder.
func sub(a, b int64) int64 { return max(a-b, 0) }

// ShmemLedgerLine is the name of the RAM ledger's line of shmem and tmpfs
// no process maps, under which renderers list tmpfs mounts (TmpfsUse).
const ShmemLedgerLine = "shmem/tmpfs no process maps"

// Sources of the remainders, shared by the renderers' notes.
const (
	// RAMRemainderSource explains the RAM ledger's last line.
	RAMRemainderSource = "MemTotal minus the lines above: the kernel does not itemise everything " +
		"(pages drivers, GPUs and the network stack allocate directly, swap cache no process maps); " +
		"negative when estimates count shared pages in full"
	// SwapRemainderSource explains the swap ledger's last line.
	SwapRemainderSource = "SwapTotal minus the lines above: shmem/tmpfs swapped out, which no host-wide line gives, " +
		"and the slots of swap-cache pages processes map again; negative when estimates count shared swap in full"
	// SwapCacheSource explains the swap cache shown, not summed, under
	// the swap ledger's last line.
	SwapCacheSource = "SwapCached, not summed: pages in RAM that keep their swap slot, in a process's SwapPss " +
		"while its page table points to the slot, else in the line above"
)

// HostLedger itemises the host's RAM and swap. host is the sum of every
// process (SumProcs), m the snapshot's meminfo. It is pure: the same
// inputs give the same lines, in the same order, always all of them
// (a zero line is still a line).
//
// How the lines avoid counting a page twice: Cached holds Shmem, so page
// cache no process maps is Cached + Buffers - Shmem - the processes'
// file-backed PSS, and shmem no process maps is Shmem - their shmem PSS.
// Private huge pages are in the processes' RAM and in the Hugetlb pool,
// so the pool's line is what processes do not hold privately. Kernel
// stacks are vmalloc'd on most kernels (CONFIG_VMAP_STACK), so vmalloc
// is VmallocUsed - KernelStack.
func HostLedger(host *Group, m *Meminfo) Ledger {
	anon, file, shmem := capped(host.PssAnon), capped(host.PssFile), capped(host.PssShmem)
	huge := capped(host.PrivateHugetlb)
	unsplit := sub(capped(host.RAM), anon+file+shmem+huge)
	shmemAll := capped(m.Shmem)
	stacks := capped(m.KernelStack)
	ram := []LedgerLine{
		{"processes: anonymous", "Pss_Anon of smaps_rollup (estimates: RssAnon of status)", anon},
		{"processes: file-backed", "Pss_File of smaps_rollup (estimates: RssFile)", file},
		{"processes: shmem", "Pss_Shmem of smaps_rollup (estimates: RssShmem)", shmem},
		{"processes: huge pages", "Private_Hugetlb of smaps_rollup", huge},
		{"processes: not split", "Pss - Pss_Anon - Pss_File - Pss_Shmem: no split before kernel 5.8, else each rounded to kB", unsplit},
		{"page cache no process maps", "Cached + Buffers - Shmem - processes' file-backed",
			sub(capped(m.Cached)+capped(m.Buffers)-shmemAll, file)},
		{ShmemLedgerLine, "Shmem - processes' shmem", sub(shmemAll, shmem)},
		{"kernel: slab, reclaimable", "SReclaimable", capped(m.SReclaimable)},
		{"kernel: slab, unreclaimable", "SUnreclaim", capped(m.SUnreclaim)},
		{"kernel: page tables", "PageTables + SecPageTables", capped(m.PageTables)},
		{"kernel: stacks", "KernelStack", stacks},
		{"kernel: vmalloc", "VmallocUsed - KernelStack (stacks are vmalloc'd)", sub(capped(m.VmallocUsed), stacks)},
		{"kernel: per-CPU", "Percpu", capped(m.Percpu)},
		{"huge page pools", "Hugetlb - processes' huge pages", sub(capped(m.Hugetlb), huge)},
		{"zswap pool", "Zswap", capped(m.Zswap)},
		{"zram devices", "mem_used_total of /sys/block/zram*/mm_stat", capped(m.Zram)},
		{"free", "MemFree", capped(m.MemFree)},
	}
	ram = append(ram, LedgerLine{"not accounted", RAMRemainderSource, remainder(capped(m.MemTotal), ram)})

	swap := []LedgerLine{
		{"processes: swapped out", "SwapPss of smaps_rollup (Swap without SwapPss; estimates: VmSwap)", capped(host.Swap)},
		// Not the swap cache: SwapCached overlaps SwapPss (a page
		// read back by swap-in readahead, or not yet unmapped after
		// writeback, is both), so a line of it counted those slots
		// twice and drove the remainder negative (audit, 2026-11-26:
		// -9.3 MiB with 10 MiB cached). Renderers show it under the
		// remainder, not summed (SwapCacheSource).
		{"free swap", "SwapFree", capped(m.SwapFree)},
	}
	swap = append(swap, LedgerLine{"not accounted", SwapRemainderSource, remainder(capped(m.SwapTotal), swap)})

	return Ledger{
		RAM:  ram,
		Swap: swap,
		// Used is at most MemTotal, so capping cannot reorder.
		FreeUsed:        capped(m.Used()),
		FreeUsedProcps3: capped(m.MemTotal) - capped(m.MemFree) - capped(m.Buffers) - capped(m.Cached) - capped(m.SReclaimable),
	}
}

// remainder is total minus the sum of lines, in bytes.
func remainder(total int64, lines []LedgerLine) int64 {
	for _, l := range lines {
		total -= l.Bytes
	}
	return total
}
