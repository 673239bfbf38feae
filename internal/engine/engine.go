// Package engine is memwho's one sampler: it reads the processes of a
// procfs tree into a [sample.Snapshot], for a report once and for watch,
// serve and record periodically, at a fraction of the cost of walking
// every page table on every tick.
//
// Package sample holds the data model and the rules (Process, Snapshot,
// naming, grouping, ExactFigures and EstimateFigures); this package holds
// the one way to read one process (read.go) and the policy of when to
// read it again. The sampler lives here rather than in package sample
// because the incremental policy needs state sample has no business
// with (held descriptors, per-process records, socket counting), while
// a one-shot scan is the policy's simplest case: with Options.OneShot
// every Scan reads every process once, the cheapest PID-reuse-safe way
// (smaps_rollup held and read last, see read.go), and keeps nothing.
//
// The rest of this documentation is about the incremental policy, the
// zero value of Options.
//
// # How a tick works
//
// smaps_rollup is expensive: the kernel walks the process's page tables
// under its mm lock, about 10x the cost of any other /proc file. So the
// engine reads it only when it has reason to believe the figures moved:
//
//   - A process seen for the first time is read in full, as a report
//     reads it (read.go), plus its stat for the start time that identifies
//     it and a statm descriptor kept open.
//   - Every later tick reads only /proc/PID/statm, through a descriptor the
//     engine keeps open (one pread per process, no path lookup). statm
//     holds the resident set size and its file-backed and shmem part, in
//     pages; the kernel prints it in a fraction of the time of status
//     (measured: 2.5 us against 11 us per process). A process whose
//     resident or shared pages did not move keeps its last figures.
//   - A process whose statm moved is re-walked (smaps_rollup only; its
//     names stay). A change of the text size means an exec: its names are
//     read again too. A process walked for a change keeps its
//     smaps_rollup descriptor open, and its next walks read it again at
//     offset 0 (procfs prints it anew, walking the page tables again):
//     one pread instead of an open, a read, a close and the statm read
//     that proves the path named the same process (read.go, readKept).
//     It gives the descriptor back at every forced walk and at an exec
//     statm shows (the descriptor still reads the old address space
//     while another task shares it), when the process exits or execs
//     (the descriptor stops reading then), and when processes outgrow
//     MaxHeld; at most maxKept are kept (each holds a page of kernel
//     memory).
//   - When a process appears or exits, its parent is re-walked: a fork
//     shares the parent's pages copy-on-write and halves their PSS without
//     changing the parent's resident size.
//   - Every process is re-walked in full at least every Options.FullEvery
//     ticks, whatever its statm says, spread over the ticks by PID so that
//     no tick carries them all.
//
// # Identity
//
// The held statm descriptor is tied to the process it was opened for:
// once that process exits, reads fail with ESRCH even if its PID has been
// given to a new process. So a reused PID never inherits another process's
// figures; (PID, StartTime) identifies the record. When descriptors run
// short (Options.MaxHeld), the rest are read by path each tick and checked
// against their start time in /proc/PID/stat.
//
// # Cost budget
//
// A process whose smaps_rollup read took long (a heap of hundreds of GiB
// takes seconds, and holds its mm lock while the kernel walks it) is walked
// at most once per cost/Options.WalkBudget: with the default budget of 1%,
// a walk that took 2 s is repeated at most every 200 s, whatever changed.
// Its figures are then older than one tick; [Detail.SampledAt] says how old,
// and the agent exports it.
//
// # Error bound
//
// A figure that was not re-read is the process's PSS at its last walk W.
// Without a change of its own resident pages (which statm would show),
// a process's PSS still moves when other processes map or unmap pages it
// maps: each page counts size/N for its N mappers. Its private anonymous
// pages stay its own (only a fork or a KSM merge can share them, and a
// fork re-walks the parent, see above), every other page counts at most
// in full and at least zero. So
//
//	PrivateAnon(W) <= PSS(now) <= RSS(W)
//
// and the stale figure can have risen by at most RSS(W) - PSS(W) (up) or
// fallen by at most PSS(W) - PrivateAnon(W) (down): [Detail.Bound] is the
// larger of the two (huge pages added, see bound.go). smaps_rollup has no
// PrivateAnon line; the engine uses the lower estimate
// Anonymous + Private_Clean + Private_Dirty - Rss, which keeps the bound
// safe. The bound holds for at most FullEvery ticks (longer only for a
// process over its cost budget, whose age is shown). SwapPss moves the
// same way for shared swapped pages.
//
// Summed over processes the per-process bounds count a page shared by N
// processes N times, so they can exceed all memory in use;
// [Stats.StaleBound] bounds the error of the sum of the stale figures
// instead, counting each shared page once through /proc/meminfo's Mapped
// (proof in bound.go). TestPSSErrorBound checks both against full walks,
// with 10% of the processes changing their sharing every tick;
// docs/agent.md has the figures.
//
// It does not render, group or remember history (the live view keeps its
// own per-group series).
package engine

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/sockdiag"
	"golang.org/x/sys/unix"
)

