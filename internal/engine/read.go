package engine

import (
	"errors"
	"runtime"
	"time"

	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/sample"
	"golang.org/x/sys/unix"
)

// This file reads processes. Like package proc's readers it must not
// allocate in steady state: a tick of an unchanged host allocates nothing
// (see TestTickAllocs).

// statm holds the fields of /proc/PID/statm the engine compares, in pages.
type statm struct {
	resident uint64 // field 2: resident set size
	shared   uint64 // field 3: resident file-backed and shmem pages
	text     uint64 // field 4: the executable's text, which only exec changes
	ok       bool   // parsed
}

// zero reports whether the process has no address space (kernel thread,
// zombie): the kernel prints statm as zeros then.
func (s statm) zero() bool { return s.ok && s.resident == 0 && s.shared == 0 && s.text == 0 }

// parseStatm parses "size resident shared text lib data dt\n".
func parseStatm(b []byte) statm {
	var f [4]uint64
	i := 0
	for k := range f {
		for i < len(b) && b[i] == ' ' {
			i++
		}
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			f[k] = f[k]*10 + uint64(b[i]-'0')
			i++
			n++
		}
		if n == 0 || n > 19 {
			return statm{}
		}
	}
	return statm{resident: f[1], shared: f[2], text: f[3], ok: true}
}

// preadStatm reads the held statm descriptor fd from its start: procfs
// prints the file again for a read at offset 0. It returns proc.ErrGone
// once the process it was opened for has exited.
func preadStatm(fd int, buf []byte) (statm, error) {
	for {
		n, err := unix.Pread(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// ESRCH: the process exited, even if its PID lives on.
			return statm{}, proc.ErrGone
		}
		return parseStatm(buf[:n]), nil
	}
}

// openStatm opens "PID/statm", or "PID/task/TID/statm" when tid is not
// 0, beneath the procfs root under the tree's rules (proc.FS.OpenAt),
// building the path in w.buf so that it does not allocate.
func (e *Engine) openStatm(w *worker, pid, tid int) (int, error) {
	p := strconvAppendInt(w.buf[:0], pid)
	if tid != 0 {
		p = append(p, "/task/"...)
		p = strconvAppendInt(p, tid)
	}
	p = append(p, "/statm\x00"...)
	return e.fs.OpenAt(e.fs.Fd(), &p[0], false, &w.how)
}

// check reads rc's statm, through its held descriptor or by path.
func (e *Engine) check(w *worker, rc *record) {
	if rc.fd >= 0 {
		s, err := preadStatm(rc.fd, w.buf[:])
		if err != nil {
			rc.st = stGone
			return
		}
		rc.now = s
	} else {
		// No descriptor: read by path, and tell a reused PID by its
		// start time.
		r := w.r
		r.Select(rc.pid)
		if r.Stat(&w.st) != nil || w.st.StartTime != rc.start {
			rc.st = stGone
			return
		}
		if rc.tid != 0 {
			// The leader's statm is zeros: its thread's has the
			// figures.
			r.SelectTask(rc.pid, rc.tid)
		}
		b, err := r.ReadFile("statm\x00")
		if err != nil {
			rc.st = stGone
			return
		}
		rc.now = parseStatm(b)
	}
	if rc.st == stKernel || rc.st == stBroken {
		return
	}
	rc.moved = !rc.now.ok || rc.now.resident != rc.ref.resident || rc.now.shared != rc.ref.shared
	rc.execed = rc.now.ok && rc.now.text != rc.ref.text
}

// readExe fills the executable's basename and whether it was deleted.
func (e *Engine) readExe(w *worker, p *sample.Process) {
	if link, err := w.r.Exe(w.link[:0]); err == nil {
		base, deleted := sample.ExeBase(link)
		p.Exe, p.ExeDeleted = w.intern(base), deleted
	}
}

// readNew reads a process seen for the first time (or whose PID was
// reused) in full, as a report reads it.
func (e *Engine) readNew(w *worker, rc *record, now time.Time) {
	// The statm descriptor is opened first: it is bound to the process
	// that had the PID at that moment, and a successful read after all
	// the others proves that they read that same process.
	rc.fd = -1
	if e.held.Add(1) <= e.maxHeld {
		fd, err := e.openStatm(w, rc.pid, 0)
		if err != nil {
			e.held.Add(-1)
			rc.st = stGone
			return
		}
		rc.fd = fd
		s, err := preadStatm(fd, w.buf[:])
		if err != nil {
			rc.st = stGone
			return
		}
		rc.now = s
	} else {
		e.held.Add(-1)
	}
	r := w.r
	if r.Open(rc.pid) != nil {
		rc.st = stGone
		return
	}
	if rc.fd < 0 {
		b, err := r.ReadFile("statm\x00")
		if err != nil {
			rc.st = stGone
			return
		}
		rc.now = parseStatm(b)
	}
	rc.p = sample.Process{PID: rc.pid}
	tick := e.tick
	k := uint64(e.opt.FullEvery)
	// Spread the forced walks: this process's first one falls due
	// within 1..K ticks, by PID.
	rc.due = tick + k - uint64(rc.pid)%k
	rc.namesDue = rc.due
	e.read(w, rc, true, true, now)
}

