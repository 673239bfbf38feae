package sample

import (
	"cmp"
	"slices"
	"time"
)

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
//
// It is the one ledger every output shows, by the same names: the
// table's footer, JSON's system.ledger, the page and the agent's
// memwho_ledger_bytes.
type Ledger struct {
	// RAM sums to MemTotal; its last line is the remainder.
	RAM []LedgerLine
	// Swap sums to SwapTotal; its last line is the remainder.
	Swap []LedgerLine
	// SwapAlso are figures shown under the swap ledger and not summed:
	// swapped-out pages that are also in RAM (the swap cache, zswap's
	// compressed pool). Every line is always present.
	SwapAlso []LedgerLine
	// Moved, when not nil, is how the host's lines moved while the
	// processes were read (MovedDuringScan).
	Moved *Movement
	// FreeUsed is what free(1) of procps-ng 4 shows as "used":
	// MemTotal - MemAvailable, in bytes (Meminfo.Used).
	FreeUsed int64
	// FreeUsedProcps3 is what procps-ng 3.3 showed as "used": MemTotal -
	// MemFree - Buffers - Cached - SReclaimable, in bytes; negative on a
	// malformed meminfo only.
	FreeUsedProcps3 int64
}

// ledgerMax caps every figure a ledger adds, in bytes (64 PiB, past any
// machine and past proc.MaxBytes): a hundred lines of it still sum
// inside an int64, so the remainder never overflows and the lines add up
// exactly to MemTotal whatever the inputs.
const ledgerMax = 1 << 56

func capped(v uint64) int64 { return int64(min(v, ledgerMax)) }

// sub is a - b in bytes, or 0 when b exceeds a: a line the processes
// over-count (estimates count shared pages in full) shows 0, and the
// excess turns up, negative, in the remainder.
func sub(a, b int64) int64 { return max(a-b, 0) }

// Movement is how the host's lines of a ledger moved between the read of
// /proc/meminfo before a walk and the one after it, which the ledger
// shows: the processes' lines were read in between, one process at a
// time, so the remainder mixes moments and is uncertain by about what
// moved.
type Movement struct {
	// Span is the time between the two reads.
	Span time.Duration
	// RemainderBefore is the RAM ledger's remainder computed with the
	// host's figures read before the walk (the ledger's own uses those
	// read after it), in bytes.
	RemainderBefore int64
	// Lines are the host's lines (neither processes' nor the remainder)
	// whose figure moved, largest move first.
	Lines []MovedLine
}

// MovedLine is one ledger line's figure before and after a walk.
type MovedLine struct {
	// Name is the ledger line's name.
	Name string
	// Before and After are its figure with the host's figures read
	// before and after the walk, in bytes.
	Before, After int64
}

// ShmemLedgerLine is the name of the RAM ledger's line of shmem and tmpfs
// no process maps, under which renderers list tmpfs mounts (TmpfsUse).
const ShmemLedgerLine = "shmem/tmpfs no process maps"

// Names of the lines renderers treat apart.
const (
	// RemainderLine is the last line of both ledgers.
	RemainderLine = "not accounted"
	// FreeLine is MemFree; FreePCPLine the free pages on per-CPU lists,
	// in no line of /proc/meminfo.
	FreeLine    = "free"
	FreePCPLine = "free on per-CPU lists"
)

// Sources of the remainders, shared by the renderers' notes.
const (
	// RAMRemainderSource explains the RAM ledger's last line.
	RAMRemainderSource = "MemTotal minus the lines above: what the kernel does not itemise " +
		"(pages drivers, GPUs and the network stack allocate directly, swap cache no process maps), " +
		"and what moved while the processes were read; negative when estimates count shared pages in full"
	// SwapRemainderSource explains the swap ledger's last line.
	SwapRemainderSource = "SwapTotal minus the lines above: shmem/tmpfs swapped out, which no host-wide line gives, " +
		"and the slots of swap-cache pages processes map again; negative when estimates count shared swap in full"
	// SwapCacheSource explains the swap cache shown, not summed, under
	// the swap ledger's last line.
	SwapCacheSource = "SwapCached, not summed: pages in RAM that keep their swap slot, in a process's SwapPss " +
		"while its page table points to the slot, else in the line above"
	// ZswappedSource explains zswap's line under the swap ledger.
	ZswappedSource = "Zswapped, not summed: swapped-out pages zswap keeps compressed in RAM (in the RAM ledger's " +
		"zswap pool line, Zswap) rather than on the swap device; in the lines above"
	// MovedSource explains the remainder computed with the figures
	// read before the walk.
	MovedSource = "not accounted with the host's figures read before the walk: the processes were read in between, " +
		"so the remainder is uncertain by the difference"
)