// MinFiles is the fewest open files (RLIMIT_NOFILE) New accepts: the
// standard streams, the Go runtime's poller and cgroup files, the procfs
// root and two readers' descriptors, with a few to spare. Above it, a
// read that still runs out of descriptors is retried and, failing that,
// counted as skipped (sample.Snapshot.Broken), never as a process gone.
const MinFiles = 16

// CheckFiles returns an error when the open-file limit (RLIMIT_NOFILE) is
// under MinFiles, as New does: for a command that creates something (a
// database) before its sampler, to refuse before it does.
func CheckFiles() error {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur < MinFiles {
		// The Go runtime has raised the soft limit to the hard one by
		// now; below this, its own poller and the readers go short, and
		// a scan would leave most processes out (or the runtime die
		// making its poller).
		return fmt.Errorf("the open-file limit (ulimit -n) is %d: a scan needs at least %d", rl.Cur, MinFiles)
	}
	return nil
}

// CheckFree returns an error when fewer than need descriptors are free
// under the open-file limit: the limit less those this process has open
// below it (OpenBelow; nothing is refused when they cannot be counted
// for another reason than a descriptor or file table full). CheckFiles
// looks at the limit alone, and a shell can hand a command many open
// descriptors: record asks here before it creates its database, so that
// it does not create one it then cannot open (review7).
func CheckFree(need int) error {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil || rl.Cur > 1<<20 {
		return nil
	}
	open, err := OpenBelow(rl.Cur)
	if errors.Is(err, unix.EMFILE) {
		// The listing itself needed a descriptor, and none was free
		// (review8: the Go runtime keeps its cgroup CPU-limit files
		// open, so a shell's descriptors and the poller's two could
		// fill the limit; the check passed and record created its
		// database's directory before failing to create the file).
		return fmt.Errorf("the open-file limit (ulimit -n) is %d and every descriptor is taken: this needs %d free", rl.Cur, need)
	}
	if errors.Is(err, unix.ENFILE) {
		// The same for the system's file table: what record would
		// open next fails alike.
		return fmt.Errorf("the system's file table is full (fs.file-max): this needs %d free descriptors", need)
	}
	if err != nil {
		return nil
	}
	if free := int(rl.Cur) - open; free < need {
		return fmt.Errorf("the open-file limit (ulimit -n) is %d and %d descriptors are open: this needs %d free", rl.Cur, open, need)
	}
	return nil
}

// errNotProc: /proc/self/fd is not on a procfs, and its names say
// nothing of this process's descriptors.
var errNotProc = errors.New("/proc/self/fd is not on a procfs")

// OpenBelow counts the descriptors this process has open numbered below
// limit, listed in /proc/self/fd (names only; no descriptor's link is
// followed). Only those take room under the open-file limit: the kernel
// gives the lowest free number and refuses only when none below the
// limit is. Those at or above it (opened before the limit was lowered:
// prlimit --pid on a shell) count for nothing, and counting them refused
// a record that had room (review8). The listing's own descriptor is not
// counted. The error is the listing's: EMFILE when no descriptor was free
// for it, ENFILE when the system's file table is full.
func OpenBelow(limit uint64) (int, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(d.Fd()), &st); err != nil {
		return 0, err
	}
	if st.Type != unix.PROC_SUPER_MAGIC {
		return 0, errNotProc
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, err
	}
	open := 0
	for _, name := range names {
		if n, err := strconv.ParseUint(name, 10, 64); err == nil && n < limit {
			open++
		}
	}
	// The listing's own descriptor (the lowest free number, below the
	// limit since it was opened) is closed again: not counted.
	return open - 1, nil
}

