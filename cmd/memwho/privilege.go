package main

import (
	"fmt"
	"io"
	"os"

	"kernel.org/pub/linux/libs/security/libcap/cap"

	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/proc"
)

// init runs before main, flags and files: a setuid-root install becomes
// the real user here, and no capability is effective until a command has
// parsed its configuration and decided what it keeps (enterScan). It
// looks at no argument and no variable but the kernel's AT_SECURE flag.
func init() {
	if _, err := privilege.Setup(); err != nil {
		fmt.Fprintf(os.Stderr, "memwho: error: %s\n", sanitizeMessage(err.Error()))
		os.Exit(exitFailure)
	}
}

// scanPolicy is the privilege policy, decided once per run on the parsed
// configuration of the scanning command cmd (docs/safe.md): the
// capabilities the scan keeps when memwho is elevated.
//
//   - report and watch read /proc and print: CAP_SYS_PTRACE, and
//     CAP_DAC_READ_SEARCH as well for --conns (the /proc/PID/fd walk);
//   - serve and record keep what the admin granted them as ambient
//     capabilities (a systemd unit), and nothing when they were started
//     from the file-capability or setuid binary a user runs (the exec
//     gained privilege: AT_SECURE). The agent would otherwise publish
//     exact figures to whoever can reach its socket, and record would
//     open databases and spools while privileged;
//   - every other command keeps nothing (dispatch drops it all).
func scanPolicy(cmd string, conns bool) []cap.Value {
	switch cmd {
	case "serve", "record":
		if privilege.SecureExec() {
			return nil
		}
		if cmd == "record" {
			return privilege.ScanCaps
		}
	case "report", "watch":
	default:
		return nil
	}
	if conns {
		return privilege.FDWalkCaps
	}
	return privilege.ScanCaps
}

// enterScan opens the procfs tree dir with the user's own rights (no
// capability is effective yet) and then keeps the capabilities the policy
// grants the command, or none:
//
//   - a --proc other than the kernel's /proc keeps none, decided on the
//     flag's value before anything is opened;
//   - a tree that is not the root of a real procfs, or whose mount hides
//     processes from the user (hidepid=), keeps none (privilege.Scannable).
//
// This is the only way a command raises a capability. The caller closes
// the tree.
func enterScan(cmd, dir string, conns bool, stderr io.Writer) (*proc.FS, error) {
	keep := scanPolicy(cmd, conns)
	if dir != proc.DefaultRoot {
		keep = nil
	}
	if len(keep) == 0 {
		// Nothing is kept: give it up before the user's path is opened.
		if err := dropPrivileges(); err != nil {
			return nil, err
		}
	}
	fs, err := proc.Open(dir)
	if err != nil {
		return nil, usagef("--proc: %v", unwrapPath(err))
	}
	notice := ""
	if len(keep) > 0 && privilege.Elevated() {
		if ok, why := privilege.Scannable(fs); !ok {
			notice, keep = why, nil
		}
	}
	if err := privilege.Enter(keep...); err != nil {
		fs.Close()
		return nil, fmt.Errorf("privileges: %w", err)
	}
	// Only now, with the capabilities gone: a write to stderr can block
	// for as long as the user lets the pipe stay full.
	if notice != "" {
		fmt.Fprintf(stderr, "memwho: notice: %s\n", sanitizeMessage(notice))
	}
	return fs, nil
}

// dropPrivileges clears every capability from every thread; the report
// calls it as soon as the scan is done, before any output is written. It
// does nothing when memwho runs without extra privilege.
func dropPrivileges() error {
	if err := privilege.DropAll(); err != nil {
		return fmt.Errorf("drop privileges: %w", err)
	}
	return nil
}

// sandboxScan confines the rest of the run with Landlock (--sandbox), and
// returns a warning if that costs the exact figures on this kernel. The
// caller prints it once the capabilities are dropped: it is called while
// they are effective, and a write to stderr can block.
func sandboxScan(fs *proc.FS) (warning string, err error) {
	// A process readable before and not after: the sandbox is what
	// stopped it.
	probe := privilege.ReadableRollup(fs)
	if err := privilege.Sandbox(fs.Root()); err != nil {
		return "", err
	}
	if probe != 0 && !privilege.CanReadRollup(fs, probe) {
		return "memwho: warning: the --sandbox blocks reading other processes' smaps_rollup on this kernel; their figures are estimates", nil
	}
	return "", nil
}
