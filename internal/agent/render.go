package agent

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/sample"
)

// Metric names follow the Prometheus conventions: a memwho_ prefix, base
// units (bytes, seconds) as suffixes, _total on counters, and the
// standard process_* names for the agent's own process. A family whose
// data does not exist (TCP counts without --conns, host figures without
// /proc/meminfo) is left out entirely rather than written empty.

// renderWalk renders the metrics that change only with a walk.
func (a *Agent) renderWalk(ex *expo, st *state, stats *engine.Stats) {
	snap := st.snap
	groups := sample.GroupProcs(snap.Procs, a.opt.By, &a.names)
	slices.SortFunc(groups, func(x, y sample.Group) int { return strings.Compare(x.Key, y.Key) })
	total := sample.Total(groups)
	conns := snap.ConnsOK

	tcpSource := "off"
	if a.opt.Engine.Conns {
		switch {
		case stats.ConnsErr != nil:
			tcpSource = "failed"
		case stats.ConnsProcNet:
			tcpSource = "proc_net"
		default:
			tcpSource = "sock_diag"
		}
	}
	ex.family("memwho_agent_info", "gauge", "Constant 1, labelled with the agent's version, its grouping of processes (by) and where ESTABLISHED TCP sockets are listed from (tcp_source: sock_diag, proc_net, failed or off).")
	ex.name("memwho_agent_info", true)
	ex.label("version", a.opt.Version, true)
	ex.labelRaw("by", a.opt.By.String(), false)
	ex.labelRaw("tcp_source", tcpSource, false)
	ex.uint(1, true)

	by := a.opt.By.String()
	group := func(name, help string, v func(g *sample.Group) uint64) {
		ex.family(name, "gauge", help)
		for i := range groups {
			ex.name(name, true)
			ex.label("group", groups[i].Key, true)
			ex.uint(v(&groups[i]), true)
		}
	}
	group("memwho_group_pss_bytes", "RAM used by the processes of the group (by "+by+"): proportional set size, Pss + Private_Hugetlb from smaps_rollup, in bytes; RSS-based for the processes counted in memwho_group_estimated_processes.",
		func(g *sample.Group) uint64 { return g.RAM })
	group("memwho_group_private_bytes", "Part of memwho_group_pss_bytes that no other process maps (Private_Clean + Private_Dirty + Private_Hugetlb), in bytes.",
		func(g *sample.Group) uint64 { return g.Private })
	group("memwho_group_shared_bytes", "Part of memwho_group_pss_bytes that is the group's share of pages mapped by several processes, in bytes.",
		func(g *sample.Group) uint64 { return g.Shared })
	group("memwho_group_swap_bytes", "Swap used by the group's processes: SwapPss (swapped-out pages divided among their sharers), in bytes.",
		func(g *sample.Group) uint64 { return g.Swap })
	group("memwho_group_processes", "Number of processes in the group.",
		func(g *sample.Group) uint64 { return uint64(g.Count) })
	group("memwho_group_estimated_processes", "Number of the group's processes whose figures are RSS-based estimates (smaps_rollup not readable).",
		func(g *sample.Group) uint64 { return uint64(g.Estimated) })
	if conns {
		group("memwho_group_tcp_established", "ESTABLISHED TCP sockets (IPv4 and IPv6) held by the group's processes.",
			func(g *sample.Group) uint64 { return g.Conns })
	}

	if k := a.opt.TopProcesses; k > 0 && len(snap.Procs) > 0 {
		a.renderTop(ex, st, k, conns)
	}

	ex.gaugeUint("memwho_processes", "Number of processes in the snapshot (kernel threads, zombies and processes that exited while read are left out).", uint64(len(snap.Procs)))
	ex.gaugeUint("memwho_processes_pss_bytes", "RAM used by all processes: the sum of memwho_group_pss_bytes, in bytes.", total.RAM)
	ex.gaugeUint("memwho_processes_swap_bytes", "Swap used by all processes: the sum of memwho_group_swap_bytes, in bytes.", total.Swap)
	if conns {
		ex.gaugeUint("memwho_processes_tcp_established", "ESTABLISHED TCP sockets held by all processes.", total.Conns)
	}

	if snap.MeminfoOK {
		m := &snap.Meminfo
		ex.gaugeUint("memwho_host_memory_total_bytes", "Usable RAM of the host (MemTotal in /proc/meminfo), in bytes.", m.MemTotal)
		ex.gaugeUint("memwho_host_memory_available_bytes", "RAM available for new work without swapping (MemAvailable), in bytes.", m.MemAvailable)
		ex.gaugeUint("memwho_host_memory_used_bytes", "RAM in use on the host: MemTotal - MemAvailable, in bytes.", m.Used())
		ex.gaugeUint("memwho_host_shmem_bytes", "Shared memory and tmpfs (Shmem), in bytes.", m.Shmem)
		ex.gaugeUint("memwho_host_hugetlb_bytes", "Huge page pools (Hugetlb), in bytes.", m.Hugetlb)
		ex.gaugeUint("memwho_host_swap_total_bytes", "Swap space (SwapTotal), in bytes.", m.SwapTotal)
		ex.gaugeUint("memwho_host_swap_used_bytes", "Swap in use: SwapTotal - SwapFree, in bytes.", m.SwapUsed())
		a.renderLedger(ex, &total, snap)
	}

	ex.family("memwho_skipped_processes", "gauge", "Processes left out of the last snapshot, by reason: gone (exited while read), kernel (kernel threads and zombies), broken (stat or status unparsable).")
	ex.byReason("memwho_skipped_processes", []string{"broken", "gone", "kernel"},
		uint64(snap.Broken), uint64(snap.Gone), uint64(snap.Kernel))
	// --fast estimates every process by choice: counted under no
	// reason, the reasons would sum to 0 while every group is an
	// estimate.
	var chosen, paced uint64
	for i := range snap.Procs {
		switch p := &snap.Procs[i]; {
		case p.Accuracy == sample.Estimate && p.Cause == sample.CauseNone:
			chosen++
		case p.Cause == sample.CausePaced:
			paced++
		}
	}
	ex.family("memwho_estimated_processes", "gauge", "Processes of the last snapshot with estimated figures, by reason: denied (smaps_rollup not permitted: grant CAP_SYS_PTRACE), malformed (smaps_rollup unparsable), fast (--fast: no page-table walks), all RSS-based; paced (a large process read page by page so as not to stall it, whose shared pages' shares are estimated: see memwho_processes_pss_bound_bytes).")
	ex.byReason("memwho_estimated_processes", []string{"denied", "fast", "malformed", "paced"},
		uint64(snap.Denied), chosen, uint64(snap.Malformed), paced)
	ex.gaugeUint("memwho_processes_pss_bound_bytes", "How far memwho_processes_pss_bytes may be from the truth because of the processes read page by page (reason paced), in bytes: their shared pages' shares are estimated (exact as root but past a sample of 16384 pages).", total.Bound)
	ex.gaugeUint("memwho_processes_swap_bound_bytes", "How far memwho_processes_swap_bytes may be from the truth because of the processes read page by page, in bytes: their swapped-out pages count in full.", total.SwapBound)
	if a.opt.Engine.Conns && conns {
		ex.gaugeUint("memwho_tcp_unreadable_processes", "Processes whose /proc/PID/fd could not be read in the last walk (needs CAP_DAC_READ_SEARCH and CAP_SYS_PTRACE); they count 0 TCP sockets.", uint64(stats.ConnsDenied))
	}

	var stale int
	for _, d := range a.src.Details() {
		if !d.Walked {
			stale++
		}
	}
	ex.gaugeUint("memwho_stale_figures", "Processes whose figures were not re-read in the last walk because their statm did not move (see docs/agent.md, error bound).", uint64(stale))
	ex.gaugeUint("memwho_stale_error_bound_bytes", "The most by which the sum of the stale figures' RAM can be off, in bytes: each shared page counted once (see docs/agent.md, error bound).", stats.StaleBound)
	ex.gaugeFloat("memwho_snapshot_timestamp_seconds", "When the last walk started, in seconds since the Unix epoch.", unixSeconds(st.time))
	ex.gaugeFloat("memwho_oldest_figure_timestamp_seconds", "When the oldest figure of the last snapshot was read, in seconds since the Unix epoch: at most FullEvery walks old, older only for processes over their page-walk budget.", unixSeconds(st.oldest))
	ex.gaugeFloat("memwho_last_walk_duration_seconds", "How long the last walk took, in seconds.", st.walkDur.Seconds())
}

