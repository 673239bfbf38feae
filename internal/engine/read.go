package engine

import (
	"errors"
	"strings"
	"time"

	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/sample"
	"golang.org/x/sys/unix"
)

// This file is the one way memwho reads one process. Like package proc's
// readers it must not allocate in steady state: a tick of an unchanged
// host allocates nothing per process (see TestTickAllocs).
//
// Every read of a process must describe one process even if its PID is
// reused meanwhile. An open /proc/PID file is bound to the process it was
// opened for, which gives four anchors, cheapest first:
//
//   - the held statm descriptor of an incremental sampler: a read through
//     it after all the others proves they saw the process it was opened
//     for (record.fd, confirm);
//   - smaps_rollup opened first and read last (readHeld): a successful
//     last read proves the process lived, and kept its PID, throughout;
//   - the /proc/PID directory held and every file read through it
//     (readAnchored, when smaps_rollup cannot come last);
//   - without a descriptor from an earlier read, the start time in stat,
//     compared with the one recorded at the first read.
//
// A single file read alone (status for --fast) needs none. (A pagemap
// descriptor held and read last, readPaced, is the second anchor's
// twin.)
//
// # The paths of a read
//
// read calls readOnce, which takes the first path that applies; a path
// that cannot finish (ok false) hands on to the next one below it
// (TestReadPaths checks this table against the code):
//
//	path          taken when                                   anchor                           hands on when
//	readPaced     page tables reach PacedMin (paced.go)        pagemap held, read last          pagemap refused or missing; a sparse address space before Linux 6.7; maps malformed
//	readKept      a smaps_rollup descriptor is kept (rc.rfd)   the kept descriptor              the descriptor no longer reads (exit, exec); no exe link
//	readHeld      not --fast, the walk not refused last time   smaps_rollup held, read last     smaps_rollup refused, missing or unparsable; ESRCH at the open of a known process
//	readAnchored  always, last                                 the /proc/PID directory, or held statm  never: it ends the read
//
// A read ends in one state (type state): stExact (figures read, exact or
// with a stated bound), stEstimate (--fast), stDenied and stMalformed
// (status-based estimates), stKernel (no address space), stBroken (stat
// or status unparsable), stGone (exited, or the PID reused) and
// stStarved (memwho out of descriptors or memory). After readOnce, a
// stKernel process whose threads live on is pointed at one of them
// (toThread) and read once more; figures read from an address space
// that statm saw empty are stKernel (the process was exiting).
//
// # The states across ticks
//
// A tick (Scan) is four phases: 1, a new PID is read in full (readNew)
// and a known one's statm only (check); 2, plan picks what phase 3
// reads; 3, readNew or rewalk (which call read above), then relateLate;
// 4, tally counts each record by its state and the listed ones are
// collected. The state left in rc.st decides what phase 2 of the same
// tick, and the next tick, do with the record (TestReadPaths checks the
// listed and counted columns against tally):
//
//	state        listed  counted    what follows
//	stExact      yes     -          check's statm each tick; rewalk when it moved (actChanged), its text moved (actExec, names read again), a child came or went (actRelated) or FullEvery is due (actForced, names when due)
//	stEstimate   yes     -          as stExact
//	stDenied     yes     Denied     as stExact, but its reads skip readPaced and readHeld (a held pagemap or smaps_rollup would be refused again): readAnchored tries the walk again
//	stMalformed  yes     Malformed  as stExact
//	stKernel     no      Kernel     check's statm only, never walked; a statm that shows an address space makes it stGone
//	stBroken     no      Broken     check's statm; rewalk with names when FullEvery is due
//	stGone       no      Gone       from check (the PID listed again): reset, its parent related, read as new in phase 3; from a read: the record is dropped after the tick
//	stStarved    no      Broken     reset, its parent related, read as new in phase 3 (phase 1's descriptors closed; a one-shot scan retries once); still starved: the record is dropped after the tick, read as new the next
//
// A PID no longer listed drops its record, its parent related (walked
// again: it loses the pages it shared). Outside a full tick (ForceFull),
// plan defers a rewalk until the last walk's cost over
// Options.WalkBudget has passed since it; a new or starved process is
// read at once.

