package sample

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/memwho/memwho/internal/proc"
)

// Options chooses what a Scanner reads. The zero value (with FS set)
// reads what the default report needs: exact figures and program names.
type Options struct {
	// FS is the procfs tree to read, opened and checked once by the
	// caller, who keeps it open while the Scanner is in use.
	FS *proc.FS
	// Fast reads only /proc/PID/status (RSS-based estimates) and never
	// walks page tables.
	Fast bool
	// NeedUID makes the scan read each process's real uid.
	NeedUID bool
	// NeedCgroup makes the scan read /proc/PID/cgroup.
	NeedCgroup bool
	// NoNames skips what only program names need (comm, the exe link,
	// cmdline, the parent): for groupings by user or cgroup. Name, Comm,
	// Exe and Script stay empty.
	NoNames bool
	// NeedStartTime makes the scan read /proc/PID/stat for every process,
	// to fill StartTime and PPID (callers that follow processes across
	// scans need it; one scan is consistent without it, see readOne).
	NeedStartTime bool
	// PIDs, when not empty, restricts the scan to these processes.
	PIDs []int
	// Workers bounds the number of parallel readers; 0 means twice
	// GOMAXPROCS (see NewScanner).
	Workers int
}

// Scanner walks a /proc tree. It keeps its buffers between scans, so a
// long-running caller (watch, agent) should reuse one. A Scanner is not
// safe for concurrent use.
type Scanner struct {
	opt     Options
	fs      *proc.FS
	workers []*worker
	pids    []int
	dirbuf  []byte
	kinds   []outcome
	// noRollup is set once smaps_rollup turns out to be missing (kernels
	// before 4.14), so later processes go straight to smaps.
	noRollup atomic.Bool
	meminfo  proc.Meminfo
}

func byPID(a, b Process) int { return a.PID - b.PID }

// outcome is what reading one process came to.
type outcome uint8

const (
	okExact outcome = iota
	okEstimate
	okDenied    // estimate because the walk was refused
	okMalformed // estimate because smaps_rollup did not parse
	skipGone
	skipKernel
	skipBroken
)

type worker struct {
	r    *proc.Reader
	st   proc.Stat
	ss   proc.Status
	ru   proc.Rollup
	link []byte
	// exe and exeErr hold the last exe link read (exe aliases link).
	exe    []byte
	exeErr error
	name   []byte
	names  map[string]string
	// tids and tidbuf list a process's threads (liveThread).
	tids   []int
	tidbuf []byte
}

// NewScanner returns a Scanner of the tree opt.FS.
func NewScanner(opt Options) (*Scanner, error) {
	fs := opt.FS
	if fs == nil {
		return nil, errors.New("sample: no procfs tree given")
	}
	n := opt.Workers
	if n <= 0 {
		// Nearly all of a scan is time in the kernel, inside reads. With
		// one reader per core the cores still idle between reads (a
		// 2-core VM, 1000 processes: 1.65-1.7 CPUs busy); a second
		// reader per core kept them busier (1.8-1.9) and cut the wall
		// time by about 12% at the same CPU time.
		n = 2 * runtime.GOMAXPROCS(0)
	}
	s := &Scanner{opt: opt, fs: fs}
	for range n {
		s.workers = append(s.workers, &worker{
			r:     fs.NewReader(),
			link:  make([]byte, 0, 4096),
			name:  make([]byte, 0, 64),
			names: make(map[string]string),
		})
	}
	return s, nil
}

// Close releases what the Scanner holds; the tree stays open (its
// owner closes it).
func (s *Scanner) Close() error {
	for _, w := range s.workers {
		w.r.Close()
	}
	return nil
}

