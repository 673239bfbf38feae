package sample

import "github.com/memwho/memwho/internal/proc"

// ReadMeminfo reads /proc/meminfo through r into snap (Meminfo, MeminfoOK
// and MeminfoErr), using m as scratch: the host figures of every
// snapshot the sampler (internal/engine) fills.
//
// Where the kernel gives no MemAvailable line, MemAvailable is computed
// the way the kernel computes it (proc.EstimateAvailable), with the zone
// watermarks of /proc/zoneinfo when it can be read, and Available says
// so. A MemAvailable of 0 would make every byte of RAM "used".
func ReadMeminfo(r *proc.Reader, m *proc.Meminfo, snap *Snapshot) {
	snap.MeminfoErr = r.Meminfo(m)
	snap.MeminfoOK = snap.MeminfoErr == nil
	if !snap.MeminfoOK {
		snap.Meminfo = Meminfo{}
		return
	}
	snap.Meminfo = Meminfo{
		MemTotal: m.MemTotal, MemFree: m.MemFree, MemAvailable: m.MemAvailable,
		Buffers: m.Buffers, Cached: m.Cached, Shmem: m.Shmem,
		SwapTotal: m.SwapTotal, SwapFree: m.SwapFree, SwapCached: m.SwapCached,
		Hugetlb:      m.Hugetlb,
		SReclaimable: m.SReclaimable, SUnreclaim: m.SUnreclaim, KernelStack: m.KernelStack,
		PageTables:  min(m.PageTables+m.SecPageTables, proc.MaxBytes),
		VmallocUsed: m.VmallocUsed, Percpu: m.Percpu, Zswap: m.Zswap,
	}
	if m.HasMemAvailable {
		return
	}
	var z proc.Zoneinfo
	if r.Zoneinfo(&z) == nil {
		snap.Meminfo.MemAvailable = proc.EstimateAvailable(m, &z)
		snap.Meminfo.Available = AvailableEstimated
	} else {
		snap.Meminfo.MemAvailable = proc.EstimateAvailable(m, nil)
		snap.Meminfo.Available = AvailableUpperBound
	}
}

// Used is MemTotal - MemAvailable, in bytes: what the kernel says it
// cannot hand out without swapping. Zero for a malformed meminfo whose
// MemAvailable exceeds MemTotal.
func (m *Meminfo) Used() uint64 {
	if m.MemAvailable > m.MemTotal {
		return 0
	}
	return m.MemTotal - m.MemAvailable
}

// SwapUsed is SwapTotal - SwapFree, in bytes, clamped at zero.
func (m *Meminfo) SwapUsed() uint64 {
	if m.SwapFree > m.SwapTotal {
		return 0
	}
	return m.SwapTotal - m.SwapFree
}

// NotInProcess is Used minus the processes' RAM, in bytes: kernel memory,
// slab, page tables, huge page pools, and page cache and shmem/tmpfs that
// no process maps. It can be negative: MemAvailable counts reclaimable
// page cache as available even while processes map it (and their PSS
// includes it), and status-based estimates count shared pages once per
// process.
func (m *Meminfo) NotInProcess(processRAM uint64) int64 {
	return clampInt64(m.Used()) - clampInt64(processRAM)
}

// SwapNotInProcess is SwapUsed minus the processes' swap, in bytes: swap
// that no process's SwapPss holds. That is shmem (tmpfs, SysV shm, memfd,
// shared anonymous) swapped out, which SwapPss leaves out even where a
// process maps it, and the slots of swap-cache pages (SwapCached: back
// in RAM, keeping their slot) that processes map again (those a page
// table still points to are in SwapPss). It can be negative where swap is estimated
// (VmSwap, or Swap without SwapPss, counts shared swapped pages once per
// process).
func (m *Meminfo) SwapNotInProcess(processSwap uint64) int64 {
	return clampInt64(m.SwapUsed()) - clampInt64(processSwap)
}

// clampInt64 converts a byte count to int64 for a difference, capped at
// 2^62 bytes so that no difference of two overflows.
func clampInt64(v uint64) int64 {
	if v > 1<<62 {
		return 1 << 62
	}
	return int64(v)
}
