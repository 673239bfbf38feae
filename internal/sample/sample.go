// Package sample is the data model of a walk of a /proc tree, a Snapshot
// of per-process memory figures, and its rules: how figures are computed
// (ExactFigures, EstimateFigures), how programs are named, how processes
// are grouped (by program, pid, user, cgroup, unit, slice or container).
//
// It does not read /proc (that is the sampler, package engine), parse
// /proc files (package proc) or render anything (package report). Every memory figure here is in
// bytes.
package sample

import "time"

// Accuracy says how a figure was obtained.
type Accuracy uint8

const (
	// Exact figures come from /proc/PID/smaps_rollup (or a per-VMA sum of
	// /proc/PID/smaps): proportional set size as the kernel computes it.
	Exact Accuracy = iota
	// Estimate figures come from /proc/PID/status (RSS-based) because the
	// page-table walk was not permitted or was not asked for (--fast).
	// Shared pages are counted in full by every process that maps them.
	Estimate
)

// String returns "exact" or "estimate", the spelling used in JSON and CSV.
func (a Accuracy) String() string {
	if a == Estimate {
		return "estimate"
	}
	return "exact"
}

// Cause says why a process's figures are estimates, so that warnings can
// count the processes a report shows rather than every process scanned.
type Cause uint8

const (
	// CauseNone: exact figures, or estimates by choice (--fast).
	CauseNone Cause = iota
	// CauseDenied: the page-table walk (smaps_rollup) was refused.
	CauseDenied
	// CauseMalformed: smaps_rollup could not be parsed (cut short,
	// missing a counter, too large).
	CauseMalformed
	// CausePaced: the process was read page by page (pagemap) so as not
	// to stop it, and the shares of some of its pages are estimated:
	// RAM is within Bound of the truth, Swap within SwapBound (both
	// from above when memwho cannot look frames up). Private is exact.
	CausePaced
)

// Process is one process's memory at the moment it was read.
type Process struct {
	PID int
	// PPID is the parent's PID. It is filled when naming needed it or
	// with Options.NeedStartTime or NeedUID; 0 otherwise.
	PPID int
	// StartTime is field 22 of /proc/PID/stat, in clock ticks since boot;
	// filled only with Options.NeedStartTime. (PID, StartTime) identifies
	// a process across PID reuse.
	StartTime uint64
	// UID is the real user id (first field of Uid: in status). It is only
	// filled when UIDKnown is true: the scan reads status for it only when
	// a user filter or user grouping needs it, or when it falls back to
	// status-based estimates.
	UID      uint32
	UIDKnown bool

	// Name is the program name the report shows, chosen by the rules of
	// ProgramName from Comm, Exe, Script and the parent's Exe.
	Name string
	// Comm is the kernel's task name (at most 15 bytes for user
	// processes), raw: it may hold any byte except NUL, including newlines
	// and invalid UTF-8.
	Comm string
	// Exe is the basename of /proc/PID/exe. When the link could not be
	// read (permission) or is no path (a memfd), it is the basename of
	// argv[0] when the task name is a prefix of it (ExeFromCmdline), else
	// "".
	Exe string
	// ExeDeleted is true when the executable was deleted or replaced
	// after the process started (the link ends in " (deleted)").
	ExeDeleted bool
	// Script is the script or module an interpreter runs (for example
	// "app.py" for "python3 app.py"), "" otherwise.
	Script string
	// Cgroup is the process's cgroup path (memory controller on cgroup v1,
	// the unified hierarchy on v2), filled only when grouping by cgroup.
	Cgroup string
	// SystemdCgroup is the process's path in the hierarchy systemd
	// manages (proc.CgroupPaths), which names its unit and container;
	// filled with Cgroup, and the same string on a cgroup v2 host.
	SystemdCgroup string

	// RAM is the proportional set size in bytes: Pss plus Private_Hugetlb
	// from smaps_rollup (exact), or VmRSS from status (estimate).
	RAM uint64
	// Private is Private_Clean + Private_Dirty + Private_Hugetlb in bytes
	// (exact), or RssAnon (estimate).
	Private uint64
	// Shared is RAM - Private in bytes: this process's proportional share
	// of pages it shares with others (exact), or RssFile + RssShmem
	// (estimate, counted in full).
	Shared uint64
	// Swap is SwapPss in bytes (swapped-out pages divided among the
	// processes that share them), or Swap/VmSwap where SwapPss is not
	// available (SwapPssMissing).
	Swap uint64
	// SwapPssMissing is true when the kernel gave no SwapPss line and Swap
	// counts shared swapped pages in full.
	SwapPssMissing bool
	// Accuracy says whether RAM, Private, Shared and Swap are exact.
	Accuracy Accuracy
	// Cause says why an estimate is one; CauseNone for exact figures.
	Cause Cause
	// Bound is how far RAM (and so Shared) may be from the truth, in
	// bytes, for a process read page by page (CausePaced); 0 otherwise.
	Bound uint64
	// SwapBound is how much Swap may overstate the truth, in bytes, for
	// a process read page by page (CausePaced); 0 otherwise.
	SwapBound uint64
	// Conns is the number of ESTABLISHED TCP sockets (IPv4 and IPv6) the
	// process holds; valid only when Snapshot.ConnsOK.
	Conns uint32

	// PssAnon, PssFile and PssShmem split RAM by kind of page, in bytes:
	// Pss_Anon, Pss_File and Pss_Shmem of smaps_rollup (kernel 5.8+;
	// zero before), or RssAnon, RssFile and RssShmem of status
	// (estimate, kernel 4.5+). Exact, they sum to RAM - PrivateHugetlb.
	PssAnon, PssFile, PssShmem uint64
	// PrivateHugetlb is Private_Hugetlb of smaps_rollup in bytes: huge
	// pages of a pool (hugetlbfs) only this process maps, counted in RAM
	// and Private. Zero for estimates.
	PrivateHugetlb uint64
}