// Options configures an Engine. The zero value (with FS set) samples
// every process with exact figures, incrementally.
type Options struct {
	// FS is the procfs tree to read, opened and checked once by the
	// caller, who keeps it open while the Engine is in use.
	FS *proc.FS
	// FullEvery is K: every process is re-walked in full at least every K
	// ticks. 0 means DefaultFullEvery; 1 walks everything every tick.
	FullEvery int
	// WalkBudget is the fraction of wall-clock time that reading one
	// process's smaps_rollup may take: a walk that took d is not repeated
	// within d/WalkBudget. 0 means DefaultWalkBudget; a negative value
	// disables the budget.
	WalkBudget float64
	// OneShot makes every Scan a full walk that keeps nothing between
	// scans: each process is read once, as cheaply as PID-reuse safety
	// allows (see read.go), straight into the snapshot, with no statm
	// check, no descriptor held and no record kept (oneshot.go). It is
	// the policy of a report. FullEvery, WalkBudget and MaxHeld do not
	// apply, Stats describes the last Scan alone, and Details is empty.
	OneShot bool
	// Fast never reads smaps_rollup: figures are RSS-based estimates from
	// status, as with the report's --fast.
	Fast bool
	// NeedUID fills Process.UID (for user filters and grouping).
	NeedUID bool
	// NeedCgroup fills Process.Cgroup and SystemdCgroup.
	NeedCgroup bool
	// NoNames skips what only program names need (comm, the exe link,
	// cmdline): for groupings by user, cgroup, unit, slice or container. Name, Comm, Exe and
	// Script stay empty.
	NoNames bool
	// NeedStartTime fills Process.StartTime and PPID for a OneShot
	// sampler (one scan is consistent without them); an incremental one
	// always fills them, they identify its records.
	NeedStartTime bool
	// PIDs, when not empty, restricts sampling to these processes.
	PIDs []int
	// NoFrameLookups never looks page frames up (/proc/kpagecount and
	// kpageflags) in a read page by page: the capability install's
	// reader, to whom the kernel shows no frame number, so that it
	// reads none even where a kernel would (CAP_DAC_READ_SEARCH opens
	// those files).
	NoFrameLookups bool
	// Workers bounds the parallel readers; 0 means GOMAXPROCS less one
	// (at least one), twice GOMAXPROCS for OneShot.
	Workers int
	// MaxHeld bounds the descriptors kept open between ticks: one statm
	// descriptor per process first; then, with what that leaves, one
	// smaps_rollup descriptor per process that changes, at most 1024
	// (see "How a tick works"). 0 means half of RLIMIT_NOFILE (none
	// when that limit is under 32 plus 3 per worker), negative none; processes beyond it are read by path and checked by start
	// time.
	MaxHeld int
	// OtherFiles is how many descriptors the rest of the process may
	// hold at once beyond the engine's own (the agent's clients): the
	// default MaxHeld leaves them free, so that a full set of clients
	// cannot starve the reads.
	OtherFiles int
	// PacedMin is the size, in bytes, of a process's page tables'
	// reach (resident and swapped-out pages) from which it is read page
	// by page rather than by smaps_rollup, so as not to stop it while
	// the kernel walks them (paced.go). 0 means DefaultPacedMin; a
	// negative value reads every process by smaps_rollup.
	PacedMin int64
	// Conns counts each process's ESTABLISHED TCP sockets into
	// Process.Conns (see package sockdiag). It reads a process's
	// /proc/PID/fd when it is new, when its sockets can have changed and
	// at least every FullEvery ticks (see connCounter), which needs
	// CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH for other users' processes.
	Conns bool
}

// maxKept bounds the smaps_rollup descriptors kept between walks: each
// holds 4.4 KiB of unreclaimable kernel memory (the seq_file's page-sized
// buffer, measured), charged to the agent's cgroup, for about 10 us of
// CPU saved per walk. 1024 of them cost 4.4 MiB.
const maxKept = 1024

// Defaults for Options.
const (
	// DefaultFullEvery re-walks every process at least once a minute at
	// the live view's one-second ticks; at 10% of processes changing per
	// tick it keeps a tick under 0.15x of a full walk.
	DefaultFullEvery = 60
	// DefaultWalkBudget lets one process's page-table walks take at most
	// 1% of wall-clock time.
	DefaultWalkBudget = 0.01
)

// Detail is what the engine knows of one process of the last snapshot
// beyond its figures.
type Detail struct {
	PID int
	// StartTime is field 22 of /proc/PID/stat, in clock ticks since boot.
	StartTime uint64
	// SampledAt is when the figures were read (smaps_rollup, or status
	// for estimates). Now minus SampledAt is the figure's age.
	SampledAt time.Time
	// WalkCost is how long the last smaps_rollup read took (wall clock).
	WalkCost time.Duration
	// Walked is true when the figures were read during the last tick.
	Walked bool
	// Deferred is true when the process was due for a walk during the
	// last tick but its cost budget postponed it.
	Deferred bool
	// Bound is the most, in bytes, by which RAM can be off when the
	// figure was not walked this tick (see "Error bound" in the package
	// documentation): max(RSS - PSS, PSS - PrivateAnon) at its last walk.
	Bound uint64
}