// rewalk reads a known process again: smaps_rollup, and its names when
// they are due or an exec was seen.
func (e *Engine) rewalk(w *worker, rc *record, now time.Time) {
	names := rc.full || rc.act == actExec || rc.st == stBroken ||
		rc.act == actForced && e.tick >= rc.namesDue
	if rc.tid != 0 {
		w.r.SelectTask(rc.pid, rc.tid)
	} else {
		w.r.Select(rc.pid)
	}
	e.read(w, rc, names, false, now)
	rc.due = e.tick + uint64(e.opt.FullEvery)
	if names {
		rc.namesDue = rc.due
	}
}

// read reads rc's figures (and with names, its identity and names)
// through w.r, which Open or Select has pointed at the process. first
// says this is the process's first read.
func (e *Engine) read(w *worker, rc *record, names, first bool, now time.Time) {
	r := w.r
	p := &rc.p
	if names || rc.fd < 0 {
		switch err := e.stat(w, rc); {
		case err == proc.ErrGone:
			rc.st = stGone
			return
		case err != nil && rc.fd >= 0:
			// The held descriptor identifies the process without a
			// start time; the parent comes from status. A report
			// needs stat no more than that either.
			w.st = proc.Stat{StartTime: rc.start}
		case err != nil:
			rc.st = stBroken
			return
		}
		if !first && w.st.StartTime != rc.start {
			rc.st = stGone // the PID was reused
			return
		}
		rc.start = w.st.StartTime
		p.StartTime = w.st.StartTime
		p.PPID = w.st.PPid
		if w.st.Kthread() {
			rc.st = stKernel
			return
		}
	}

	st := stEstimate
	if !e.opt.Fast {
		t0 := time.Now()
		err := r.SmapsRollup(&w.ru)
		if err == proc.ErrNotExist {
			err = r.Smaps(&w.ru)
		}
		if err == proc.ErrNoMM && rc.tid == 0 && e.toThread(w, rc) {
			// The main thread exited while others run on: read
			// the process through one of them from now on.
			err = r.SmapsRollup(&w.ru)
			if err == proc.ErrNotExist {
				err = r.Smaps(&w.ru)
			}
		}
		d := time.Since(t0)
		switch {
		case err == nil:
			st = stExact
			rc.cost = d
			w.walkTime += d
			sample.ExactFigures(p, &w.ru)
			rc.bound = errorBound(&w.ru)
		case err == proc.ErrNoMM:
			rc.st = stKernel
			return
		case err == proc.ErrGone || err == proc.ErrNotExist:
			rc.st = stGone
			return
		case errors.Is(err, proc.ErrMalformed) || errors.Is(err, proc.ErrTooLarge) || errors.Is(err, proc.ErrNotRegular):
			st = stMalformed
		default:
			st = stDenied
		}
	}

	if st != stExact || names || e.opt.NeedUID && first {
		switch err := r.Status(&w.ss); {
		case err == nil:
		case err == proc.ErrGone:
			rc.st = stGone
			return
		case st == stExact && !e.opt.NeedUID:
			// An unparsable status costs only the uid, which nobody
			// asked for: name the process from comm, as a report
			// does.
			if names {
				comm, err := r.Comm()
				switch err {
				case nil:
				case proc.ErrGone:
					rc.st = stGone
					return
				default:
					rc.st = stBroken
					return
				}
				p.Comm = w.intern(comm)
			}
			goto named
		default:
			rc.st = stBroken
			return
		}
		if !w.ss.HasMM && w.ss.Threads > 1 && rc.tid == 0 && e.toThread(w, rc) {
			// --fast, or an estimate: status alone showed the
			// exited main thread.
			if err := r.Status(&w.ss); err != nil {
				rc.st = stGone
				return
			}
		}
		if !w.ss.HasMM {
			rc.st = stKernel
			return
		}
		p.UID, p.UIDKnown = w.ss.UID, true
		p.PPID = w.ss.PPid
		if names {
			p.Comm = w.intern(proc.UnescapeName(w.name[:0], w.ss.NameBytes()))
		}
		if st != stExact {
			sample.EstimateFigures(p, &w.ss)
			rc.bound = 0
		}
	}

named:
	if names {
		rc.namesRead = true
		p.Exe, p.ExeDeleted, p.Script = "", false, ""
		// --fast reads status alone, as a report's does: the task name
		// names the program, and with no exe there is no script either.
		if !e.opt.Fast {
			e.readExe(w, p)
		}
		if p.Exe == "" && !e.opt.Fast {
			// No usable exe link: argv[0] may name the executable,
			// as in a report (sample.ExeFromCmdline).
			if cl, err := r.Cmdline(); err == nil {
				p.Exe = w.intern(sample.ExeFromCmdline(p.Comm, cl))
				if sample.IsInterpreter(p.Exe) {
					p.Script = w.intern(sample.ScriptOf(p.Exe, cl))
				}
			}
		} else if sample.IsInterpreter(p.Exe) {
			if cl, err := r.Cmdline(); err == nil {
				p.Script = w.intern(sample.ScriptOf(p.Exe, cl))
			}
		}
		if e.opt.NeedCgroup {
			p.Cgroup = ""
			if cg, err := r.Cgroup(); err == nil {
				p.Cgroup = w.intern(cg)
			}
		}
	}

	// Everything read belongs to the process the statm descriptor (or
	// the start time) was bound to only if it is still alive now.
	if rc.fd >= 0 {
		if _, err := preadStatm(rc.fd, w.buf[:]); err != nil {
			rc.st = stGone
			return
		}
	} else if !first {
		if e.stat(w, rc) != nil || w.st.StartTime != rc.start {
			rc.st = stGone
			return
		}
	}
	if rc.now.zero() {
		// statm read before the walk saw no address space: the process
		// was exiting.
		rc.st = stKernel
		return
	}
	rc.st = st
	rc.ref = rc.now
	rc.sampledAt = now
	rc.walked = true
}