// read reads rc's process: its figures always, and with names its
// identity and names too (stat, comm or status, the exe link, cmdline,
// cgroup). first says that nothing is known of the process yet. It sets
// rc.st to what the read came to.
func (e *Engine) read(w *worker, rc *record, names, first bool, now time.Time) {
	w.threads = -1
	st := e.readOnce(w, rc, names, first)
	if st == stKernel && rc.tid == 0 {
		// A kernel thread or zombie, or a process whose main thread
		// exited while others run on: read it through one of them
		// from now on.
		switch e.toThread(w, rc) {
		case stExact:
			st = e.readOnce(w, rc, names, first)
		case stStarved:
			// Listing its threads or opening the thread's statm
			// ran out of descriptors. Left a kernel thread, the
			// process would be dropped unwarned, and for good: a
			// kernel thread is never read again.
			st = stStarved
		}
	}
	if names {
		rc.namesRead = true
	}
	if st == stExact || st == stEstimate || st == stDenied || st == stMalformed {
		if rc.now.Zero() {
			// statm read before the walk saw no address space: the
			// process was exiting.
			st = stKernel
		} else {
			rc.ref = rc.now
			rc.sampledAt = now
			rc.walked = true
		}
	}
	rc.st = st
}

// readOnce is one attempt of read, through rc.tid when it is set.
func (e *Engine) readOnce(w *worker, rc *record, names, first bool) state {
	if rc.rfd >= 0 && (rc.act == actExec || rc.act == actForced || e.tick >= rc.byPath+uint64(e.opt.FullEvery)) {
		// The descriptor is bound to an address space, not to the
		// process: after an exec it still reads the old one while
		// another task shares it (a CLONE_VM child, a vfork child's
		// parent). An exec seen in statm, every forced walk, and any
		// walk FullEvery ticks after the last read by path read by
		// path again, so an exec statm cannot see (the same program
		// again) is shown wrong for fewer than 2 × FullEvery ticks,
		// however often its statm moves (each move is a walk, which
		// puts the forced one off). Forcing a walk at that deadline
		// instead would walk every changing process more often: 17%
		// more walks per tick, measured.
		e.dropRollup(rc)
	}
	// A process whose pagemap was refused last time would be refused
	// again: it is read the anchored way below, as an estimate.
	if paced, st := e.paced(w, rc); paced && rc.st != stDenied {
		rc.byPath = e.tick
		if st, ok := e.readPaced(w, rc, st, names, first); ok {
			return st
		}
	}
	if rc.rfd >= 0 {
		if st, ok := e.readKept(w, rc, names); ok {
			return st
		}
	}
	rc.byPath = e.tick
	// A process whose walk was refused last time is read the anchored
	// way at once, which tries the walk again: holding smaps_rollup
	// would only be refused a second time.
	if !e.opt.Fast && (first || rc.st != stDenied) {
		if st, ok := e.readHeld(w, rc, names, first); ok {
			return st
		}
	}
	return e.readAnchored(w, rc, names, first)
}

// point aims w.r at rc's process, or at its thread rc.tid, by path, or
// with dir set by holding its directory.
func point(w *worker, rc *record, dir bool) error {
	switch {
	case dir && rc.tid == 0:
		return w.r.Open(rc.pid)
	case dir:
		return w.r.OpenTask(rc.pid, rc.tid)
	case rc.tid == 0:
		w.r.Select(rc.pid)
	default:
		w.r.SelectTask(rc.pid, rc.tid)
	}
	return nil
}