// Stats describes the last tick.
type Stats struct {
	// Tick counts ticks since New, from 1.
	Tick uint64
	// Start is when the tick began; Duration is how long it took.
	Start    time.Time
	Duration time.Duration
	// Checked is the number of processes whose statm was read.
	Checked int
	// New, Changed, Related and Forced count the processes read by
	// reason: first sight (with an address space: kernel threads are
	// not counted), statm moved, a child appeared or exited, FullEvery
	// reached (or ForceFull).
	New, Changed, Related, Forced int
	// Deferred counts walks postponed by the cost budget.
	Deferred int
	// Unheld counts processes read by path because no descriptor could
	// be kept for them.
	Unheld int
	// WalkTime is the sum of the smaps_rollup read times of this tick.
	WalkTime time.Duration
	// Paced counts the processes read page by page this tick (paced.go).
	Paced int
	// ConnsErr is why TCP sockets could not be listed this tick
	// (Options.Conns); Process.Conns is then not valid.
	ConnsErr error
	// ConnsDenied counts processes whose /proc/PID/fd could not be
	// read (another user's process without CAP_DAC_READ_SEARCH, or
	// memwho out of descriptors or memory): they count 0 connections.
	ConnsDenied int
	// ConnsRead counts the processes whose /proc/PID/fd was read this
	// tick (see connCounter: the others kept their socket lists).
	ConnsRead int
	// ConnsProcNet is true when sockets came from /proc/net/tcp{,6}
	// because sock_diag is unavailable.
	ConnsProcNet bool
	// StaleBound is the most, in bytes, by which the sum of RAM over
	// the figures not walked this tick can be off: tighter than the sum
	// of their Detail.Bound, which counts a page shared by N processes
	// N times (see sumBound).
	StaleBound uint64
}

// Walks returns the number of smaps_rollup walks of the tick.
func (s Stats) Walks() int { return s.New + s.Changed + s.Related + s.Forced }

// Engine samples processes tick by tick. It is not safe for concurrent
// use; one goroutine calls Scan.
type Engine struct {
	opt     Options
	fs      *proc.FS
	workers []*worker
	// noRollup is set once smaps_rollup turns out to be missing (kernels
	// before 4.14), so later processes go straight to smaps.
	noRollup atomic.Bool
	// swapUsed is the host's swap in use at the start of the scan, in
	// bytes: below Options.PacedMin no process can have that much
	// swapped out (paced.go).
	swapUsed uint64
	// paced_ counts the processes read page by page in the scan.
	paced_ atomic.Int64

	tick      uint64
	forceFull bool
	recs      []record
	free      []int32
	byPID     map[int]int32
	held      atomic.Int64
	maxHeld   int64
	// kept counts the smaps_rollup descriptors records keep (keepRollup);
	// keepMax is how many they may keep this tick.
	kept    atomic.Int64
	keepMax int64

	pids    []int
	dirbuf  []byte
	work    []int32 // records listed this tick, in listing order
	walks   []int32
	late    []int32 // parents re-walked after phase 3 (relateLate)
	details []Detail
	stats   Stats
	meminfo proc.Meminfo

	conns *connCounter

	// A OneShot scan's (oneshot.go): each listed process's state, and
	// the workers with their one record each.
	states []state
	once   []*oneWorker
}

// state is what a record's process came to at its last read.
type state uint8

const (
	stExact     state = iota
	stEstimate        // --fast, or status-based by choice
	stDenied          // estimate because smaps_rollup was refused
	stMalformed       // estimate because smaps_rollup did not parse
	stKernel          // kernel thread or zombie: left out
	stBroken          // stat or status unparsable: left out
	stGone            // exited (or PID reused) while being read
	stStarved         // memwho ran out of descriptors or memory: left out, read again as new
)

// action is what a tick does to a record.
type action uint8

const (
	actNone    action = iota
	actNew            // read in full for the first time
	actChanged        // statm moved: re-walk
	actExec           // statm text moved: re-walk and read names again
	actRelated        // a child appeared or exited: re-walk
	actForced         // FullEvery reached: re-walk and names
)

