package report

import (
	"fmt"
	"io"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/memwho/memwho/internal/sample"
)

// KeyHeader returns the name column's title for a grouping: the report's
// table and the live watch spell it the same way.
func KeyHeader(by sample.By) string {
	switch by {
	case sample.ByPID:
		return "Program [PID]"
	case sample.ByUser:
		return "User"
	case sample.ByCgroup:
		return "Cgroup"
	case sample.ByUnit:
		return "Unit"
	case sample.BySlice:
		return "Slice"
	case sample.ByContainer:
		return "Container"
	}
	return "Program"
}

// UseColor reports whether output to w may be coloured: only a terminal,
// and neither NO_COLOR (https://no-color.org) nor TERM=dumb.
func UseColor(w io.Writer) bool {
	if v, ok := os.LookupEnv("NO_COLOR"); ok && v != "" {
		return false
	}
	if os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// IsTerminal reports whether w is a terminal (it answers the terminal
// ioctl): where the live view runs, and where compressed bytes must not
// go.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Scanner is who walked /proc for the figures shown.
type Scanner uint8

const (
	// ScannerSelf is this run without CAP_SYS_PTRACE (root's effective
	// uid aside): the hint suggests root or the capability.
	ScannerSelf Scanner = iota
	// ScannerPrivileged is this run with the capability (the
	// privileged install), or the agent (root) whose snapshot was
	// fetched: a refused walk crossed a boundary no capability crosses
	// (another user namespace, a security module).
	ScannerPrivileged
	// ScannerFile is whoever took a snapshot file (--from).
	ScannerFile
)

// Warn writes to stderr, once each, what made the figures shown less
// than exact. It counts the processes of the groups shown (after -p, -u,
// --filter and --top), not every process scanned: a warning about rows
// the user filtered away would only confuse. procs are the processes
// that passed -p and -u, groups the rows; nil groups means every one of
// procs is shown. by says who scanned: the hint after refused walks
// depends on it.
func Warn(stderr io.Writer, snap *sample.Snapshot, procs []sample.Process, groups []sample.Group, fast bool, by Scanner) {
	// The PIDs shown, sorted: a slice sized once rather than a map (a
	// report's memory is everything it ever allocated).
	var shown []int
	if groups == nil {
		shown = make([]int, len(procs))
		for i := range procs {
			shown[i] = procs[i].PID
		}
	} else {
		n := 0
		for i := range groups {
			n += len(groups[i].PIDs)
		}
		shown = make([]int, 0, n)
		for i := range groups {
			shown = append(shown, groups[i].PIDs...)
		}
	}
	slices.Sort(shown)
	shown = slices.Compact(shown)
	var denied, malformed, paced int
	var bound, swapBound uint64
	for i := range procs {
		if _, ok := slices.BinarySearch(shown, procs[i].PID); !ok {
			continue
		}
		switch procs[i].Cause {
		case sample.CauseDenied:
			denied++
		case sample.CauseMalformed:
			malformed++
		case sample.CausePaced:
			paced++
			bound += procs[i].Bound
			swapBound += procs[i].SwapBound
		}
	}
	if denied > 0 && !fast {
		fmt.Fprintf(stderr, "memwho: warning: %d of %d processes are RSS-based estimates (permission denied for smaps_rollup)\n",
			denied, len(shown))
		switch {
		case by == ScannerFile:
			// Whoever took the snapshot was refused: who reads the
			// file changes nothing (not "even root may not" to root,
			// nor "run as root" to a user).
			fmt.Fprintln(stderr, "memwho: hint: the snapshot file's figures: whoever took it could not walk these processes; take it as root, or with memwho's privileged install, for exact figures")
		case os.Geteuid() == 0:
			// Root is refused only across a boundary: a process in
			// another user namespace, or one a security module guards.
			fmt.Fprintln(stderr, "memwho: hint: even root may not walk these processes (another user namespace or a security module); their figures stay estimates")
		case by == ScannerPrivileged:
			// The privileged install is refused only there too.
			fmt.Fprintln(stderr, "memwho: hint: even with CAP_SYS_PTRACE memwho may not walk these processes (another user namespace or a security module); their figures stay estimates")
		default:
			fmt.Fprintln(stderr, "memwho: hint: run as root, or install memwho with CAP_SYS_PTRACE (see README: Running as a non-root user)")
		}
	}
	if malformed > 0 {
		fmt.Fprintf(stderr, "memwho: warning: %d %s an unreadable smaps_rollup; the figures are RSS-based estimates\n", malformed, plural(malformed, "process had", "processes had"))
	}
	if paced > 0 {
		// Their private memory is exact; only shares of shared pages
		// (and of swap) are estimated.
		fmt.Fprintf(stderr, "memwho: note: %d %s read page by page so as not to stall %s; the shares of pages %s with others are estimated: RAM within %s, swap within %s\n",
			paced, plural(paced, "large process was", "large processes were"), plural(paced, "it", "them"), plural(paced, "it shares", "they share"),
			HumanBytes(nil, bound), HumanBytes(nil, swapBound))
		if by == ScannerSelf && os.Geteuid() != 0 {
			fmt.Fprintln(stderr, "memwho: hint: as root memwho looks shared pages up (/proc/kpagecount) and these figures are exact")
		}
	}
	if snap.Broken > 0 {
		fmt.Fprintf(stderr, "memwho: warning: %d %s skipped: their stat or status could not be read or parsed\n", snap.Broken, plural(snap.Broken, "process", "processes"))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