// renderLedger renders the host ledger (sample.SnapshotLedger), the one
// memwho --system shows, by the same names: every line of RAM and swap,
// the lines shown under swap and not summed, and the remainders.
func (a *Agent) renderLedger(ex *expo, total *sample.Group, snap *sample.Snapshot) {
	l := sample.SnapshotLedger(total, snap)
	ex.family("memwho_ledger_bytes", "gauge", "The host ledger of memwho --system, in bytes: RAM (ledger=\"ram\") itemised from /proc/meminfo, /proc/zoneinfo and zram's mm_stat so that its lines sum to MemTotal, swap (ledger=\"swap\") so that they sum to SwapTotal; each ends with line=\"not accounted\", signed. docs/accuracy.md gives every line's source.")
	for _, ledger := range []struct {
		name  string
		lines []sample.LedgerLine
	}{{"ram", l.RAM}, {"swap", l.Swap}} {
		for _, line := range ledger.lines {
			ex.name("memwho_ledger_bytes", true)
			ex.labelRaw("ledger", ledger.name, true)
			ex.label("line", line.Name, false)
			ex.int(line.Bytes, true)
		}
	}
	ex.family("memwho_ledger_not_summed_bytes", "gauge", "Figures shown under the host ledger and not summed, in bytes: swapped-out pages also in RAM (the swap cache, SwapCached; zswap's pool, Zswapped).")
	for _, line := range l.SwapAlso {
		ex.name("memwho_ledger_not_summed_bytes", true)
		ex.labelRaw("ledger", "swap", true)
		ex.label("line", line.Name, false)
		ex.int(line.Bytes, true)
	}
	ex.gaugeInt("memwho_unaccounted_memory_bytes", "RAM no line of the host ledger itemises: its line \"not accounted\" (memwho_ledger_bytes{ledger=\"ram\",line=\"not accounted\"}), in bytes: pages drivers, GPUs and the network stack allocate directly, swap cache no process maps, and what moved while the processes were read. Negative when estimates count shared pages in full.", l.RAM[len(l.RAM)-1].Bytes)
	ex.gaugeInt("memwho_unaccounted_swap_bytes", "Swap no line of the swap ledger itemises: its line \"not accounted\", in bytes (swapped shmem/tmpfs, slots of swap cache processes map again).", l.Swap[len(l.Swap)-1].Bytes)
	if mv := l.Moved; mv != nil {
		ex.gaugeInt("memwho_unaccounted_memory_before_walk_bytes", "memwho_unaccounted_memory_bytes computed with the host's figures read before the walk instead of after it, in bytes: the processes were read in between, so the difference is what moved meanwhile.", mv.RemainderBefore)
	}
}