// record is the engine's memory of one process.
type record struct {
	pid int
	// tid, when not 0, is the thread the process is read through: its
	// main thread has exited while others run on (sample.LiveThread).
	tid int
	fd  int // held statm descriptor, -1 when none
	// rfd is a smaps_rollup descriptor kept open between walks, -1 when
	// none (keepRollup): a re-walk reads it again at offset 0 instead
	// of opening the file by path.
	rfd   int
	start uint64
	st    state
	p     sample.Process

	// ref is statm as read just before the last walk: a later statm
	// that differs means the figures moved.
	ref proc.Statm

	// due is the tick by which the process must be walked again;
	// namesDue the one by which its names must be read again.
	due, namesDue uint64
	sampledAt     time.Time
	cost          time.Duration
	// changed is the last tick the process was walked for a reason
	// other than FullEvery (new, statm moved, a child came or went).
	changed uint64
	// byPath is the last tick the process was read by path (not
	// through rfd): what bounds how long an exec statm cannot see
	// shows the old address space (see readOnce).
	byPath uint64
	risk   risk // how far a stale figure can move (bound.go)
	// lastSwap is the swapped-out bytes of the last read, which statm
	// does not show: part of the walk size paced decides on.
	lastSwap uint64

	// nameParent is the parent's Exe that p.Name was computed with.
	nameParent string
	namesRead  bool // names were re-read this tick: recompute Name

	// Per tick.
	seen     uint64
	act      action
	full     bool       // ForceFull: read names too
	moved    bool       // statm moved (resident or shared)
	execed   bool       // statm text moved
	walked   bool       // figures read this tick
	deferred bool       // due, but over its cost budget
	now      proc.Statm // statm read this tick

	conn connState // Options.Conns (conns.go)
}

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
	buf    [256]byte // statm
	names  map[string]string
	// threads is the thread count status gave for a process without an
	// address space, -1 when status did not tell (liveThread).
	threads int
	// tids and tidbuf list a process's threads (liveThread).
	tids   []int
	tidbuf []byte
	// walkTime sums this worker's smaps_rollup read times in a tick.
	walkTime time.Duration
	fdc      *sockdiag.FDCounter // with Options.Conns
	pc       proc.Pacer          // paced reads (paced.go)
}

// New returns a sampler of the tree opt.FS.
func New(opt Options) (*Engine, error) {
	if opt.FS == nil {
		return nil, errors.New("engine: no procfs tree given")
	}
	if opt.FullEvery <= 0 {
		opt.FullEvery = DefaultFullEvery
	}
	if opt.WalkBudget == 0 {
		opt.WalkBudget = DefaultWalkBudget
	}
	if err := CheckFiles(); err != nil {
		return nil, err
	}
	fs := opt.FS
	n := opt.Workers
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
		if opt.OneShot {
			// Nearly all of a full walk is time in the kernel, inside
			// reads. With one reader per core the cores still idle
			// between reads (a 2-core VM, 1000 processes: 1.65-1.7
			// CPUs busy); a second reader per core kept them busier
			// (1.8-1.9) and cut the wall time by about 12% at the
			// same CPU time. A tick is mostly one statm read per
			// process, where more goroutines only cost more.
			n *= 2
		} else if n > 1 {
			// An incremental tick leaves one P free: with every P
			// inside a long read (a page-table walk), the runtime
			// takes Ps back from the syscalls and hands them on
			// (and a scrape's goroutine can wait for that). Measured
			// on 2 cores, 1000 processes, ticks alone
			// (MEMWHO_ENGINE_TICKS_ONLY, docs/agent.md): 1 reader
			// used 12% less CPU per tick than 2 (26.7 ms against
			// 30.3, 4 pairs), for 40% more wall time (26 ms against
			// 19), which nobody waits for: walks run apart from
			// scrapes.
			n--
		}
	}
	e := &Engine{opt: opt, fs: fs, byPID: make(map[int]int32)}
	e.maxHeld = int64(opt.MaxHeld)
	if opt.OneShot {
		e.maxHeld = -1
	} else if e.maxHeld == 0 {
		var rl unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil {
			// Half the limit, and never so much that the readers'
			// own descriptors (a directory, a file and a kept one
			// each) and the rest of the process (standard streams,
			// the procfs root, the runtime's poller, a terminal, the
			// sock_diag socket, clients) go short: a low limit holds
			// nothing rather than starve the reads.
			reserve := 32 + 3*uint64(n) + uint64(max(opt.OtherFiles, 0))
			e.maxHeld = int64(rl.Cur / 2)
			if rl.Cur < reserve {
				e.maxHeld = -1
			} else {
				e.maxHeld = min(e.maxHeld, int64(rl.Cur-reserve))
			}
		} else {
			e.maxHeld = 512
		}
	}
	for range n {
		e.workers = append(e.workers, &worker{
			pc:    proc.Pacer{NoLookups: opt.NoFrameLookups},
			r:     fs.NewReader(),
			link:  make([]byte, 0, 4096),
			name:  make([]byte, 0, 64),
			names: make(map[string]string),
		})
	}
	if opt.Conns {
		for _, w := range e.workers {
			w.fdc = sockdiag.NewFDCounter(fs)
		}
		e.conns = newConnCounter(fs)
	}
	return e, nil
}

