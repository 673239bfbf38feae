// Package snapshot is the binary encoding of a sample.Snapshot, and the
// client that fetches the agent's latest snapshot over its unix socket.
//
// The format (docs/snapshot.md) is a header (magic, version, length)
// followed by tagged sections in ascending tag order: one for the
// snapshot's scalars, one per process field (a column), one string table
// shared by the name, comm, exe, script and cgroup columns. A section an
// older decoder does not know is skipped, so new fields are new sections;
// a change an older decoder must not ignore takes a new version, which it
// refuses with ErrVersion.
//
// Decode is written for hostile input (the bytes come from a socket or a
// file another user may have written): every count is bounded by the
// bytes that must carry it, so what it allocates is proportional to its
// input, which is at most MaxSize.
//
// The client side of this package uses package syscall, not net, so that
// the command a user runs stays small and quick to start; the server is
// package snapserve.
package snapshot

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

// Version is the format version Encode writes and the highest Decode
// reads.
const Version = 1

// MaxSize is the largest message Decode and Fetch accept, in bytes
// (about two million processes).
const MaxSize = 64 << 20

// MaxProcs is the most processes a snapshot may hold: the kernel's
// PID_MAX_LIMIT on 64-bit systems (2^22).
const MaxProcs = 1 << 22

// magic starts every message.
const magic = "MWSN"

// headerLen is magic, version and the uint32 length of what follows.
const headerLen = len(magic) + 1 + 4

var (
	// ErrMalformed is wrapped by every error Decode returns for bytes
	// that are not a well-formed snapshot of a version it reads.
	ErrMalformed = errors.New("malformed snapshot")
	// ErrVersion is wrapped by the error for a snapshot of a format
	// version newer than Version.
	ErrVersion = errors.New("unsupported snapshot version")
)

// Meta is what a message carries besides the Snapshot.
type Meta struct {
	// Taken is when the snapshot's figures were read, as the writer
	// states it (the agent: its walk's start or oldest figure); the zero
	// Time when not given. Only seconds and nanoseconds since the epoch
	// are kept.
	Taken time.Time
}

// Section tags. Process columns have one section each, so that a field
// added to sample.Process is a new section that older decoders skip.
const (
	tagInfo       = 1 // required: time, process count, counters, flags
	tagMeminfo    = 2 // optional: Meminfo (absent: zero)
	tagMeminfoErr = 3 // optional: MeminfoErr's message (absent: nil)
	tagTaken      = 4 // optional: Meta.Taken
	// tagKernel is optional (absent: zero), added after version 1's
	// first release: the meminfo lines of the host ledger.
	tagKernel = 5
	// tagStale is optional (absent: zero), added after version 1's
	// first release: Snapshot.Oldest and StaleBound, written only when
	// the bound is not zero.
	tagStale = 6
	// tagLedger is optional (absent: zero), added after version 1's
	// first release: more meminfo lines of the host ledger, and the
	// free pages on per-CPU lists (ledgerFigures).
	tagLedger = 7
	// tagBefore is optional (absent: Snapshot.BeforeOK false), added
	// after version 1's first release: the host's figures read before
	// the walk (Snapshot.Before, BeforeSpan).
	tagBefore = 8

	tagPID       = 16 // zigzag delta from the previous process's PID
	tagPPID      = 17 // zigzag
	tagStartTime = 18 // zigzag delta from the previous StartTime, mod 2^64
	tagUID       = 19 // uvarint
	tagName      = 20 // uvarint string index
	tagComm      = 21
	tagExe       = 22
	tagScript    = 23
	tagCgroup    = 24
	tagRAM       = 25 // a shift byte, then uvarint bytes>>shift
	tagPrivate   = 26
	tagShared    = 27
	tagSwap      = 28
	tagConns     = 29 // uvarint
	tagState     = 30 // one byte per process: flags, accuracy, cause
	// tagSystemdCgroup is optional (absent: ""), and written only when
	// some process has one: added after version 1's first release.
	tagSystemdCgroup = 31
	// The split of RAM (Process.PssAnon, PssFile, PssShmem,
	// PrivateHugetlb), encoded as tagRAM is; each optional (absent:
	// zero) and written only when some process has a non-zero value.
	tagPssAnon        = 32
	tagPssFile        = 33
	tagPssShmem       = 34
	tagPrivateHugetlb = 35
	// Process.Bound and SwapBound, encoded as tagRAM is; optional
	// (absent: zero), written only when some process has one. A process
	// with either is an estimate read page by page (CausePaced), which
	// the state byte, whose cause field an older decoder checks, holds
	// as CauseNone.
	tagBound     = 36
	tagSwapBound = 37

	tagStrings = 40 // optional: the string table (absent: only "")

	maxKnownTag = tagStrings
)

// Bits of the per-process state byte.
const (
	stUIDKnown       = 1 << 0
	stExeDeleted     = 1 << 1
	stSwapPssMissing = 1 << 2
	stAccuracyShift  = 3 // 1 bit: sample.Accuracy
	stCauseShift     = 4 // 2 bits: sample.Cause, 0..2
	stUnused         = 0xc0
)

// Bits of the info section's flags.
const (
	infoMeminfoOK = 1 << 0
	infoConnsOK   = 1 << 1
)

