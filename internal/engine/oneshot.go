package engine

import (
	"slices"
	"strings"
	"time"

	"github.com/memwho/memwho/internal/sample"
	"golang.org/x/sys/unix"
)

// This file is the scan of a OneShot sampler, a report's: every process
// is read once, straight into the snapshot, and nothing is kept.
//
// A report is one scan in a short-lived process, where the garbage
// collector never runs (the heap stays under its 4 MiB minimum): every
// byte allocated stays resident until exit. So this path allocates each
// slice once at its final size and keeps no per-process state beyond
// the snapshot itself: no record (360 bytes each), no PID map, no
// Details. At 3000 processes that is about 1.5 MB less than reading
// through the incremental sampler's records.

// oneWorker is a worker of a OneShot scan with the one record it reads
// every process through, in turn.
type oneWorker struct {
	w  *worker
	rc record
}

// scanOnce is Scan for a OneShot sampler.
func (e *Engine) scanOnce(snap *sample.Snapshot, start time.Time) error {
	if e.pids == nil && len(e.opt.PIDs) == 0 {
		e.pids = make([]int, 0, e.countHint())
	}
	if err := e.listPIDs(); err != nil {
		return err
	}
	n := len(e.pids)

	// Every process is read into its own slot of snap.Procs, its state
	// into e.states, and both are compacted at the end.
	procs := slices.Grow(snap.Procs[:0], n)[:n]
	e.states = slices.Grow(e.states[:0], n)[:n]
	if len(e.once) == 0 {
		for _, w := range e.workers {
			e.once = append(e.once, &oneWorker{w: w})
		}
	}
	forEach(e.once, n, func(ow *oneWorker, j int) {
		rc := &ow.rc
		*rc = record{pid: e.pids[j], fd: -1, rfd: -1}
		e.readNew(ow.w, rc, start)
		ow.w.r.Close()
		procs[j], e.states[j] = rc.p, rc.st
	})
	// A process that could not be read for want of descriptors (the
	// workers' own, or a low RLIMIT_NOFILE) is read once more, alone,
	// with every other worker's descriptors closed.
	for j := range procs {
		if e.states[j] == stStarved {
			ow := e.once[0]
			rc := &ow.rc
			*rc = record{pid: e.pids[j], fd: -1, rfd: -1}
			e.readNew(ow.w, rc, start)
			ow.w.r.Close()
			procs[j], e.states[j] = rc.p, rc.st
		}
	}
	for _, w := range e.workers {
		e.stats.WalkTime += w.walkTime
		w.walkTime = 0
	}
	e.stats.Paced = int(e.paced_.Load())

	// Name every process before the compaction moves them: a parent is
	// looked up by its slot.
	if !e.opt.NoNames {
		for j := range procs {
			if e.states[j] <= stMalformed {
				e.nameOnce(procs, j)
			}
		}
	}
	k := 0
	for j := range procs {
		keep, cause := tally(snap, e.states[j])
		if !keep {
			continue
		}
		if cause != sample.CauseNone {
			sample.Refused(&procs[j], cause)
		}
		procs[k] = procs[j]
		k++
	}
	// Clear the tail so that the strings it held can be collected.
	clear(procs[k:])
	snap.Procs = procs[:k]
	e.stats.New = k
	snap.ConnsOK = false
	if e.conns != nil {
		// Options.Conns with OneShot: one count of every process, as
		// a report's --conns does.
		e.stats.ConnsDenied, e.stats.ConnsErr = CountConns(e.opt.FS, snap)
	}
	sample.ReadMeminfo(e.workers[0].r, &e.meminfo, snap)
	e.stats.Duration = time.Since(start)
	return nil
}

// nameOnce sets the program name of procs[j], whose parent, when naming
// needs it, is found among procs (sorted by PID) by binary search.
func (e *Engine) nameOnce(procs []sample.Process, j int) {
	p := &procs[j]
	parentExe := ""
	if p.Exe != "" && !strings.HasPrefix(p.Exe, p.Comm) && p.PPID > 0 {
		// ProgramName looks at the parent only then.
		if k, ok := slices.BinarySearch(e.pids, p.PPID); ok && e.states[k] != stGone {
			parentExe = procs[k].Exe
		}
	}
	n := sample.ProgramName(p, parentExe)
	// Keep no fresh copy of the common case, where the name is one of
	// the process's own (already interned) strings.
	switch n {
	case p.Exe:
		n = p.Exe
	case p.Comm:
		n = p.Comm
	}
	p.Name = n
}

// countHint returns a first capacity for the listing of /proc: on a real
// procfs the root directory's link count is the number of processes on
// the host (plus a few), which sizes the PID slice once instead of by
// doubling. In a PID namespace the host's count overstates the listing;
// the pages never written are never resident, and the cap bounds what
// is reserved. A tree that is not procfs gives its subdirectories.
func (e *Engine) countHint() int {
	var st unix.Stat_t
	if unix.Fstat(e.fs.Fd(), &st) != nil || st.Nlink == 0 {
		return 256
	}
	return int(min(st.Nlink, 1<<16))
}