// Scan walks every process once and fills snap, reusing snap.Procs.
func (s *Scanner) Scan(snap *Snapshot) error {
	snap.Time = time.Now()
	snap.Procs = snap.Procs[:0]
	snap.Gone, snap.Denied, snap.Kernel, snap.Broken, snap.Malformed = 0, 0, 0, 0, 0
	if len(s.opt.PIDs) > 0 {
		s.pids = append(s.pids[:0], s.opt.PIDs...)
	} else {
		var err error
		s.pids, s.dirbuf, err = s.fs.PIDs(s.pids, s.dirbuf)
		if err != nil {
			return err
		}
	}
	n := len(s.pids)
	// Read straight into snap.Procs (one slot per listed PID) and compact
	// it in place afterwards: no second copy of every Process.
	if cap(snap.Procs) < n {
		snap.Procs = make([]Process, n, n+n/8)
	}
	slots := snap.Procs[:n]
	if cap(s.kinds) < n {
		s.kinds = make([]outcome, n, n+n/8)
	}
	s.kinds = s.kinds[:n]

	ForEach(s.workers, n, func(w *worker, j int) {
		s.kinds[j] = s.readOne(w, s.pids[j], &slots[j])
		w.r.Close()
	})

	k := 0
	for j := range n {
		switch s.kinds[j] {
		case skipGone:
			snap.Gone++
			continue
		case skipKernel:
			snap.Kernel++
			continue
		case skipBroken:
			snap.Broken++
			continue
		case okDenied:
			snap.Denied++
			slots[j].Cause = CauseDenied
		case okMalformed:
			snap.Malformed++
			slots[j].Cause = CauseMalformed
		}
		slots[k] = slots[j]
		k++
	}
	clear(slots[k:])
	snap.Procs = slots[:k]
	// /proc lists PIDs in ascending order; a captured tree or a -p list
	// may not.
	if !slices.IsSortedFunc(snap.Procs, byPID) {
		slices.SortFunc(snap.Procs, byPID)
	}
	s.nameAll(snap.Procs)

	ReadMeminfo(s.workers[0].r, &s.meminfo, snap)
	return nil
}

// readOne reads one process into p, reading as little as the figures
// need, because each extra file costs a fixed share of a small process's
// smaps_rollup: the default report reads smaps_rollup, comm and the exe
// link; stat only for processes that need their parent for naming (or when
// start times are asked for); status only for estimates and uids.
//
// Nothing it keeps can mix two processes if a PID is reused meanwhile:
// see readHeld and readDir.
func (s *Scanner) readOne(w *worker, pid int, p *Process) outcome {
	if s.opt.Fast {
		return s.readFast(w, pid, p)
	}
	out, ok := s.readHeld(w, pid, 0, p)
	if !ok {
		out = s.readDir(w, pid, 0, p)
	}
	if out == skipKernel {
		// A kernel thread or zombie, or a process whose main thread
		// exited while others run on: read that one through a thread.
		if tid := s.liveThread(w, pid); tid > 0 {
			if out, ok = s.readHeld(w, pid, tid, p); !ok {
				out = s.readDir(w, pid, tid, p)
			}
		}
	}
	return out
}

// liveThread returns a thread of process pid to read it through, or 0
// (see LiveThread).
func (s *Scanner) liveThread(w *worker, pid int) int {
	var tid int
	tid, w.tids, w.tidbuf = LiveThread(w.r, pid, w.tids, w.tidbuf)
	return tid
}

// LiveThread returns a thread other than the leader of process pid, to
// read the process through when its main thread has exited while others
// run on (/proc/PID then describes a zombie), or 0 when pid is a
// single-threaded process (kernel thread, zombie) or no other thread is
// left. Callers come here only for processes with no address space, so
// the statx that counts threads costs one syscall per kernel thread and
// zombie. tids and buf are scratch space, returned for reuse.
func LiveThread(r *proc.Reader, pid int, tids []int, buf []byte) (int, []int, []byte) {
	if r.Threads(pid) < 2 {
		return 0, tids, buf
	}
	var err error
	tids, buf, err = r.Tasks(pid, tids, buf)
	if err != nil {
		return 0, tids, buf
	}
	for _, tid := range tids {
		if tid != pid {
			// Any one will do: the threads share one address space.
			// One that exits before it is read makes the process
			// count as gone for this scan.
			return tid, tids, buf
		}
	}
	return 0, tids, buf
}

// selectProc points w.r at process pid, or at its thread tid when tid is
// not 0 (see liveThread).
func selectProc(w *worker, pid, tid int) {
	if tid == 0 {
		w.r.Select(pid)
	} else {
		w.r.SelectTask(pid, tid)
	}
}

// readFast is --fast: status alone, by path, for hosts where every
// syscall counts. The task name in status names the program; there is no
// exe link or command line to read, so interpreters show as themselves.
// One read cannot mix two processes.
func (s *Scanner) readFast(w *worker, pid int, p *Process) outcome {
	if s.opt.NeedCgroup || s.opt.NeedStartTime {
		// More than one file: hold the directory (see readDir).
		out := s.readDir(w, pid, 0, p)
		if out == skipKernel {
			if tid := s.liveThread(w, pid); tid > 0 {
				out = s.readDir(w, pid, tid, p)
			}
		}
		return out
	}
	w.r.Select(pid)
	*p = Process{PID: pid}
	out := s.readStatus(w, p, true)
	if out == skipKernel && w.ss.Threads > 1 {
		// The main thread exited; the others hold the memory.
		if tid := s.liveThread(w, pid); tid > 0 {
			w.r.SelectTask(pid, tid)
			out = s.readStatus(w, p, true)
		}
	}
	if out != okExact {
		return out
	}
	return okEstimate
}

