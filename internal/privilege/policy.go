package privilege

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"kernel.org/pub/linux/libs/security/libcap/cap"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/proc"
)

// MustSetup is Setup for a command's init: it runs before main, flags and
// files, and exits 1 with one error line when the process cannot be made
// safe.
func MustSetup() {
	if _, err := Setup(); err != nil {
		fmt.Fprintf(os.Stderr, "memwho: error: %s\n", cli.OneLine(err.Error()))
		os.Exit(cli.ExitFailure)
	}
}

// ScanPolicy is the privilege policy, decided once per run on the parsed
// configuration of the scanning command cmd (docs/safe.md): the
// capabilities the scan keeps when memwho is elevated.
//
//   - the reader (memwho's process that walks /proc for report, watch,
//     snapshot and diff in the privileged install, and only reads and
//     writes snapshots to its pipe): CAP_SYS_PTRACE and
//     CAP_DAC_READ_SEARCH (pagemap, and with --conns the /proc/PID/fd
//     walk);
//   - report and watch the same when they walk /proc themselves, where
//     the privilege is not [Separated] (root, a unit's ambient
//     capabilities), and nothing where it is: there the reader walks;
//   - serve and record keep what the admin granted them as ambient
//     capabilities (a systemd unit), and nothing when they were started
//     from a file-capability or setuid binary (the exec gained
//     privilege: AT_SECURE). The agent would otherwise publish exact
//     figures to whoever can reach its socket, and record would open
//     databases and spools while privileged;
//   - every other command keeps nothing.
func ScanPolicy(cmd string, conns bool) []cap.Value {
	switch cmd {
	case "serve", "record":
		if SecureExec() {
			return nil
		}
		if cmd == "record" {
			return ScanCaps
		}
	case "report", "watch":
		if Separated() {
			return nil
		}
	case "reader":
	default:
		return nil
	}
	if conns {
		return FDWalkCaps
	}
	return ScanCaps
}

// EnterScan opens the procfs tree dir with the user's own rights (no
// capability is effective yet) and then keeps the capabilities the policy
// grants the command, or none:
//
//   - a --proc other than the kernel's /proc keeps none, decided on the
//     flag's value before anything is opened;
//   - a tree that is not the root of a real procfs, or whose mount hides
//     processes from the user (hidepid=), keeps none (Scannable).
//
// This is the only way a command raises a capability. The caller closes
// the tree. A notice for the user is written to stderr only once the
// capabilities are settled: a write to stderr can block for as long as
// the user lets the pipe stay full.
func EnterScan(cmd, dir string, conns bool, stderr io.Writer) (*proc.FS, error) {
	keep := ScanPolicy(cmd, conns)
	if dir != proc.DefaultRoot {
		keep = nil
	}
	if len(keep) == 0 {
		// Nothing is kept: give it up before the user's path is opened.
		if err := Drop(); err != nil {
			return nil, err
		}
	}
	fs, err := proc.Open(dir)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) && proc.Exhausted(errno) {
			// Not the user's path: memwho ran out of descriptors or
			// memory. A failure, not a usage error with a hint to
			// read --help.
			return nil, fmt.Errorf("--proc: %v", UnwrapPath(err))
		}
		return nil, cli.Usagef("--proc: %v", UnwrapPath(err))
	}
	notice := ""
	if len(keep) > 0 && Elevated() {
		if ok, why := Scannable(fs); !ok {
			notice, keep = why, nil
		}
	}
	if err := Enter(keep...); err != nil {
		fs.Close()
		return nil, fmt.Errorf("privileges: %w", err)
	}
	if notice != "" {
		fmt.Fprintf(stderr, "memwho: notice: %s\n", cli.OneLine(notice))
	}
	return fs, nil
}

// EnterReader is EnterScan for the reader, on the kernel's procfs root
// (the only tree it reads): the policy's capabilities, or none under a
// hidepid= mount that hides processes from the user, with the notice
// written to notice. It then sets no_new_privs: the reader never
// executes anything.
func EnterReader(conns bool, notice io.Writer) (*proc.FS, error) {
	fs, err := EnterScan("reader", proc.DefaultRoot, conns, notice)
	if err != nil {
		return nil, err
	}
	if err := NoNewPrivs(); err != nil {
		fs.Close()
		return nil, err
	}
	return fs, nil
}

// Drop clears every capability from every thread (DropAll), with an
// error that says what failed. It does nothing when memwho runs without
// extra privilege.
func Drop() error {
	if err := DropAll(); err != nil {
		return fmt.Errorf("drop privileges: %w", err)
	}
	return nil
}

// SandboxScan confines the rest of the run with Landlock (--sandbox), and
// returns a warning if that costs the exact figures on this kernel. The
// caller prints it once the capabilities are dropped: it is called while
// they are effective, and a write to stderr can block.
func SandboxScan(fs *proc.FS) (warning string, err error) {
	// A process readable before and not after: the sandbox is what
	// stopped it.
	probe := ReadableRollup(fs)
	if err := Sandbox(fs.Root()); err != nil {
		return "", err
	}
	if probe != 0 && !CanReadRollup(fs, probe) {
		return "memwho: warning: the --sandbox blocks reading other processes' smaps_rollup on this kernel; their figures are estimates", nil
	}
	return "", nil
}

// OpenInput opens a file the user asked memwho to read, with the user's
// identity (OpenFile): nothing the user could not read.
func OpenInput(path string) (*os.File, error) {
	return OpenFile(path, os.O_RDONLY, 0)
}

// UnwrapPath shortens an *os.PathError to "path: reason" (without the
// operation), the form memwho's errors quote paths in.
func UnwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}

// Exit ends a command: a command that failed while holding capabilities
// (between EnterScan and its drop) gives them up before its error is
// written, since a write to stderr can block; then cli.Exit prints the
// error and maps it to the exit code.
func Exit(err error, stderr io.Writer) int {
	if err != nil {
		if derr := Drop(); derr != nil {
			err = errors.Join(err, derr)
		}
	}
	return cli.Exit(err, stderr)
}