// readHeld reads an exact process with smaps_rollup read last, through a
// descriptor opened first, and every other file read by path: two
// syscalls fewer than holding the directory, which makes it the path of
// nearly every process. ok is false when the process has to be read again
// by readAnchored: its smaps_rollup was refused or unreadable, and
// status-based estimates follow.
func (e *Engine) readHeld(w *worker, rc *record, names, first bool) (st state, ok bool) {
	r := w.r
	point(w, rc, false)
	var err error
	viaSmaps := false
	if e.noRollup.Load() {
		err = r.Hold("smaps\x00")
	} else if err = r.Hold("smaps_rollup\x00"); err == proc.ErrNotExist {
		// No smaps_rollup: a kernel before 4.14, or no process (a
		// zombie's cannot be opened). Only a process with memory in
		// its smaps says which (noteNoRollup).
		err, viaSmaps = r.Hold("smaps\x00"), true
	}
	switch err {
	case nil:
	case proc.ErrNotExist, proc.ErrGone:
		return stGone, true
	case proc.ErrNoMM:
		// No address space, said at the open (ESRCH: Linux 6.x; older
		// kernels open the file and say it at the read, below): a
		// kernel thread, a zombie, a leader whose threads live on
		// (read then calls toThread). Settled here as the read below
		// settles it, start time included, instead of asking again
		// through the held directory: three syscalls fewer for each
		// of the host's kernel threads (strace: 106 openat2 per report
		// instead of 221 on a host of 74 processes, 58 of them kernel
		// threads).
		if !first {
			// A known process had an address space when last
			// read; ESRCH now is its exit, or its reaping
			// between the kernel's lookup and open (proc_mem_open
			// finds no task), which the read through the path or
			// directory tells apart: counted gone, its parent
			// walked for it, that tick. Kernel threads are read
			// only once: this costs them nothing.
			return 0, false
		}
		if e.needStart() {
			st := e.readStat(w, rc, true)
			if st == stExact && w.st.State != 'Z' && w.st.State != 'X' {
				// Stat, read by path after the open, shows
				// neither a kernel thread nor a zombie: the PID went
				// to another process since (a reaped zombie's), or
				// this one is between exit_mm and its end, or its
				// old leader was replaced by an exec'ing thread.
				// Settled, the record kept that process's start
				// time and was never read again. Ask again through
				// the directory, as before e7678ae, without it.
				rc.start, rc.p.PPID, rc.p.StartTime = 0, 0, 0
				return 0, false
			}
			if st != stExact {
				return st, true
			}
		}
		return stKernel, true
	default:
		return 0, false
	}
	exeRead, noExe := false, false
	if names && !e.opt.NoNames {
		// The exe link first: kernel threads and zombies have none, and
		// the held read then settles them before anything else is read
		// for nothing (a host can have thousands of zombies).
		w.exe, w.exeErr = r.Exe(w.link[:0])
		exeRead, noExe = true, w.exeErr == proc.ErrNotExist
	}
	if !noExe {
		if st := e.readRest(w, rc, names, first, false, exeRead); st != stExact {
			return st, true
		}
	} else if first && e.needStart() {
		// Even a kernel thread's start time is recorded: a record
		// without a descriptor is told from a PID's next process by
		// it every tick.
		if st := e.readStat(w, rc, true); st != stExact {
			return st, true
		}
	}
	rfd := -1
	if !viaSmaps && !noExe && e.keepRollup(rc) {
		if rfd = r.TakeHeld(); rfd < 0 {
			e.kept.Add(-1)
		}
	}
	t0 := time.Now()
	if rfd >= 0 {
		err = r.RollupFD(rfd, &w.ru)
	} else {
		err = r.RollupHeld(&w.ru)
	}
	d := time.Since(t0)
	if rfd >= 0 && err != nil {
		unix.Close(rfd)
		e.kept.Add(-1)
		rfd = -1
	}
	switch err {
	case nil:
		if viaSmaps {
			e.noteNoRollup(&w.ru)
		}
		if noExe {
			// An address space without an exe link: rare enough to
			// read again the slower way.
			return 0, false
		}
		e.exact(w, rc, d)
		st := e.confirm(w, rc, stExact)
		if rfd >= 0 {
			if st == stExact {
				rc.rfd = rfd
			} else {
				unix.Close(rfd)
				e.kept.Add(-1)
			}
		}
		return st, true
	case proc.ErrNoMM:
		// Kernel threads and zombies have no address space; a process
		// reaped since the open ends here too.
		return stKernel, true
	case proc.ErrGone, proc.ErrNotExist:
		return stGone, true
	}
	return 0, false
}