// Close releases every descriptor the engine holds.
func (e *Engine) Close() error {
	for i := range e.recs {
		if e.recs[i].fd >= 0 {
			unix.Close(e.recs[i].fd)
			e.recs[i].fd = -1
		}
		e.dropRollup(&e.recs[i])
	}
	e.held.Store(0)
	if e.conns != nil {
		e.conns.close()
	}
	for _, w := range e.workers {
		w.r.Close()
	}
	return nil
}

// Options returns the options in effect, defaults filled in.
func (e *Engine) Options() Options { return e.opt }

// ForceFull makes the next Scan re-walk every process, ignoring statm and
// the cost budget: a full walk, as a report does.
func (e *Engine) ForceFull() { e.forceFull = true }

// Stats describes the last Scan.
func (e *Engine) Stats() Stats { return e.stats }

// Details returns, for each process of the snapshot the last Scan filled
// (same order, same length as its Procs), what the engine knows beyond the
// figures. The slice is reused by the next Scan. A OneShot sampler keeps
// none.
func (e *Engine) Details() []Detail { return e.details }

// Scan runs one tick and fills snap, reusing snap.Procs, sorted by PID.
// An incremental sampler always fills StartTime and PPID.
func (e *Engine) Scan(snap *sample.Snapshot) error {
	start := time.Now()
	e.tick++
	tick := e.tick
	full := e.forceFull
	e.forceFull = false
	e.stats = Stats{Tick: tick, Start: start}
	e.swapUsed = e.hostSwapUsed()
	e.paced_.Store(0)
	snap.Time = start
	snap.Procs = snap.Procs[:0]
	snap.Gone, snap.Denied, snap.Kernel, snap.Broken, snap.Malformed = 0, 0, 0, 0, 0
	// The host's figures before the walk too, so that the ledger knows
	// what moved while the processes were read.
	sample.ReadMeminfoBefore(e.workers[0].r, &e.meminfo, snap)
	if e.opt.OneShot {
		return e.scanOnce(snap, start)
	}

	// List, and find or make each PID's record.
	if err := e.listPIDs(); err != nil {
		return err
	}
	n := len(e.pids)
	e.work = slices.Grow(e.work[:0], n)
	snap.Procs = slices.Grow(snap.Procs, n)
	e.details = slices.Grow(e.details[:0], n)
	for _, pid := range e.pids {
		i, ok := e.byPID[pid]
		if !ok {
			i = e.alloc(pid)
		}
		rc := &e.recs[i]
		rc.seen = tick
		rc.moved, rc.execed, rc.walked, rc.deferred, rc.namesRead, rc.full = false, false, false, false, false, false
		if !ok {
			rc.act = actNew
		} else {
			rc.act = actNone
			e.stats.Checked++
		}
		e.work = append(e.work, i)
	}
	// Kept smaps_rollup descriptors use what MaxHeld leaves after one
	// statm descriptor per process (when processes grow in number, they
	// give way), and at most maxKept.
	e.keepMax = 0
	if e.maxHeld >= 0 {
		e.keepMax = min(maxKept, max(0, e.maxHeld-int64(n)))
	}
	for _, i := range e.work {
		if e.kept.Load() <= e.keepMax {
			break
		}
		e.dropRollup(&e.recs[i])
	}

	// Phase 1: read new processes in full and every known one's statm.
	e.parallel(e.work, func(w *worker, rc *record) {
		if rc.act == actNew {
			e.readNew(w, rc, start)
			return
		}
		e.check(w, rc)
	})

	// Phase 2: decide who is re-walked, and phase 3: walk. A OneShot
	// sampler read every process in phase 1 and has nothing to add.
	if !e.opt.OneShot {
		e.plan(tick, full, start)
		e.parallel(e.walks, func(w *worker, rc *record) {
			if rc.act == actNew {
				e.readNew(w, rc, start)
				return
			}
			e.rewalk(w, rc, start)
		})
		e.relateLate(tick, start)
	}
	for _, w := range e.workers {
		e.stats.WalkTime += w.walkTime
		w.walkTime = 0
	}
	e.stats.Paced = int(e.paced_.Load())
	for _, i := range e.work {
		if rc := &e.recs[i]; rc.act == actNew && rc.walked {
			e.stats.New++
		}
	}

	// Phase 4: count connections, collect, name.
	if c := e.conns; c != nil {
		e.stats.ConnsErr = c.dump()
		e.stats.ConnsProcNet = c.src.ProcNet
		if e.stats.ConnsErr == nil {
			e.stats.ConnsDenied, e.stats.ConnsRead = c.tick(e, tick, full)
		}
	}
	e.details = e.details[:0]
	var up, down, unmapped uint64
	for _, i := range e.work {
		rc := &e.recs[i]
		keep, cause := tally(snap, rc.st)
		if !keep {
			if rc.st == stGone || rc.st == stStarved {
				e.drop(i)
			}
			continue
		}
		if cause != sample.CauseNone {
			// Else the figures' own (ExactFigures, EstimateFigures).
			sample.Refused(&rc.p, cause)
		}
		e.name(rc, tick)
		if rc.fd < 0 && !e.opt.OneShot {
			e.stats.Unheld++
		}
		snap.Procs = append(snap.Procs, rc.p)
		e.details = append(e.details, Detail{
			PID: rc.pid, StartTime: rc.start, SampledAt: rc.sampledAt,
			WalkCost: rc.cost, Walked: rc.walked, Deferred: rc.deferred, Bound: rc.risk.bound(),
		})
		if !rc.walked && rc.p.Accuracy == sample.Exact {
			up += rc.risk.up
			down += rc.risk.down
			unmapped += rc.risk.unmapped
		}
	}
	snap.ConnsOK = e.conns != nil && e.stats.ConnsErr == nil

	sample.ReadMeminfo(e.workers[0].r, &e.meminfo, snap)
	mapped := int64(-1)
	if snap.MeminfoOK && e.meminfo.HasMapped {
		mapped = int64(min(e.meminfo.Mapped, 1<<62))
	}
	e.stats.StaleBound = sumBound(up, down, unmapped, mapped)
	e.stats.Duration = time.Since(start)
	return nil
}

