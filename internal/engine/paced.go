package engine

import (
	"time"

	"github.com/memwho/memwho/internal/proc"
)

// Reading big processes without stopping them.
//
// smaps_rollup's walk holds the process's mmap_lock while the kernel
// walks the page tables of each mapping, and a process that maps or
// unmaps memory meanwhile waits: about 8 to 13 ms per GiB of 4 KiB
// pages (docs/performance.md, "What a read costs the process read").
// A process whose page tables map at least Options.PacedMin bytes
// (resident, or swapped out: the walk visits both) is read page by page
// instead (proc.Reader.Paced): /proc/PID/pagemap in steps that hold the
// lock for one 2 MiB step of the page tables at a time, with pauses
// between bursts of them. Its private memory stays exact, and as root so
// do its shared pages (frame lookups in /proc/kpagecount); otherwise its
// shared pages are estimated from above, with a stated bound
// (sample.CausePaced).

// DefaultPacedMin is the walk size from which a process is read page by
// page: 64 MiB of 4 KiB pages take the kernel's walk 0.5 to 0.8 ms.
const DefaultPacedMin = 64 << 20

const pageSize = 4096

// pacedMin returns the walk size, in bytes, from which processes are
// read page by page; 0 when none is.
func (e *Engine) pacedMin() uint64 {
	switch {
	case e.opt.Fast || e.opt.PacedMin < 0:
		return 0
	case e.opt.PacedMin == 0:
		return DefaultPacedMin
	}
	return uint64(e.opt.PacedMin)
}

// paced reports whether rc's process is to be read page by page, with the
// statm its decision rests on. An incremental sampler has read statm this
// tick (rc.now); a OneShot one reads it now, by path. Swapped-out pages
// count only on a host with that much swap in use, where a process with
// as much private writable memory has its status read for VmSwap (an
// incremental sampler knows it from its last read).
func (e *Engine) paced(w *worker, rc *record) (bool, proc.Statm) {
	min := e.pacedMin()
	if min == 0 {
		return false, proc.Statm{}
	}
	st := rc.now
	if e.opt.OneShot || !st.OK {
		point(w, rc, false)
		s, err := w.r.Statm()
		if err != nil || !s.OK {
			// Read the usual way, which tells what happened.
			return false, proc.Statm{}
		}
		st = s
	}
	walk := st.Resident * pageSize
	if walk >= min {
		return true, st
	}
	if e.swapUsed < min || st.Data*pageSize < min {
		return false, st
	}
	if rc.ref.OK {
		// Read before: its swapped pages as last seen.
		return walk+rc.lastSwap >= min, st
	}
	point(w, rc, false)
	if w.r.Status(&w.ss) != nil {
		return false, st
	}
	return walk+w.ss.VmSwap >= min, st
}

// readPaced reads rc's process page by page, with its names when asked:
// the pagemap descriptor is opened first and read last, which proves, as
// smaps_rollup held does (readHeld), that every read in between saw the
// same process. ok is false when the process has to be read the usual
// way: its pagemap was refused or could not be read.
func (e *Engine) readPaced(w *worker, rc *record, st proc.Statm, names, first bool) (state, bool) {
	e.dropRollup(rc)
	r := w.r
	point(w, rc, false)
	switch err := r.HoldPagemap(); err {
	case nil:
	case proc.ErrGone:
		return stGone, true
	default:
		// Refused, or no pagemap (a captured tree; a kernel built
		// without it has no smaps either): the usual read tells.
		return 0, false
	}
	exeRead := false
	if names && !e.opt.NoNames {
		w.exe, w.exeErr = r.Exe(w.link[:0])
		exeRead = true
	}
	if s := e.readRest(w, rc, names, first, false, exeRead); s != stExact {
		r.Close()
		return s, true
	}
	t0 := time.Now()
	err := r.Paced(&w.ru, &w.pc, st)
	d := time.Since(t0)
	switch err {
	case nil:
	case proc.ErrGone, proc.ErrNotExist:
		return stGone, true
	case proc.ErrNoMM:
		return stKernel, true
	case proc.ErrExhausted:
		return stStarved, true
	default:
		// Denied, malformed, too large: the usual read tells which.
		return 0, false
	}
	e.paced_.Add(1)
	e.exact(w, rc, d)
	return e.confirm(w, rc, stExact), true
}

// hostSwapUsed reads the host's swap in use, in bytes, from
// /proc/meminfo: 0 when it cannot be read.
func (e *Engine) hostSwapUsed() uint64 {
	if e.pacedMin() == 0 {
		return 0
	}
	var m proc.Meminfo
	if e.workers[0].r.Meminfo(&m) != nil || m.SwapFree > m.SwapTotal {
		return 0
	}
	return m.SwapTotal - m.SwapFree
}