// renderTop renders the per-process series of the k processes using the
// most RAM.
func (a *Agent) renderTop(ex *expo, st *state, k int, conns bool) {
	snap := st.snap
	details := a.src.Details()
	top := topProcesses(snap.Procs, k, nil)
	// Series in PID order: a stable layout for diffs and goldens.
	slices.SortFunc(top, func(x, y int) int { return cmp.Compare(snap.Procs[x].PID, snap.Procs[y].PID) })
	withGroup := a.opt.By != sample.ByProgram
	// series starts the sample of one process: its name and labels.
	series := func(name string, p *sample.Process) {
		ex.name(name, true)
		ex.labelInt("pid", p.PID, true)
		ex.label("name", p.Name, false)
		if withGroup {
			ex.label("group", sample.Key(p, a.opt.By, &a.names), false)
		}
	}
	proc := func(name, help string, v func(p *sample.Process) uint64) {
		ex.family(name, "gauge", help)
		for _, i := range top {
			series(name, &snap.Procs[i])
			ex.uint(v(&snap.Procs[i]), true)
		}
	}
	proc("memwho_process_pss_bytes", "RAM used by one of the processes using the most (see --top-processes): Pss + Private_Hugetlb, in bytes.",
		func(p *sample.Process) uint64 { return p.RAM })
	proc("memwho_process_private_bytes", "Part of memwho_process_pss_bytes no other process maps, in bytes.",
		func(p *sample.Process) uint64 { return p.Private })
	proc("memwho_process_shared_bytes", "Part of memwho_process_pss_bytes shared with other processes, in bytes.",
		func(p *sample.Process) uint64 { return p.Shared })
	proc("memwho_process_swap_bytes", "Swap used by the process (SwapPss), in bytes.",
		func(p *sample.Process) uint64 { return p.Swap })
	if conns {
		proc("memwho_process_tcp_established", "ESTABLISHED TCP sockets held by the process.",
			func(p *sample.Process) uint64 { return uint64(p.Conns) })
	}
	ex.family("memwho_process_sampled_timestamp_seconds", "gauge", "When the process's figures were read, in seconds since the Unix epoch; time() minus it is the figure's age.")
	for _, i := range top {
		series("memwho_process_sampled_timestamp_seconds", &snap.Procs[i])
		ex.float(unixSeconds(details[i].SampledAt), true)
	}
}

