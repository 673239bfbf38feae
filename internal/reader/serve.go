package reader

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
)

// Main is the reader: memwho's dispatch calls it for Command with the
// arguments after it (--parent), and it reads its other options from
// standard input, once, to its end (Prestart, Begin). It writes its
// frames to standard output and returns the exit code: 0 when its parent
// closed the pipe, gave it no options or it was done, 1 after an error
// frame.
func Main(args []string) int {
	out := os.Stdout
	if err := serve(args, out); err != nil {
		msg := []byte(err.Error())
		if len(msg) > maxText {
			msg = msg[:maxText]
		}
		out.Write(appendFrame(nil, frameError, msg))
		return 1
	}
	return 0
}

// serve runs the reader until it is done, its parent goes or its pipe
// closes (nil), or fails.
func serve(args []string, out *os.File) error {
	parent, err := parseParent(args)
	if err != nil {
		return fmt.Errorf("reader: %w", err)
	}
	if err := privilege.RequireEmptyEnv(); err != nil {
		return fmt.Errorf("reader: %w", err)
	}
	// Not the user's to inspect, whatever its exec was: the kernel makes
	// a process non-dumpable only when its exec grew its capabilities,
	// and a reader forked before memwho gave up its own did not
	// (/proc/PID/fd listed by the user, a core dump written as the user).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("reader: %w", err)
	}
	if err := withParent(parent); err != nil {
		return err
	}
	if err := closeInherited(); err != nil {
		return fmt.Errorf("reader: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return fmt.Errorf("reader: %w", err)
	}
	// The options, once: standard input to its end, then closed. No
	// capability is effective yet.
	in, err := io.ReadAll(io.LimitReader(os.Stdin, maxOptions+1))
	os.Stdin.Close()
	if err != nil {
		return fmt.Errorf("reader: its options: %w", err)
	}
	if len(in) == 0 {
		return nil // not needed after all
	}
	if len(in) > maxOptions {
		return fmt.Errorf("reader: options of more than %d bytes", maxOptions)
	}
	opt, err := Parse(append([]string{"--parent=" + strconv.Itoa(parent)}, strings.FieldsFunc(string(in), func(r rune) bool { return r == '\n' })...))
	if err != nil {
		return fmt.Errorf("reader: %w", err)
	}
	var notes bytes.Buffer
	fs, err := privilege.EnterReader(opt.Conns, &notes)
	if err != nil {
		return err
	}
	defer fs.Close()
	// The capability change may have reset the parent-death signal
	// (the kernel clears it when credentials grow): ask again.
	if err := withParent(parent); err != nil {
		return err
	}
	if opt.Sandbox {
		w, err := privilege.SandboxScan(fs)
		if err != nil {
			return err
		}
		if w != "" {
			notes.WriteString(w + "\n")
		}
	}
	eng, err := engine.New(engine.Options{
		FS:         fs,
		OneShot:    opt.Once,
		Fast:       opt.Fast,
		NeedUID:    opt.UID,
		NeedCgroup: opt.Cgroup,
		NoNames:    opt.NoNames,
		PIDs:       opt.PIDs,
		// Frame numbers are root's alone (the kernel hides them
		// from this install); the reader never reads one.
		NoFrameLookups: privilege.Elevated(),
		// A report counts the connections after its one walk.
		Conns: opt.Conns && !opt.Once,
	})
	if err != nil {
		return err
	}
	defer eng.Close()

	// Ready, at once: memwho prints the notes (a hidepid= notice) and
	// goes on while the first walk runs.
	buf := appendFrame(nil, frameReady, nil)
	buf = appendNotes(buf, notes.Bytes())
	if _, err := out.Write(buf); err != nil {
		return nil
	}
	buf = buf[:0]
	var (
		snap     sample.Snapshot
		deferred []Deferred
		start    time.Time
	)
	for i := 0; ; i++ {
		if i > 0 {
			// The next walk starts one interval after the last one
			// started, or at once if that one overran.
			time.Sleep(time.Until(start.Add(opt.Interval)))
		}
		start = time.Now()
		stamp := monotonic()
		if err := eng.Scan(&snap); err != nil {
			return fmt.Errorf("scan: %w", err)
		}
		if opt.Once && opt.Conns {
			w := report.ConnsWarning(engine.CountConns(fs, &snap))
			if w != "" {
				buf = appendNotes(buf, []byte(w))
			}
		}
		deferred = heldBack(eng, &snap, deferred[:0])
		buf = appendSnapshot(buf, stamp, deferred, &snap)
		if _, err := out.Write(buf); err != nil {
			// The parent closed its end: it is done with us.
			return nil
		}
		buf = buf[:0]
		if opt.Once {
			return nil
		}
	}
}

// maxOptions bounds the options a reader reads, in bytes: --pids of
// every possible process, and then some.
const maxOptions = 8 << 20

// parseParent reads the reader's argv after Command: --parent=PID alone.
func parseParent(args []string) (int, error) {
	if len(args) != 1 || !strings.HasPrefix(args[0], "--parent=") {
		return 0, errors.New("usage: memwho " + Command + " --parent=PID, its options on standard input")
	}
	p, err := strconv.Atoi(strings.TrimPrefix(args[0], "--parent="))
	if err != nil || p <= 0 {
		return 0, fmt.Errorf("--parent: %q is not a process id", strings.TrimPrefix(args[0], "--parent="))
	}
	return p, nil
}

// withParent asks the kernel to kill the reader when the process that
// started it ends, and checks that it has not ended already (then the
// request came too late to be honoured, and the reader's parent is
// another process).
func withParent(parent int) error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("reader: set the parent-death signal: %w", err)
	}
	if os.Getppid() != parent {
		return errors.New("reader: the process that started it is gone")
	}
	return nil
}

// closeInherited closes every descriptor above standard error that this
// process did not open itself: those it inherited are the ones left open
// across the exec (without FD_CLOEXEC), while everything the Go runtime
// and memwho open is close-on-exec. When it cannot list them (an
// open-file limit the inherited ones fill) the reader does not go on
// holding them: it fails.
func closeInherited() error {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("cannot list the descriptors it inherited: %w", privilege.UnwrapPath(err))
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("cannot list the descriptors it inherited: %w", err)
	}
	self := int(d.Fd())
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd <= 2 || fd == self {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			unix.Close(fd)
		}
	}
	return nil
}

// appendNotes appends a note frame for each line of text.
func appendNotes(dst, text []byte) []byte {
	for line := range bytes.Lines(text) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) > 0 {
			dst = appendFrame(dst, frameNote, line[:min(len(line), maxText)])
		}
	}
	return dst
}

// heldBack lists the processes of snap whose figures the engine held
// back, with when they were read.
func heldBack(eng *engine.Engine, snap *sample.Snapshot, dst []Deferred) []Deferred {
	ds := eng.Details()
	if len(ds) != len(snap.Procs) {
		return dst
	}
	for i := range ds {
		if ds[i].Deferred && ds[i].PID == snap.Procs[i].PID && !ds[i].SampledAt.IsZero() {
			dst = append(dst, Deferred{Index: i, At: ds[i].SampledAt})
		}
	}
	return dst
}

// monotonic returns CLOCK_MONOTONIC, in nanoseconds: the system's, the
// same in the reader and its parent, and never stepped.
func monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