// readKept re-walks a process through the smaps_rollup descriptor kept
// from an earlier read (record.rfd), read last. The descriptor is bound
// to the process's address space: a successful read proves that the
// process lived, without an exec, until then, so every read by path
// before it saw the same process and no confirm is needed. ok is false
// when the descriptor no longer reads (the process exited or exec'd
// since; it is then closed) or the exe link is missing: the caller then
// reads the usual way.
func (e *Engine) readKept(w *worker, rc *record, names bool) (st state, ok bool) {
	if rc.now.Zero() {
		// statm sees no address space: the process is exiting, or its
		// main thread exited while others run on. The descriptor,
		// opened while the leader lived, would still read the threads'
		// address space; the usual read finds a thread to read through
		// (toThread) instead.
		e.dropRollup(rc)
		return 0, false
	}
	r := w.r
	point(w, rc, false)
	exeRead := false
	if names && !e.opt.NoNames {
		w.exe, w.exeErr = r.Exe(w.link[:0])
		if w.exeErr == proc.ErrNotExist {
			e.dropRollup(rc)
			return 0, false
		}
		exeRead = true
	}
	if st := e.readRest(w, rc, names, false, false, exeRead); st != stExact {
		return st, true
	}
	t0 := time.Now()
	err := r.RollupFD(rc.rfd, &w.ru)
	d := time.Since(t0)
	if err != nil {
		e.dropRollup(rc)
		return 0, false
	}
	e.exact(w, rc, d)
	return stExact, true
}

// keepRollup says whether a read of rc's process by path should keep its
// smaps_rollup descriptor for the next walks, and if so takes one from
// the budget (Engine.keepMax). A descriptor pays for itself only where
// walks recur: it saves an open and a close (and the statm read of
// confirm) per walk, and holds a page of kernel memory (the seq_file
// buffer) while open. So it is kept by incremental samplers for new
// processes and those walked because they changed; a forced walk drops
// it (readOnce).
func (e *Engine) keepRollup(rc *record) bool {
	// Only procfs ties a descriptor to its process: in a captured tree,
	// a file replaced since would still read as it was.
	if e.opt.OneShot || !e.fs.IsProcfsRoot() || rc.fd < 0 || rc.rfd >= 0 || rc.act == actForced || rc.act == actNone {
		return false
	}
	if e.kept.Add(1) > e.keepMax {
		e.kept.Add(-1)
		return false
	}
	return true
}

// dropRollup closes rc's kept smaps_rollup descriptor, if any.
func (e *Engine) dropRollup(rc *record) {
	if rc.rfd >= 0 {
		unix.Close(rc.rfd)
		rc.rfd = -1
		e.kept.Add(-1)
	}
}

// readAnchored reads a process whose smaps_rollup cannot be read last
// (refused, malformed, or not read at all with --fast): through its
// directory, which the kernel ties to the process it was opened for, or by
// path when the held statm descriptor anchors the reads. --fast's first
// read of a process that needs status alone reads just that, by path.
func (e *Engine) readAnchored(w *worker, rc *record, names, first bool) state {
	r := w.r
	statusOnly := e.opt.Fast && first && e.opt.OneShot && !e.opt.NeedStartTime && !e.opt.NeedCgroup
	if err := point(w, rc, rc.fd < 0 && !statusOnly); err != nil {
		return goneOr(err)
	}
	st := stEstimate
	if !e.opt.Fast {
		var err error
		t0 := time.Now()
		if !e.noRollup.Load() {
			err = r.SmapsRollup(&w.ru)
			if err == proc.ErrNotExist {
				if err = r.Smaps(&w.ru); err == nil {
					e.noteNoRollup(&w.ru)
				}
			}
		} else {
			err = r.Smaps(&w.ru)
		}
		switch {
		case err == nil:
			st = stExact
			e.exact(w, rc, time.Since(t0))
		case err == proc.ErrNoMM:
			return stKernel
		case err == proc.ErrGone || err == proc.ErrNotExist:
			return stGone
		case err == proc.ErrExhausted:
			return stStarved
		case errors.Is(err, proc.ErrMalformed) || errors.Is(err, proc.ErrTooLarge) || errors.Is(err, proc.ErrNotRegular):
			st = stMalformed
		default:
			st = stDenied
		}
	}
	if s := e.readRest(w, rc, names, first, st != stExact, false); s != stExact {
		return s
	}
	return e.confirm(w, rc, st)
}