// renderScrape renders the figures that change with every scrape.
func (a *Agent) renderScrape(ex *expo, st *state, c *counters, sc scrapeCounters, now time.Time) {
	if st != nil && st.snap != nil {
		ex.gaugeFloat("memwho_snapshot_age_seconds", "Age of the snapshot served, in seconds: more than --min-interval when the last walk failed or outran the scrape timeout.", now.Sub(st.time).Seconds())
		ex.gaugeFloat("memwho_oldest_figure_age_seconds", "Age of the oldest figure in the snapshot served, in seconds.", now.Sub(st.oldest).Seconds())
	}
	ex.summary("memwho_walk_duration_seconds", "Duration of the walks of /proc (one sampling-engine tick each), in seconds.", c.walkSeconds, c.walks)
	ex.counterUint("memwho_walk_errors_total", "Walks that failed (the previous snapshot is served meanwhile).", c.walkErrors)
	ex.family("memwho_page_walks_total", "counter", "smaps_rollup reads (page-table walks), by reason: new (first sight), changed (statm moved), related (a child appeared or exited), forced (every process at least every FullEvery walks).")
	ex.byReason("memwho_page_walks_total", []string{"new", "changed", "related", "forced"},
		c.pageWalks[:]...)
	ex.counterUint("memwho_page_walks_deferred_total", "Page-table walks postponed because the process's walks exceed their time budget.", c.deferred)
	ex.counterFloat("memwho_page_walk_seconds_total", "Time spent reading smaps_rollup, summed over processes, in seconds.", c.pageWalkSeconds)
	if a.opt.Engine.Conns {
		ex.counterUint("memwho_tcp_errors_total", "Walks in which ESTABLISHED TCP sockets could not be listed.", c.connErrors)
	}
	ex.summary("memwho_scrape_duration_seconds", "Duration of the scrapes served before this one, in seconds, including any wait for a walk.", sc.seconds, sc.scrapes)
	ex.counterUint("memwho_scrape_timeouts_total", "Scrapes that stopped waiting for a walk at the scrape timeout and got the previous snapshot.", sc.timeouts)
	a.self.render(ex)
}

func unixSeconds(t time.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}