// Meminfo holds the host-wide figures from /proc/meminfo, in bytes.
type Meminfo struct {
	MemTotal uint64
	MemFree  uint64
	// MemAvailable is the kernel's MemAvailable line or, where it is
	// missing, the same estimate computed from other lines (see
	// Available).
	MemAvailable uint64
	Buffers      uint64
	Cached       uint64
	Shmem        uint64
	SwapTotal    uint64
	SwapFree     uint64
	// SwapCached is memory that is both in RAM and in swap: swapped
	// back in, its swap slot still held. No process's SwapPss counts it.
	SwapCached uint64
	// Hugetlb is the total of all huge page pools (the Hugetlb: line, or
	// HugePages_Total x Hugepagesize on kernels without it).
	Hugetlb uint64
	// Available says where MemAvailable came from.
	Available AvailableSource

	// The kernel's own memory, as /proc/meminfo itemises it, for the
	// host ledger (Ledger): SReclaimable, SUnreclaim, KernelStack,
	// PageTables (PageTables + SecPageTables), VmallocUsed, Percpu and
	// Zswap lines. Zero where the kernel has no such line.
	SReclaimable, SUnreclaim, KernelStack, PageTables uint64
	VmallocUsed, Percpu, Zswap                        uint64
	// More of meminfo's lines for the ledger: KReclaimable (4.20+),
	// Zswapped (what zswap's pool holds, uncompressed; 5.19+),
	// AnonPages, HardwareCorrupted and Unaccepted (6.5+). Zero where
	// the kernel has no such line.
	KReclaimable, Zswapped, AnonPages uint64
	HardwareCorrupted, Unaccepted     uint64
	// PCPFree is the free memory on the per-CPU lists, in no line of
	// meminfo (proc.Zoneinfo.PCPFree), in bytes; 0 where
	// /proc/zoneinfo could not be read.
	PCPFree uint64
	// Zram is the RAM zram devices take (proc.ZramUsed: mem_used_total
	// of /sys/block/zram*/mm_stat), in bytes; 0 where there is none or
	// sysfs was not read.
	Zram uint64
}

// AvailableSource says where Meminfo.MemAvailable came from.
type AvailableSource uint8

const (
	// AvailableKernel is the MemAvailable line of /proc/meminfo.
	AvailableKernel AvailableSource = iota
	// AvailableEstimated is computed as the kernel computes MemAvailable
	// (proc.EstimateAvailable), with the zone watermarks of
	// /proc/zoneinfo: the line was missing (kernels before 3.14, some
	// containers' fake meminfo).
	AvailableEstimated
	// AvailableUpperBound is the same computation without the zone
	// watermarks, /proc/zoneinfo being unreadable too: it overstates
	// what is available by up to the low watermarks and the
	// allocator's reserve.
	AvailableUpperBound
)