// exact fills rc's figures from the rollup just read, which took d.
func (e *Engine) exact(w *worker, rc *record, d time.Duration) {
	rc.cost = d
	w.walkTime += d
	sample.ExactFigures(&rc.p, &w.ru)
	rc.risk = riskOf(&w.ru)
	rc.lastSwap = w.ru.Swap
}

// confirm returns st if rc's held statm descriptor, when there is one,
// can still be read: its process lived through every read before.
func (e *Engine) confirm(w *worker, rc *record, st state) state {
	if rc.fd >= 0 {
		if _, err := proc.ReadStatmFD(rc.fd, w.buf[:]); err != nil {
			return goneOr(err)
		}
	}
	return st
}

// readRest reads everything but smaps_rollup, as little as the figures
// and names need, because each extra file costs a fixed share of a small
// process's smaps_rollup: a report's default reads comm and the exe link
// besides; stat only for processes that need their parent for naming,
// their start time, or to be told apart from a PID's next process;
// status only for estimates and uids. With estimate set the figures come
// from status. It returns stExact to go on, or the state that ends the
// read. With exeRead set, the exe link was read already, into w.exe and
// w.exeErr.
func (e *Engine) readRest(w *worker, rc *record, names, first, estimate, exeRead bool) state {
	r := w.r
	p := &rc.p
	if names {
		p.Exe, p.ExeDeleted, p.Script = "", false, ""
	}
	// Identity: a later read without a held descriptor checks the
	// start time; a first read of an incremental sampler records it
	// (and the parent, which names and fork detection use).
	statRead, statBroken := false, false
	if first && e.needStart() || !first && rc.fd < 0 {
		if st := e.readStat(w, rc, first); st == stBroken && rc.fd >= 0 {
			// The held descriptor identifies the process without a
			// start time; the parent comes from status.
			statBroken = true
		} else if st != stExact {
			return st
		}
		statRead = true
	}
	if first && rc.fd < 0 && !e.opt.OneShot {
		// An incremental sampler without a descriptor for this
		// process checks its statm by path from now on.
		s, err := r.Statm()
		if err != nil {
			return goneOr(err)
		}
		rc.now = s
	}

	havePPID := statRead && !statBroken
	if estimate || e.opt.NeedUID && (first || names) || statBroken && names {
		if st := e.readStatus(w, p, names && !e.opt.NoNames, estimate); st != stExact {
			return st
		}
		havePPID = true
	} else if names && !e.opt.NoNames {
		comm, err := r.Comm()
		if st := readState(err); st != stExact {
			return st
		}
		p.Comm = w.intern(comm)
	}
	if !names {
		return stExact
	}
	if e.opt.NoNames {
		return e.readCgroup(w, p)
	}

	if !e.opt.Fast {
		if !exeRead {
			w.exe, w.exeErr = r.Exe(w.link[:0])
		}
		if w.exeErr == proc.ErrExhausted {
			// Without the link the name comes from
			// argv[0], which the process writes itself.
			return stStarved
		}
		if w.exeErr == nil {
			base, deleted := sample.ExeBase(w.exe)
			p.Exe, p.ExeDeleted = w.intern(base), deleted
		}
	}
	// ProgramName looks at the parent only when the executable's name
	// does not start with the task name.
	if !havePPID && p.Exe != "" && !strings.HasPrefix(p.Exe, p.Comm) {
		if st := e.readStat(w, rc, first); st != stExact {
			return st
		}
	}

	if p.Exe == "" && !e.opt.Fast {
		// No usable exe link: argv[0] may name the executable (see
		// sample.ExeFromCmdline), and then the script too.
		cl, err := r.Cmdline()
		switch err {
		case nil:
			p.Exe = w.intern(sample.ExeFromCmdline(p.Comm, cl))
			if sample.IsInterpreter(p.Exe) {
				p.Script = w.intern(sample.ScriptOf(p.Exe, cl))
			}
		case proc.ErrGone:
			// Exited while being read.
			return stGone
		case proc.ErrExhausted:
			// Else shown with its task name instead, until
			// its names are read again (FullEvery ticks).
			return stStarved
		}
	} else if sample.IsInterpreter(p.Exe) {
		cl, err := r.Cmdline()
		switch err {
		case nil:
			p.Script = w.intern(sample.ScriptOf(p.Exe, cl))
		case proc.ErrGone:
			return stGone
		case proc.ErrExhausted:
			// Else shown as the interpreter, not the script.
			return stStarved
		}
	}
	return e.readCgroup(w, p)
}

