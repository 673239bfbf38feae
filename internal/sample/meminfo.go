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
		Hugetlb: m.Hugetlb,
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