var tagNames = [maxKnownTag + 1]string{
	tagInfo: "info", tagMeminfo: "meminfo", tagMeminfoErr: "meminfo error", tagTaken: "taken", tagKernel: "kernel", tagStale: "stale",
	tagLedger: "ledger", tagBefore: "before",
	tagPID: "pid", tagPPID: "ppid", tagStartTime: "start time", tagUID: "uid",
	tagName: "name", tagComm: "comm", tagExe: "exe", tagScript: "script", tagCgroup: "cgroup",
	tagRAM: "ram", tagPrivate: "private", tagShared: "shared", tagSwap: "swap",
	tagConns: "conns", tagState: "state", tagSystemdCgroup: "systemd cgroup", tagStrings: "strings",
	tagPssAnon: "pss anon", tagPssFile: "pss file", tagPssShmem: "pss shmem", tagPrivateHugetlb: "private hugetlb",
	tagBound: "bound", tagSwapBound: "swap bound",
}

// strTags are the string columns of a process, in the order of the
// encoder's fields: Name, Comm, Exe, Script, Cgroup, SystemdCgroup.
var strTags = [...]int{tagName, tagComm, tagExe, tagScript, tagCgroup, tagSystemdCgroup}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// Check returns an error, wrapping ErrMalformed, for a snapshot no sampler
// writes: PIDs not ascending or not positive, a negative count, a process
// whose private and shared parts, or its split by kind of page, exceed its
// RAM, a swap bound over its swap, totals of RAM, swap or bounds past an
// int64. Decode keeps any values
// (the format is a faithful codec); a reader that shows the figures
// checks them, so that a hand-edited file cannot print "13.0 MiB + 6.3 MiB
// = 12.0 MiB" or a total of 2^64 - 1.
func Check(s *sample.Snapshot) error {
	for i, n := range [...]int{s.Gone, s.Denied, s.Kernel, s.Broken, s.Malformed} {
		if n < 0 {
			return malformed("info: %d %s processes", n, [...]string{"gone", "denied", "kernel", "broken", "malformed"}[i])
		}
	}
	var total, swap, bound, swapBound uint64
	for i := range s.Procs {
		p := &s.Procs[i]
		if p.PID <= 0 || i > 0 && p.PID <= s.Procs[i-1].PID {
			return malformed("pid %d after %d: PIDs ascend from 1", p.PID, prevPID(s, i))
		}
		if p.PPID < 0 {
			return malformed("pid %d: parent %d", p.PID, p.PPID)
		}
		// The samplers write Private + Shared = RAM, and a split of
		// RAM (Pss_Anon, Pss_File, Pss_Shmem, Private_Hugetlb) that
		// sums to it at most; each part alone under RAM would still
		// print "10.0 MiB + 10.0 MiB = 10.0 MiB".
		if p.Private > p.RAM || p.Shared > p.RAM-p.Private {
			return malformed("pid %d: private %d and shared %d bytes over its RAM of %d", p.PID, p.Private, p.Shared, p.RAM)
		}
		if p.PrivateHugetlb > p.Private || !sumAtMost(p.RAM, p.PssAnon, p.PssFile, p.PssShmem, p.PrivateHugetlb) {
			return malformed("pid %d: anon %d, file %d, shmem %d and huge pages %d bytes over its RAM of %d",
				p.PID, p.PssAnon, p.PssFile, p.PssShmem, p.PrivateHugetlb, p.RAM)
		}
		// Totals stay within an int64, so that every difference of two
		// (diff's changes, the ledger's lines) is one: a RAM of 2^63 + 5
		// would show as a negative change, a swap of 2^64 - 1 sum with 2
		// into 1 B. Groups sum parts of these.
		if !sumAtMost(math.MaxInt64, total, p.RAM) {
			return malformed("pid %d: RAM of the processes over 2^63 bytes", p.PID)
		}
		if !sumAtMost(math.MaxInt64, swap, p.Swap) {
			return malformed("pid %d: swap of the processes over 2^63 bytes", p.PID)
		}
		// The bounds of processes read page by page (sections 36
		// and 37) are summed by the report's note: 2^64 - 1 and 2
		// said "RAM within 1 B". A paced read counts every swapped
		// page in full, so its swap bound is at most its swap.
		if p.SwapBound > p.Swap {
			return malformed("pid %d: swap bound %d over its swap of %d", p.PID, p.SwapBound, p.Swap)
		}
		if !sumAtMost(math.MaxInt64, bound, p.Bound) || !sumAtMost(math.MaxInt64, swapBound, p.SwapBound) {
			return malformed("pid %d: bounds of the processes over 2^63 bytes", p.PID)
		}
		total += p.RAM
		swap += p.Swap
		bound += p.Bound
		swapBound += p.SwapBound
	}
	return nil
}

// sumAtMost reports whether the sum of vs is at most limit, without
// wrapping.
func sumAtMost(limit uint64, vs ...uint64) bool {
	for _, v := range vs {
		if v > limit {
			return false
		}
		limit -= v
	}
	return true
}

func prevPID(s *sample.Snapshot, i int) int {
	if i == 0 {
		return 0
	}
	return s.Procs[i-1].PID
}