// needStart reports whether a first read records the start time: always
// for an incremental sampler (it identifies the process across ticks),
// and when asked for.
func (e *Engine) needStart() bool { return !e.opt.OneShot || e.opt.NeedStartTime }

// readStat fills PPID and StartTime from stat: the leader's, whose start
// time identifies the process, also when it is read through a thread (a
// thread's stat has its own start time). A later read checks the start
// time against the recorded one. It returns stExact to go on, or the
// state that ends the read.
func (e *Engine) readStat(w *worker, rc *record, first bool) state {
	var err error
	if rc.tid != 0 {
		err = w.r.LeaderStat(&w.st)
	} else {
		err = w.r.Stat(&w.st)
	}
	if st := readState(err); st != stExact {
		return st
	}
	if !first && w.st.StartTime != rc.start {
		return stGone // the PID was reused
	}
	// A kernel thread's start time is kept too: without a descriptor,
	// its record is told from a PID's next process by it every tick.
	rc.start = w.st.StartTime
	if w.st.Kthread() {
		return stKernel
	}
	rc.p.PPID, rc.p.StartTime = w.st.PPid, w.st.StartTime
	return stExact
}

// readStatus reads status into w.ss and fills what it holds: uid,
// parent, with comm set the task name, and with estimate set the
// RSS-based figures. It returns stExact to go on, or the state that ends
// the read.
func (e *Engine) readStatus(w *worker, p *sample.Process, comm, estimate bool) state {
	if st := readState(w.r.Status(&w.ss)); st != stExact {
		return st
	}
	if !w.ss.HasMM {
		// Tells liveThread whether another thread could hold the
		// address space, without the statx.
		w.threads = w.ss.Threads
		return stKernel
	}
	p.UID, p.UIDKnown = w.ss.UID, true
	p.PPID = w.ss.PPid
	if comm {
		p.Comm = w.intern(proc.UnescapeName(w.name[:0], w.ss.NameBytes()))
	}
	if estimate {
		sample.EstimateFigures(p, &w.ss)
	}
	return stExact
}

// readCgroup fills Cgroup when asked for. It returns stExact (go on):
// a missing cgroup file leaves the group empty, it drops nothing; but
// stStarved when memwho ran out of descriptors or memory reading it
// (else the process would be shown in no cgroup, its memory missing
// from its unit's or container's, until its names are read again).
func (e *Engine) readCgroup(w *worker, p *sample.Process) state {
	if e.opt.NeedCgroup {
		p.Cgroup, p.SystemdCgroup = "", ""
		cg, sd, err := w.r.CgroupPaths()
		if err == proc.ErrExhausted {
			return stStarved
		}
		if err == nil {
			p.Cgroup = w.intern(cg)
			p.SystemdCgroup = p.Cgroup
			if string(sd) != p.Cgroup {
				p.SystemdCgroup = w.intern(sd)
			}
		}
	}
	return stExact
}