// String returns "meminfo", "estimate" or "estimate_no_watermarks", the
// spelling of JSON's mem_available_source.
func (a AvailableSource) String() string {
	switch a {
	case AvailableEstimated:
		return "estimate"
	case AvailableUpperBound:
		return "estimate_no_watermarks"
	}
	return "meminfo"
}

// Snapshot is the result of one walk of /proc.
type Snapshot struct {
	Time  time.Time
	Procs []Process
	// Meminfo is valid when MeminfoOK is true; MeminfoErr says why it
	// is not. It is read after the walk.
	Meminfo    Meminfo
	MeminfoOK  bool
	MeminfoErr error
	// Before is /proc/meminfo read before the walk, valid when
	// BeforeOK; BeforeSpan is the time from that read to Meminfo's.
	// Set against Meminfo, it says how far the host moved while the
	// processes were read (SnapshotLedger). Zram is not read there.
	Before     Meminfo
	BeforeOK   bool
	BeforeSpan time.Duration
	// Gone counts processes that exited between listing /proc and reading
	// them; they are left out.
	Gone int
	// Denied counts processes whose exact figures were not permitted and
	// that are therefore estimates.
	Denied int
	// Kernel counts kernel threads and zombies (no address space); they are
	// left out.
	Kernel int
	// Broken counts processes left out because a file every process has
	// (stat, status) could not be parsed, or because the sampler ran out
	// of file descriptors or memory reading them: their memory is
	// missing from the totals.
	Broken int
	// Malformed counts processes whose smaps_rollup could not be parsed
	// (for example, cut short); their figures are estimates.
	Malformed int
	// ConnsOK is true when Process.Conns was counted (--conns).
	ConnsOK bool
	// Oldest is when the oldest figure was read, when before Time: an
	// incremental sampler (the agent) keeps the figures of processes
	// that did not change from earlier walks. Zero for a walk that read
	// every process.
	Oldest time.Time
	// StaleBound is the most, in bytes, by which the sum of RAM over the
	// figures older than Time can be off (pages they share may have
	// been mapped or unmapped by others since; engine.Stats.StaleBound).
	// Zero for a walk that read every process.
	StaleBound uint64
}

// Group is the sum of the processes that share a key.
type Group struct {
	// Key is the group's name as a raw string (program name, pid, user
	// name, cgroup path). Renderers must sanitise it.
	Key string
	// Count is the number of processes in the group.
	Count int
	// PIDs lists the group's processes in ascending order.
	PIDs []int
	// RAM, Private, Shared and Swap are sums over the group, in bytes.
	RAM, Private, Shared, Swap uint64
	// PssAnon, PssFile, PssShmem and PrivateHugetlb sum the processes'
	// split of RAM (Process.PssAnon...), in bytes.
	PssAnon, PssFile, PssShmem, PrivateHugetlb uint64
	// Estimated is the number of processes whose figures are estimates;
	// the group's figures are exact only when it is zero.
	Estimated int
	// SwapPssMissing is true when some process's swap lacked SwapPss.
	SwapPssMissing bool
	// EstimatedNoSwap counts the estimated processes that had no swap
	// (VmSwap 0): each adds an exact 0 to the group's swap, which is an
	// estimate only when Estimated is more (SwapEstimated: no ~ on swap
	// that is all exact). A group made
	// without it (from the history) keeps the mark.
	EstimatedNoSwap int
	// Conns sums the processes' ESTABLISHED TCP sockets; valid only when
	// Snapshot.ConnsOK.
	Conns uint64
	// Paced counts the estimated processes read page by page
	// (CausePaced); Bound and SwapBound sum their bounds
	// (Process.Bound), in bytes: RAM and Swap are within them of the
	// truth.
	Paced            int
	Bound, SwapBound uint64
}

// SwapEstimated reports whether g's swap is an estimate: some
// estimated process had swap, counted in full (VmSwap).
func (g *Group) SwapEstimated() bool { return g.Estimated > g.EstimatedNoSwap }

// Accuracy returns Exact when every process in g was read exactly.
func (g *Group) Accuracy() Accuracy {
	if g.Estimated > 0 {
		return Estimate
	}
	return Exact
}