// plan decides which known processes the tick re-walks, into e.walks:
// those whose PID now names a new process, whose statm moved, whose child
// appeared or exited, or whose forced walk is due, within their cost
// budget unless full.
func (e *Engine) plan(tick uint64, full bool, start time.Time) {
	e.walks = e.walks[:0]
	for _, i := range e.work {
		rc := &e.recs[i]
		switch {
		case rc.st == stStarved:
			// Its statm could not be opened or read for want of
			// descriptors: read it again from scratch in phase 3,
			// when phase 1's descriptors are closed. Its process
			// may have exited meanwhile (the PID reused), which
			// frees the pages it shared with its parent: the
			// parent is walked too, as for stGone (review6).
			e.relate(rc.p.PPID, tick)
			e.reset(rc)
			rc.act = actNew
			e.walks = append(e.walks, i)
			continue
		case rc.act == actNew:
			if rc.st != stGone && rc.st != stKernel {
				e.relate(rc.p.PPID, tick)
			}
			continue
		case rc.st == stGone:
			// The held descriptor says the process exited; the PID
			// is listed again, so it belongs to a new process now.
			e.relate(rc.p.PPID, tick)
			e.reset(rc)
			rc.act = actNew
			e.walks = append(e.walks, i)
			continue
		}
	}
	// Records not listed this tick are gone: their parents lose the
	// pages they shared.
	for i := range e.recs {
		rc := &e.recs[i]
		if rc.pid != 0 && rc.seen != tick {
			if rc.st != stKernel {
				e.relate(rc.p.PPID, tick)
			}
			e.drop(int32(i))
		}
	}
	for _, i := range e.work {
		rc := &e.recs[i]
		due := full || tick >= rc.due
		if rc.act == actNew || rc.st == stKernel || rc.st == stBroken {
			// Kernel threads and zombies have nothing to walk; a
			// broken process is retried when due.
			if rc.st == stBroken && due {
				rc.act = actForced
				e.walks = append(e.walks, i)
				e.stats.Forced++
			}
			continue
		}
		var a action
		switch {
		case due:
			a = actForced
		case rc.execed:
			a = actExec
		case rc.moved:
			a = actChanged
		case rc.act == actRelated:
			a = actRelated
		default:
			continue
		}
		if !full && e.opt.WalkBudget > 0 && rc.cost > 0 {
			wait := time.Duration(float64(rc.cost) / e.opt.WalkBudget)
			if start.Sub(rc.sampledAt) < wait {
				rc.act = actNone
				rc.deferred = true
				e.stats.Deferred++
				continue
			}
		}
		rc.act = a
		rc.full = full
		e.walks = append(e.walks, i)
		switch a {
		case actForced:
			e.stats.Forced++
		case actExec, actChanged:
			e.stats.Changed++
		case actRelated:
			e.stats.Related++
		}
	}

}