// check reads rc's statm, through its held descriptor or by path.
func (e *Engine) check(w *worker, rc *record) {
	if rc.fd >= 0 {
		s, err := proc.ReadStatmFD(rc.fd, w.buf[:])
		if err != nil {
			rc.st = goneOr(err)
			return
		}
		rc.now = s
	} else {
		// No descriptor: read by path, and tell a reused PID by its
		// start time.
		r := w.r
		r.Select(rc.pid)
		if err := r.Stat(&w.st); err != nil {
			rc.st = goneOr(err)
			return
		}
		if w.st.StartTime != rc.start {
			rc.st = stGone
			return
		}
		if rc.tid != 0 {
			// The leader's statm is zeros: its thread's has the
			// figures.
			r.SelectTask(rc.pid, rc.tid)
		}
		s, err := r.Statm()
		if err != nil {
			rc.st = goneOr(err)
			return
		}
		rc.now = s
	}
	if rc.st == stKernel && rc.now.OK && !rc.now.Zero() {
		// A kernel thread or zombie has no address space,
		// and its statm reads zeros. One that has one now was taken
		// for one by an ESRCH it gave at a moment (an exec'ing
		// thread's old leader, a process whose PID was reused after
		// the ESRCH), and would never be read again: read it anew,
		// as a PID that names a new process.
		rc.st = stGone
		return
	}
	if rc.st == stKernel || rc.st == stBroken {
		return
	}
	rc.moved = !rc.now.OK || rc.now.Resident != rc.ref.Resident || rc.now.Shared != rc.ref.Shared
	rc.execed = rc.now.OK && rc.now.Text != rc.ref.Text
}

// readNew reads a process seen for the first time (or whose PID was
// reused) in full.
func (e *Engine) readNew(w *worker, rc *record, now time.Time) {
	rc.fd = -1
	if !e.opt.OneShot {
		// The statm descriptor is opened first: it is bound to the
		// process that had the PID at that moment, and a successful
		// read after all the others proves that they read that same
		// process (confirm).
		if e.held.Add(1) <= e.maxHeld {
			w.r.Select(rc.pid)
			fd, err := w.r.OpenStatm()
			if err != nil {
				e.held.Add(-1)
				rc.st = goneOr(err)
				return
			}
			rc.fd = fd
			s, err := proc.ReadStatmFD(fd, w.buf[:])
			if err != nil {
				rc.st = goneOr(err)
				return
			}
			rc.now = s
		} else {
			e.held.Add(-1)
		}
		k := uint64(e.opt.FullEvery)
		// Spread the forced walks: this process's first one falls due
		// within 1..K ticks, by PID.
		rc.due = e.tick + k - uint64(rc.pid)%k
		rc.namesDue = rc.due
	}
	rc.p = sample.Process{PID: rc.pid}
	rc.changed = e.tick
	e.read(w, rc, true, true, now)
}

// rewalk reads a known process again: smaps_rollup, and its names when
// they are due or an exec was seen.
func (e *Engine) rewalk(w *worker, rc *record, now time.Time) {
	names := rc.full || rc.act == actExec || rc.st == stBroken ||
		rc.act == actForced && e.tick >= rc.namesDue
	k := uint64(e.opt.FullEvery)
	if rc.act != actForced {
		rc.changed = e.tick
	}
	e.read(w, rc, names, false, now)
	if rc.act == actForced && e.tick >= rc.changed+k {
		// Unchanged for K ticks: its next walk is likely the next
		// forced one, which the descriptor would not pay for.
		e.dropRollup(rc)
	}
	rc.due = e.tick + k
	if names {
		rc.namesDue = rc.due
	}
}

// toThread points rc at a live thread of rc's process when its main
// thread has exited while others run on (/proc/PID then describes a
// zombie), and returns stExact when it found one, stStarved when memwho
// ran out of descriptors or memory looking (the process may well have
// one), and stKernel otherwise. A held statm descriptor moves to the
// thread's statm, whose figures are the process's.
func (e *Engine) toThread(w *worker, rc *record) state {
	tid, err := e.liveThread(w, rc.pid)
	if tid == 0 {
		return kernelOr(err)
	}
	w.r.SelectTask(rc.pid, tid)
	e.dropRollup(rc)
	switch {
	case rc.fd >= 0:
		fd, err := w.r.OpenStatm()
		if err != nil {
			return kernelOr(err)
		}
		s, err := proc.ReadStatmFD(fd, w.buf[:])
		if err != nil {
			unix.Close(fd)
			return kernelOr(err)
		}
		unix.Close(rc.fd)
		rc.fd, rc.now = fd, s
	case !e.opt.OneShot:
		s, err := w.r.Statm()
		if err != nil {
			return kernelOr(err)
		}
		rc.now = s
	}
	rc.tid = tid
	return stExact
}

