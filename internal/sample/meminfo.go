package sample

import (
	"time"

	"github.com/memwho/memwho/internal/proc"
)

// ReadMeminfo reads /proc/meminfo and /proc/zoneinfo through r into snap
// (Meminfo, MeminfoOK and MeminfoErr), using m as scratch: the host
// figures of every snapshot the sampler (internal/engine) fills, read
// after its walk. When ReadMeminfoBefore read them before the walk too,
// it sets BeforeSpan.
//
// Where the kernel gives no MemAvailable line, MemAvailable is computed
// the way the kernel computes it (proc.EstimateAvailable), with the zone
// watermarks of /proc/zoneinfo when it can be read, and Available says
// so. A MemAvailable of 0 would make every byte of RAM "used".
func ReadMeminfo(r *proc.Reader, m *proc.Meminfo, snap *Snapshot) {
	snap.MeminfoErr = readHost(r, m, &snap.Meminfo)
	snap.MeminfoOK = snap.MeminfoErr == nil
	if snap.BeforeOK {
		// snap.Time is when the walk, and ReadMeminfoBefore, started.
		snap.BeforeSpan = time.Since(snap.Time)
	}
}

// ReadMeminfoBefore is ReadMeminfo into snap.Before (BeforeOK), for the
// sampler to call before its walk, just after it sets snap.Time.
func ReadMeminfoBefore(r *proc.Reader, m *proc.Meminfo, snap *Snapshot) {
	snap.BeforeOK = readHost(r, m, &snap.Before) == nil
	snap.BeforeSpan = 0
}

// readHost reads meminfo and zoneinfo into out, zero on error.
func readHost(r *proc.Reader, m *proc.Meminfo, out *Meminfo) error {
	if err := r.Meminfo(m); err != nil {
		*out = Meminfo{}
		return err
	}
	*out = Meminfo{
		MemTotal: m.MemTotal, MemFree: m.MemFree, MemAvailable: m.MemAvailable,
		Buffers: m.Buffers, Cached: m.Cached, Shmem: m.Shmem,
		SwapTotal: m.SwapTotal, SwapFree: m.SwapFree, SwapCached: m.SwapCached,
		Hugetlb:      m.Hugetlb,
		SReclaimable: m.SReclaimable, SUnreclaim: m.SUnreclaim, KernelStack: m.KernelStack,
		PageTables:  min(m.PageTables+m.SecPageTables, proc.MaxBytes),
		VmallocUsed: m.VmallocUsed, Percpu: m.Percpu, Zswap: m.Zswap,
		KReclaimable: m.KReclaimable, Zswapped: m.Zswapped, AnonPages: m.AnonPages,
		HardwareCorrupted: m.HardwareCorrupted, Unaccepted: m.Unaccepted,
	}
	var z proc.Zoneinfo
	zerr := r.Zoneinfo(&z)
	if zerr == nil {
		out.PCPFree = z.PCPFree
	}
	if m.HasMemAvailable {
		return nil
	}
	if zerr == nil {
		out.MemAvailable = proc.EstimateAvailable(m, &z)
		out.Available = AvailableEstimated
	} else {
		out.MemAvailable = proc.EstimateAvailable(m, nil)
		out.Available = AvailableUpperBound
	}
	return nil
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