// relateLate re-walks the parents of the processes phase 3 read as new
// (a record starved in phase 1, or a PID reused): plan ran before their
// parents were known. review6: a process whose first read ran out of
// descriptors in phase 1 and succeeded in phase 3 left its parent
// unwalked after the fork, its pages now shared copy-on-write counted
// whole in the parent and again in the child, for up to FullEvery ticks
// and below the bound's PrivateAnon floor. A tick without such a read
// costs one pass over e.walks.
func (e *Engine) relateLate(tick uint64, start time.Time) {
	e.late = e.late[:0]
	for _, i := range e.walks {
		rc := &e.recs[i]
		if rc.act != actNew || !rc.walked || rc.p.PPID <= 0 {
			continue
		}
		j, ok := e.byPID[rc.p.PPID]
		if !ok {
			continue
		}
		pr := &e.recs[j]
		if pr.seen != tick || pr.act != actNone || pr.deferred || pr.walked || pr.st > stMalformed {
			continue
		}
		pr.act = actRelated
		e.late = append(e.late, j)
		e.stats.Related++
	}
	if len(e.late) > 0 {
		// Only then: the closure would allocate at every tick.
		e.parallel(e.late, func(w *worker, rc *record) { e.rewalk(w, rc, start) })
	}
}

// relate marks the record of pid (a parent) for a re-walk this tick.
func (e *Engine) relate(pid int, tick uint64) {
	if pid <= 0 {
		return
	}
	i, ok := e.byPID[pid]
	if !ok {
		return
	}
	rc := &e.recs[i]
	if rc.seen == tick && rc.act == actNone {
		rc.act = actRelated
	}
}

// alloc makes a record for pid.
func (e *Engine) alloc(pid int) int32 {
	var i int32
	if n := len(e.free); n > 0 {
		i = e.free[n-1]
		e.free = e.free[:n-1]
	} else {
		e.recs = append(e.recs, record{})
		i = int32(len(e.recs) - 1)
	}
	e.recs[i] = record{pid: pid, fd: -1, rfd: -1}
	e.byPID[pid] = i
	return i
}

// reset forgets everything about rc's process but its PID.
func (e *Engine) reset(rc *record) {
	if rc.fd >= 0 {
		unix.Close(rc.fd)
		e.held.Add(-1)
	}
	e.dropRollup(rc)
	seen := rc.seen
	*rc = record{pid: rc.pid, fd: -1, rfd: -1, seen: seen}
}

// drop forgets record i.
func (e *Engine) drop(i int32) {
	rc := &e.recs[i]
	if rc.pid == 0 {
		return
	}
	if rc.fd >= 0 {
		unix.Close(rc.fd)
		e.held.Add(-1)
	}
	e.dropRollup(rc)
	delete(e.byPID, rc.pid)
	*rc = record{fd: -1, rfd: -1}
	e.free = append(e.free, i)
}

// parallel runs f on the records idx across the workers.
func (e *Engine) parallel(idx []int32, f func(w *worker, rc *record)) {
	n := len(idx)
	if n == 0 {
		return
	}
	forEach(e.workers, n, func(w *worker, j int) {
		f(w, &e.recs[idx[j]])
		w.r.Close()
	})
}

// listPIDs sets e.pids to the processes to read: Options.PIDs, or every
// process of the tree. A real /proc lists PIDs in ascending order;
// snapshots are in that order whatever the tree (Snapshot.Procs is
// sorted by PID, and a one-shot scan finds a parent by binary search),
// and a PID named twice is one process.
func (e *Engine) listPIDs() error {
	if len(e.opt.PIDs) > 0 {
		e.pids = append(e.pids[:0], e.opt.PIDs...)
	} else {
		var err error
		e.pids, e.dirbuf, err = e.fs.PIDs(e.pids, e.dirbuf)
		if err != nil {
			return err
		}
	}
	if !slices.IsSorted(e.pids) {
		slices.Sort(e.pids)
	}
	e.pids = slices.Compact(e.pids)
	return nil
}

// tally counts a process read with state st in snap's counters, and says
// whether it is listed and, if so, why its figures are estimates
// (CauseNone when they are exact).
func tally(snap *sample.Snapshot, st state) (keep bool, cause sample.Cause) {
	switch st {
	case stGone:
		snap.Gone++
		return false, sample.CauseNone
	case stKernel:
		snap.Kernel++
		return false, sample.CauseNone
	case stBroken, stStarved:
		// A process memwho could not read for want of descriptors is
		// counted where a user sees it, never as gone: its memory is
		// missing from the totals.
		snap.Broken++
		return false, sample.CauseNone
	case stDenied:
		snap.Denied++
		return true, sample.CauseDenied
	case stMalformed:
		snap.Malformed++
		return true, sample.CauseMalformed
	}
	return true, sample.CauseNone
}