// readHeld reads an exact process with smaps_rollup read last, through a
// descriptor opened first and every other file read by path: a successful
// final read proves they all saw one process (see proc.Reader.Hold), at
// two syscalls fewer than holding the directory. ok is false when the
// process has to be read again by readDir: its smaps_rollup was refused
// or unreadable, and status-based estimates follow. A tid other than 0
// reads the process through that thread (see liveThread).
func (s *Scanner) readHeld(w *worker, pid, tid int, p *Process) (out outcome, ok bool) {
	r := w.r
	selectProc(w, pid, tid)
	var err error
	if s.noRollup.Load() {
		err = r.Hold("smaps\x00")
	} else if err = r.Hold("smaps_rollup\x00"); err == proc.ErrNotExist {
		// No smaps_rollup: a kernel before 4.14, or no process.
		if err = r.Hold("smaps\x00"); err == nil {
			s.noRollup.Store(true)
		}
	}
	switch err {
	case nil:
	case proc.ErrNotExist, proc.ErrGone:
		return skipGone, true
	default:
		return 0, false
	}
	*p = Process{PID: pid}
	exeRead, noExe := false, false
	if !s.opt.NoNames {
		// The exe link first: kernel threads and zombies have none, and
		// the held read then settles them before comm is read for
		// nothing (a host can have thousands of zombies).
		w.exe, w.exeErr = r.Exe(w.link[:0])
		exeRead, noExe = true, w.exeErr == proc.ErrNotExist
	}
	if !noExe {
		if out := s.readRest(w, p, false, exeRead); out != okExact {
			return out, true
		}
		if tid != 0 && s.opt.NeedStartTime {
			// The thread's stat has its own start time; the
			// process is known by the leader's.
			if out := s.readLeaderStat(w, p); out != okExact {
				return out, true
			}
		}
	}
	switch err = r.RollupHeld(&w.ru); err {
	case nil:
		if noExe {
			// An address space without an exe link: rare enough to
			// read again through the directory.
			return 0, false
		}
		ExactFigures(p, &w.ru)
		return okExact, true
	case proc.ErrNoMM:
		// Kernel threads and zombies have no address space; a process
		// reaped since the open ends here too.
		return skipKernel, true
	case proc.ErrGone, proc.ErrNotExist:
		return skipGone, true
	}
	return 0, false
}

// readDir reads a process through its /proc/PID directory descriptor,
// which the kernel ties to the process it was opened for: if the PID is
// reused meanwhile, reads through it fail rather than describe the new
// process. It is the path for estimates, where smaps_rollup cannot come
// last because it cannot be read at all. A tid other than 0 reads the
// process through that thread's directory.
func (s *Scanner) readDir(w *worker, pid, tid int, p *Process) outcome {
	r := w.r
	if tid == 0 {
		if r.Open(pid) != nil {
			return skipGone
		}
	} else if r.OpenTask(pid, tid) != nil {
		return skipGone
	}
	*p = Process{PID: pid}

	result := okEstimate
	if !s.opt.Fast {
		var err error
		if !s.noRollup.Load() {
			err = r.SmapsRollup(&w.ru)
			if err == proc.ErrNotExist {
				if err = r.Smaps(&w.ru); err == nil {
					s.noRollup.Store(true)
				}
			}
		} else {
			err = r.Smaps(&w.ru)
		}
		switch {
		case err == nil:
			result = okExact
			ExactFigures(p, &w.ru)
		case err == proc.ErrNoMM:
			// Kernel threads and zombies have no address space.
			return skipKernel
		case err == proc.ErrGone || err == proc.ErrNotExist:
			return skipGone
		case err == proc.ErrDenied:
			result = okDenied
		case errors.Is(err, proc.ErrMalformed) || errors.Is(err, proc.ErrTooLarge) || errors.Is(err, proc.ErrNotRegular):
			result = okMalformed
		default:
			result = okDenied
		}
	}
	if out := s.readRest(w, p, result != okExact, false); out != okExact {
		return out
	}
	if tid != 0 && s.opt.NeedStartTime {
		if out := s.readLeaderStat(w, p); out != okExact {
			return out
		}
	}
	return result
}