// kernelOr is toThread's state for a failure with err: stStarved when
// memwho ran out of descriptors or memory, else stKernel (no live thread:
// a kernel thread or a zombie).
func kernelOr(err error) state {
	if err == proc.ErrExhausted {
		return stStarved
	}
	return stKernel
}

// liveThread returns a thread other than the leader of process pid, to
// read the process through, or 0 when pid is a single-threaded process
// (kernel thread, zombie) or no other thread is left, or, with the error,
// when its threads could not be listed. Only processes
// with no address space come here, so the statx that counts threads
// costs one syscall per kernel thread and zombie, and none when status
// has just told.
func (e *Engine) liveThread(w *worker, pid int) (int, error) {
	if w.threads >= 0 && w.threads < 2 {
		return 0, nil
	}
	if n := w.r.Threads(pid); n == 1 {
		return 0, nil
	}
	// 0: the statx failed (ENOMEM among others) and says
	// nothing; the listing below tells, and its error is the answer.
	var err error
	w.tids, w.tidbuf, err = w.r.Tasks(pid, w.tids, w.tidbuf)
	if err != nil {
		return 0, err
	}
	for _, tid := range w.tids {
		if tid != pid {
			// Any one will do: the threads share one address space.
			// One that exits before it is read makes the process
			// count as gone for this read.
			return tid, nil
		}
	}
	return 0, nil
}

// name sets rc's program name, looking up its parent's executable.
func (e *Engine) name(rc *record, tick uint64) {
	if e.opt.NoNames {
		return
	}
	parentExe := ""
	if rc.p.Exe != "" && !strings.HasPrefix(rc.p.Exe, rc.p.Comm) && rc.p.PPID > 0 {
		// ProgramName looks at the parent only then.
		if j, ok := e.byPID[rc.p.PPID]; ok {
			if pr := &e.recs[j]; pr.seen == tick {
				parentExe = pr.p.Exe
			}
		}
	}
	if rc.p.Name != "" && !rc.namesRead && parentExe == rc.nameParent {
		return
	}
	n := sample.ProgramName(&rc.p, parentExe)
	// Keep no fresh copy of the common case, where the name is one of
	// the process's own (already interned) strings.
	switch n {
	case rc.p.Exe:
		n = rc.p.Exe
	case rc.p.Comm:
		n = rc.p.Comm
	}
	rc.p.Name = n
	rc.nameParent = parentExe
}

// intern returns b as a string, sharing one copy per distinct value so
// that repeated reads do not allocate names again.
func (w *worker) intern(b []byte) string {
	if s, ok := w.names[string(b)]; ok {
		return s
	}
	if len(w.names) > 1<<16 {
		clear(w.names)
	}
	s := string(b)
	w.names[s] = s
	return s
}

// readState maps the error of reading a file every live process has
// (status, stat, comm): stExact to go on, stGone when the process went,
// stBroken when the file could not be parsed or read.
func readState(err error) state {
	switch err {
	case nil:
		return stExact
	case proc.ErrGone:
		return stGone
	case proc.ErrExhausted:
		return stStarved
	}
	return stBroken
}

// goneOr maps the error of opening or reading a file whose failure ends a
// process's read: stStarved when memwho ran out of descriptors or
// memory, which says nothing of the process, else stGone.
func goneOr(err error) state {
	if err == proc.ErrExhausted {
		return stStarved
	}
	return stGone
}

// noteNoRollup records that this kernel has no smaps_rollup, so that
// later processes go straight to smaps, once a process whose smaps_rollup
// was missing showed memory in its smaps (ru, just read from smaps). A
// process without memory (a zombie, whose smaps_rollup cannot be opened
// on any kernel) proves nothing: deciding on it would send every other
// process of the walk, whichever worker reads it first, to smaps and its
// figures without the Pss_Anon/File/Shmem split.
func (e *Engine) noteNoRollup(ru *proc.Rollup) {
	if ru.Rss > 0 {
		e.noRollup.Store(true)
	}
}
