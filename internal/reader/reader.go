// Package reader is the process that holds memwho's capabilities in the
// privileged install, and the client its parent talks to it with.
//
// Where memwho's privilege comes with its exec (file capabilities or
// setuid: privilege.Separated), the process the user talks to gives up
// every capability at its dispatch, and a scan of /proc is done by a
// reader: memwho's own binary (/proc/self/exe), started by memwho with
// an empty environment, a fixed argv (argv[0], the command word and its
// parent's pid), its options as flags that memwho wrote from its parsed
// configuration on a pipe to its standard input, standard error on
// /dev/null and standard output on a pipe. The reader
//
//   - refuses to start with any environment variable (so the Go runtime's
//     own copy, which GOROOT and GODEBUG reach, is empty), closes every
//     descriptor it inherited but its three standard ones (and fails when
//     it cannot list them), and works from "/";
//   - asks the kernel to kill it when its parent ends (PR_SET_PDEATHSIG,
//     then checks that its parent is still the process its options name:
//     one that died before the request was made would never signal);
//     SIGTERM, SIGINT and SIGHUP end it by their default action;
//   - takes its options once, before it raises anything: its parent's pid
//     from argv, the rest from its standard input, read to its end and
//     closed (memwho starts the reader at its dispatch and writes them
//     once it has parsed its flags, so that the exec and the Go runtime's
//     start-up run meanwhile); it reads nothing else but the kernel's /proc (privilege.EnterReader: the procfs root, checked, and
//     the capabilities the policy grants, none under a hidepid= mount that
//     hides processes from the user);
//   - walks it with the engine (engine.Engine, the same sampler an
//     unprivileged run uses in-process), once (Options.Once: report,
//     snapshot, diff) or every Options.Interval (watch), and writes each
//     snapshot, in the agent's encoding (package snapshot), as one frame
//     to the pipe, until the pipe is closed or it is killed.
//
// Anybody may start a reader by hand, with any argv, descriptors and
// limits: it then does exactly that, for exactly the figures memwho would
// show them, and nothing else. Its frames are decoded by Client as
// hostile input all the same.
//
// A frame is a kind byte, a big-endian uint32 length and that many bytes:
//
//	'R' ready: the reader has settled its capabilities; empty
//	'N' a note for the user's standard error (a notice or warning line)
//	'S' a snapshot: the scan's start (CLOCK_MONOTONIC nanoseconds, an
//	    int64, big endian),
//	    the figures held back by the engine's cost budget (a uvarint count,
//	    then per process its index and the Unix nanoseconds its figures
//	    were read at, uvarint and varint), then one snapshot message
//	'E' the reader's error, its last frame
package reader

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
)

// Command is the word that makes memwho a reader (its dispatch's); it
// follows argv[0], which is always Argv0.
const Command = "__reader"

// Argv0 is the reader's argv[0], whatever the user called memwho.
const Argv0 = "memwho"

// Options are everything a reader does, fixed when it starts.
type Options struct {
	// Parent is the process that started the reader: it ends with it.
	Parent int
	// Once walks /proc once and ends (a report); otherwise the reader
	// walks every Interval until it is stopped (watch).
	Once     bool
	Interval time.Duration
	// What the engine reads (engine.Options): Fast, NeedUID, NeedCgroup,
	// NoNames, PIDs; Conns counts TCP connections (and keeps
	// CAP_DAC_READ_SEARCH for the /proc/PID/fd walk).
	Fast, UID, Cgroup, NoNames, Conns bool
	PIDs                              []int
	// Sandbox confines the reader with Landlock once /proc is open
	// (report --sandbox).
	Sandbox bool
}

// MinInterval is the shortest Interval a reader takes: a shorter one
// (watch -n 0.001) is a walk as often as the machine can.
const MinInterval = time.Millisecond

// Args returns the reader's options as arguments: Command and --parent
// (its argv after Argv0), then the flags it reads from its standard
// input, one a line (Flags).
func (o *Options) Args() []string {
	return append([]string{Command, "--parent=" + strconv.Itoa(o.Parent)}, o.Flags()...)
}

// Flags returns the options but Parent as flags.
func (o *Options) Flags() []string {
	var args []string
	if o.Once {
		args = append(args, "--once")
	} else {
		args = append(args, "--interval="+o.Interval.String())
	}
	for _, b := range []struct {
		on   bool
		name string
	}{{o.Fast, "fast"}, {o.UID, "uid"}, {o.Cgroup, "cgroup"}, {o.NoNames, "no-names"}, {o.Conns, "conns"}, {o.Sandbox, "sandbox"}} {
		if b.on {
			args = append(args, "--"+b.name)
		}
	}
	if len(o.PIDs) > 0 {
		ps := make([]string, len(o.PIDs))
		for i, p := range o.PIDs {
			ps[i] = strconv.Itoa(p)
		}
		args = append(args, "--pids="+strings.Join(ps, ","))
	}
	return args
}