// Names of the swap ledger's lines that are not summed (Ledger.SwapAlso).
const (
	SwapCacheLine = "also in RAM: swap cache"
	ZswappedLine  = "also in RAM: zswap, compressed"
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
	ram := ramLines(host, m)
	ram = append(ram, LedgerLine{RemainderLine, RAMRemainderSource, remainder(capped(m.MemTotal), ram)})

	swap := []LedgerLine{
		{"processes: swapped out", "SwapPss of smaps_rollup (Swap without SwapPss; estimates: VmSwap)", capped(host.Swap)},
		// Not the swap cache: SwapCached overlaps SwapPss (a page
		// read back by swap-in readahead, or not yet unmapped after
		// writeback, is both), so a line of it would count those
		// slots twice and drive the remainder negative (-9.3 MiB with
		// 10 MiB cached). Renderers show it under the
		// remainder, not summed (SwapCacheSource).
		{"free swap", "SwapFree", capped(m.SwapFree)},
	}
	swap = append(swap, LedgerLine{RemainderLine, SwapRemainderSource, remainder(capped(m.SwapTotal), swap)})

	return Ledger{
		RAM:  ram,
		Swap: swap,
		SwapAlso: []LedgerLine{
			{SwapCacheLine, SwapCacheSource, capped(m.SwapCached)},
			{ZswappedLine, ZswappedSource, capped(m.Zswapped)},
		},
		// Used is at most MemTotal, so capping cannot reorder.
		FreeUsed:        capped(m.Used()),
		FreeUsedProcps3: capped(m.MemTotal) - capped(m.MemFree) - capped(m.Buffers) - capped(m.Cached) - capped(m.SReclaimable),
	}
}

// ramLines are the RAM ledger's lines but the remainder.
func ramLines(host *Group, m *Meminfo) []LedgerLine {
	anon, file, shmem := capped(host.PssAnon), capped(host.PssFile), capped(host.PssShmem)
	huge := capped(host.PrivateHugetlb)
	unsplit := sub(capped(host.RAM), anon+file+shmem+huge)
	shmemAll := capped(m.Shmem)
	stacks := capped(m.KernelStack)
	return []LedgerLine{
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
		{"kernel: other reclaimable", "KReclaimable - SReclaimable: memory drivers allocate and give back under pressure (kernel 4.20+)",
			sub(capped(m.KReclaimable), capped(m.SReclaimable))},
		{"kernel: page tables", "PageTables + SecPageTables", capped(m.PageTables)},
		{"kernel: stacks", "KernelStack", stacks},
		{"kernel: vmalloc", "VmallocUsed - KernelStack (stacks are vmalloc'd)", sub(capped(m.VmallocUsed), stacks)},
		{"kernel: per-CPU", "Percpu", capped(m.Percpu)},
		{"huge page pools", "Hugetlb - processes' huge pages", sub(capped(m.Hugetlb), huge)},
		{"zswap pool", "Zswap", capped(m.Zswap)},
		{"zram devices", "mem_used_total of /sys/block/zram*/mm_stat", capped(m.Zram)},
		{"hardware corrupted", "HardwareCorrupted: pages taken out of use after memory errors", capped(m.HardwareCorrupted)},
		{"unaccepted", "Unaccepted: memory a confidential VM has not accepted yet (kernel 6.5+)", capped(m.Unaccepted)},
		{FreeLine, "MemFree", capped(m.MemFree)},
		{FreePCPLine, "count: lines of /proc/zoneinfo's pagesets: free pages each CPU keeps to allocate without a lock, in no line of /proc/meminfo", capped(m.PCPFree)},
	}
}

// SnapshotLedger is the ledger of snap (HostLedger of host, every
// process's sum, and snap.Meminfo, which must be valid), with how its
// host lines moved during the walk when the walk read them before too
// (Snapshot.Before).
func SnapshotLedger(host *Group, snap *Snapshot) Ledger {
	l := HostLedger(host, &snap.Meminfo)
	if !snap.BeforeOK {
		return l
	}
	before := snap.Before
	// zram is read once, beside the walk.
	before.Zram = snap.Meminfo.Zram
	b := ramLines(host, &before)
	mv := &Movement{Span: snap.BeforeSpan, RemainderBefore: remainder(capped(before.MemTotal), b)}
	for i, line := range l.RAM[:len(b)] {
		if line.Bytes != b[i].Bytes && !processLine(line.Name) {
			mv.Lines = append(mv.Lines, MovedLine{Name: line.Name, Before: b[i].Bytes, After: line.Bytes})
		}
	}
	slices.SortStableFunc(mv.Lines, func(x, y MovedLine) int {
		return cmp.Compare(absInt64(y.After-y.Before), absInt64(x.After-x.Before))
	})
	l.Moved = mv
	return l
}

// processLine reports whether a RAM ledger line is the processes'.
func processLine(name string) bool {
	return len(name) > len("processes:") && name[:len("processes:")] == "processes:"
}

func absInt64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// remainder is total minus the sum of lines, in bytes.
func remainder(total int64, lines []LedgerLine) int64 {
	for _, l := range lines {
		total -= l.Bytes
	}
	return total
}