// readLeaderStat fills StartTime from the leader's stat, for a process
// read through one of its threads.
func (s *Scanner) readLeaderStat(w *worker, p *Process) outcome {
	switch err := w.r.LeaderStat(&w.st); err {
	case nil:
	case proc.ErrGone:
		return skipGone
	default:
		return skipBroken
	}
	p.StartTime = w.st.StartTime
	return okExact
}

// readStatus reads status into w.ss and fills what it holds: uid, parent,
// task name and, with estimate set, the RSS-based figures. It returns
// okExact to go on, or the outcome that drops the process.
func (s *Scanner) readStatus(w *worker, p *Process, estimate bool) outcome {
	switch err := w.r.Status(&w.ss); err {
	case nil:
	case proc.ErrGone:
		return skipGone
	default:
		return skipBroken
	}
	if !w.ss.HasMM {
		return skipKernel
	}
	p.UID, p.UIDKnown = w.ss.UID, true
	p.PPID = w.ss.PPid
	p.Comm = w.intern(proc.UnescapeName(w.name[:0], w.ss.NameBytes()))
	if estimate {
		EstimateFigures(p, &w.ss)
	}
	return okExact
}

// readRest reads everything but the figures: status when estimates or
// uids need it (else comm), the exe link, stat when the parent or start
// time is needed, the command line of interpreters, and the cgroup. It
// returns okExact to go on, or the outcome that drops the process. With
// exeRead set, the exe link was read already, into w.exe and w.exeErr.
func (s *Scanner) readRest(w *worker, p *Process, estimate, exeRead bool) outcome {
	r := w.r
	havePPID := false
	if estimate || s.opt.NeedUID {
		if out := s.readStatus(w, p, estimate); out != okExact {
			return out
		}
		havePPID = true
	} else if !s.opt.NoNames {
		comm, err := r.Comm()
		switch err {
		case nil:
		case proc.ErrGone:
			return skipGone
		default:
			return skipBroken
		}
		p.Comm = w.intern(comm)
	}

	if s.opt.NoNames {
		if s.opt.NeedStartTime {
			if out := s.readStat(w, p); out != okExact {
				return out
			}
		}
		return s.readCgroup(w, p)
	}

	if !s.opt.Fast {
		if !exeRead {
			w.exe, w.exeErr = r.Exe(w.link[:0])
		}
		if w.exeErr == nil {
			base, deleted := ExeBase(w.exe)
			p.Exe, p.ExeDeleted = w.intern(base), deleted
		}
	}

	// ProgramName looks at the parent only when the executable's name does
	// not start with the task name.
	needParent := p.Exe != "" && !strings.HasPrefix(p.Exe, p.Comm)
	if s.opt.NeedStartTime || (needParent && !havePPID) {
		if out := s.readStat(w, p); out != okExact {
			return out
		}
	}

	if p.Exe == "" && !s.opt.Fast {
		// No usable exe link: argv[0] may name the executable (see
		// ExeFromCmdline), and then the script too.
		cl, err := r.Cmdline()
		switch err {
		case nil:
			p.Exe = w.intern(ExeFromCmdline(p.Comm, cl))
			if IsInterpreter(p.Exe) {
				p.Script = w.intern(ScriptOf(p.Exe, cl))
			}
		case proc.ErrGone:
			// Exited while being read.
			return skipGone
		}
	} else if IsInterpreter(p.Exe) {
		cl, err := r.Cmdline()
		switch err {
		case nil:
			p.Script = w.intern(ScriptOf(p.Exe, cl))
		case proc.ErrGone:
			return skipGone
		}
	}
	return s.readCgroup(w, p)
}

// readStat fills PPID and StartTime from stat. It returns okExact when the
// process is still to be kept, or the outcome that drops it.
func (s *Scanner) readStat(w *worker, p *Process) outcome {
	switch err := w.r.Stat(&w.st); err {
	case nil:
	case proc.ErrGone:
		return skipGone
	default:
		return skipBroken
	}
	if w.st.Kthread() {
		return skipKernel
	}
	p.PPID, p.StartTime = w.st.PPid, w.st.StartTime
	return okExact
}

// readCgroup fills Cgroup when asked for. It always returns okExact (go
// on): a missing cgroup file leaves the group empty, it drops nothing.
func (s *Scanner) readCgroup(w *worker, p *Process) outcome {
	if s.opt.NeedCgroup {
		if cg, err := w.r.Cgroup(); err == nil {
			p.Cgroup = w.intern(cg)
		}
	}
	return okExact
}

// intern returns b as a string, sharing one copy per distinct value so
// that repeated scans do not allocate names again.
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