// Parse reads the options Args wrote (the arguments after Command). It
// refuses anything else: the reader is memwho's own, but anybody can
// start it, and give it any input.
func Parse(args []string) (Options, error) {
	var o Options
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&o.Parent, "parent", 0, "")
	fs.BoolVar(&o.Once, "once", false, "")
	fs.DurationVar(&o.Interval, "interval", 0, "")
	fs.BoolVar(&o.Fast, "fast", false, "")
	fs.BoolVar(&o.UID, "uid", false, "")
	fs.BoolVar(&o.Cgroup, "cgroup", false, "")
	fs.BoolVar(&o.NoNames, "no-names", false, "")
	fs.BoolVar(&o.Conns, "conns", false, "")
	fs.BoolVar(&o.Sandbox, "sandbox", false, "")
	pids := fs.String("pids", "", "")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.Parent <= 0 {
		return o, errors.New("--parent: the pid of the process that started the reader")
	}
	if o.Once == (o.Interval != 0) {
		return o, errors.New("one of --once and --interval")
	}
	if !o.Once && o.Interval < MinInterval {
		return o, fmt.Errorf("--interval: at least %v", MinInterval)
	}
	if *pids != "" {
		for f := range strings.SplitSeq(*pids, ",") {
			p, err := strconv.Atoi(f)
			if err != nil || p <= 0 || p > snapshot.MaxProcs {
				return o, fmt.Errorf("--pids: %q is not a process id", f)
			}
			o.PIDs = append(o.PIDs, p)
		}
	}
	return o, nil
}

// Frame kinds.
const (
	frameReady    = 'R'
	frameNote     = 'N'
	frameSnapshot = 'S'
	frameError    = 'E'
)

// frameHeader is a frame's kind byte and length.
const frameHeader = 5

// Limits of what a frame may hold, in bytes: a note or an error is a
// line; a snapshot message is at most snapshot.MaxSize, and its start and
// held-back read times (at most 20 bytes a process, far fewer than its
// columns take) fit in as much again.
const (
	maxText  = 4 << 10
	maxFrame = 2 * snapshot.MaxSize
)

// appendFrame appends a frame of kind k holding payload p.
func appendFrame(dst []byte, k byte, p []byte) []byte {
	dst = append(dst, k)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(p)))
	return append(dst, p...)
}

// Deferred is a process whose figures the engine held back (its cost
// budget postponed the walk): they were read at At, earlier than the
// snapshot's time.
type Deferred struct {
	Index int // in Snapshot.Procs
	At    time.Time
}

// appendSnapshot appends an 'S' frame of snap, whose scan started at
// stamp (CLOCK_MONOTONIC nanoseconds), with the held-back read times
// deferred.
func appendSnapshot(dst []byte, stamp int64, deferred []Deferred, snap *sample.Snapshot) []byte {
	at := len(dst)
	dst = append(dst, frameSnapshot, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint64(dst, uint64(stamp))
	dst = binary.AppendUvarint(dst, uint64(len(deferred)))
	for _, d := range deferred {
		dst = binary.AppendUvarint(dst, uint64(d.Index))
		dst = binary.AppendVarint(dst, d.At.UnixNano())
	}
	dst = snapshot.Encode(dst, snap)
	binary.BigEndian.PutUint32(dst[at+1:], uint32(len(dst)-at-frameHeader))
	return dst
}

// frameStamp returns the scan start of an 'S' frame's payload.
func frameStamp(p []byte) (int64, bool) {
	if len(p) < 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(p)), true
}

// parseSnapshot decodes an 'S' frame's payload into snap and deferred.
func parseSnapshot(p []byte, snap *sample.Snapshot, deferred []Deferred) ([]Deferred, error) {
	deferred = deferred[:0]
	if len(p) < 8 {
		return deferred, errors.New("snapshot frame cut short")
	}
	p = p[8:]
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)) {
		return deferred, errors.New("snapshot frame: bad count of held-back figures")
	}
	p = p[k:]
	for range n {
		i, k := binary.Uvarint(p)
		if k <= 0 {
			return deferred, errors.New("snapshot frame: bad held-back figure")
		}
		p = p[k:]
		ns, k := binary.Varint(p)
		if k <= 0 {
			return deferred, errors.New("snapshot frame: bad held-back figure")
		}
		p = p[k:]
		deferred = append(deferred, Deferred{Index: int(min(i, uint64(snapshot.MaxProcs))), At: time.Unix(0, ns)})
	}
	if err := snapshot.Decode(p, snap); err != nil {
		return deferred, err
	}
	if err := snapshot.Check(snap); err != nil {
		return deferred, err
	}
	for _, d := range deferred {
		if d.Index >= len(snap.Procs) {
			return deferred, fmt.Errorf("snapshot frame: held-back figure of process %d of %d", d.Index, len(snap.Procs))
		}
	}
	return deferred, nil
}