// stat reads the process's stat into w.st: the leader's, whose start time
// identifies the process, also when it is read through a thread.
func (e *Engine) stat(w *worker, rc *record) error {
	if rc.tid != 0 {
		return w.r.LeaderStat(&w.st)
	}
	return w.r.Stat(&w.st)
}

// toThread points rc, and w.r, at a live thread of rc's process when its
// main thread has exited (see sample.LiveThread): the held statm
// descriptor moves to the thread's statm, whose figures are the
// process's. It reports whether it found one.
func (e *Engine) toThread(w *worker, rc *record) bool {
	tid := 0
	tid, w.tids, w.tidbuf = sample.LiveThread(w.r, rc.pid, w.tids, w.tidbuf)
	if tid == 0 {
		return false
	}
	if rc.fd >= 0 {
		fd, err := e.openStatm(w, rc.pid, tid)
		if err != nil {
			return false
		}
		s, err := preadStatm(fd, w.buf[:])
		if err != nil {
			unix.Close(fd)
			return false
		}
		unix.Close(rc.fd)
		rc.fd, rc.now = fd, s
		rc.tid = tid
		w.r.SelectTask(rc.pid, tid)
		return true
	}
	w.r.SelectTask(rc.pid, tid)
	b, err := w.r.ReadFile("statm\x00")
	if err != nil {
		return false
	}
	rc.now = parseStatm(b)
	rc.tid = tid
	return true
}

// errorBound is RSS minus a lower estimate of the private anonymous
// pages: the most a stale PSS figure can be off by (see the package
// documentation).
func errorBound(ru *proc.Rollup) uint64 {
	priv := ru.PrivateClean + ru.PrivateDirty
	var privAnon uint64
	if ru.Anonymous+priv > ru.Rss {
		privAnon = ru.Anonymous + priv - ru.Rss
	}
	return ru.Rss - min(privAnon, ru.Rss)
}

// name sets rc's program name, looking up its parent's executable.
func (e *Engine) name(rc *record, tick uint64) {
	parentExe := ""
	if j, ok := e.byPID[rc.p.PPID]; ok {
		if pr := &e.recs[j]; pr.seen == tick {
			parentExe = pr.p.Exe
		}
	}
	if rc.p.Name != "" && !rc.namesRead && parentExe == rc.nameParent {
		return
	}
	n := sample.ProgramName(&rc.p, parentExe)
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

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

func strconvAppendInt(b []byte, v int) []byte {
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}
