package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/memwho/memwho/internal/privilege"
	"kernel.org/pub/linux/libs/security/libcap/cap"
)

// scanCaps maps the subcommands that read other users' processes to the
// capabilities they keep when memwho is installed with file capabilities
// or setuid root (docs/safe.md). Every other command (help, version,
// export, ...) starts with all of them dropped, and so does any command
// added later until it is listed here: a new scanning subcommand that is
// missing from this table shows RSS estimates for other users' processes,
// never more than it should.
var scanCaps = map[string][]cap.Value{
	"report": privilege.ScanCaps,
	"serve":  privilege.FDWalkCaps,
	"watch":  privilege.FDWalkCaps,
	// record walks no /proc/PID/fd, and the SQLite file and spool it
	// opens by path must be checked as the user: CAP_DAC_READ_SEARCH
	// would let it read a database only root may read.
	"record": privilege.ScanCaps,
}

// pathFlags lists, for the scanning subcommands that open a path flag's
// value themselves (report goes through openProcRoot instead), the value
// that is safe to read with privilege. A command line that sets one to
// anything else keeps no capability: a directory the user controls could
// hold symlinks to files only root may read, and with the user's own
// rights that reads exactly what the user could read anyway. The check
// errs on the safe side: any argument spelled like the flag counts.
var pathFlags = map[string]map[string]string{
	"watch":  {"proc": "/proc"},
	"serve":  {"proc": "/proc"},
	"record": {"proc": "/proc", "cgroup-root": "/sys/fs/cgroup"},
}

// capsFor picks the capabilities for a command line the way run picks
// the subcommand: no argument or a flag first means report.
func capsFor(args []string) []cap.Value {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == "report" {
		// The TCP column walks /proc/PID/fd, which needs both
		// capabilities; the report drops them all after its scan.
		if slices.ContainsFunc(args, func(a string) bool { return a == "--conns" || a == "-conns" }) {
			return privilege.FDWalkCaps
		}
		return scanCaps["report"]
	}
	if c, ok := scanCaps[args[0]]; ok {
		if !safePaths(pathFlags[args[0]], args[1:]) {
			return nil
		}
		return c
	}
	if _, ok := commands[args[0]]; ok {
		return nil
	}
	// An unknown word is a report usage error ("unexpected argument"),
	// or a subcommand whose init has not run yet: keep nothing.
	return nil
}

// safePaths reports whether every flag of args named in safe is absent or
// has its safe value.
func safePaths(safe map[string]string, args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, ok := strings.CutPrefix(a, "-")
		if !ok {
			continue
		}
		name = strings.TrimPrefix(name, "-")
		name, val, hasVal := strings.Cut(name, "=")
		want, listed := safe[name]
		if !listed {
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return false
			}
			i++
			val = args[i]
		}
		if val != want {
			return false
		}
	}
	return true
}

// init runs before main, flags and files: a setuid-root install becomes
// the real user here, and every capability the command does not need is
// gone before any user input is looked at.
func init() {
	if _, err := privilege.Setup(capsFor(os.Args[1:])...); err != nil {
		fmt.Fprintf(os.Stderr, "memwho: error: %s\n", sanitizeMessage(err.Error()))
		os.Exit(exitFailure)
	}
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

// openProcRoot opens --proc DIR with the user's identity (see
// privilege.OpenProcRoot): a directory the user cannot open is a usage
// error, as it would be without privilege.
func openProcRoot(dir string) (*privilege.ProcRoot, error) {
	r, err := privilege.OpenProcRoot(dir)
	if err != nil {
		return nil, usagef("--proc: %v", unwrapPath(err))
	}
	return r, nil
}

// prepareScan readies an elevated process for the scan of r: if r may not
// be scanned with privilege (not a procfs, or hidepid hides processes from
// the user) every capability is dropped first; with sandbox, Landlock
// confines the rest of the run, and a warning says if that costs the
// exact figures.
func prepareScan(r *privilege.ProcRoot, sandbox bool, stderr io.Writer) error {
	if !r.Privileged {
		if err := dropPrivileges(); err != nil {
			return err
		}
	}
	if !sandbox {
		return nil
	}
	// A process readable before and not after: the sandbox is what
	// stopped it.
	probe := privilege.ReadableRollup(r.Path)
	if err := privilege.Sandbox(r.Path); err != nil {
		return err
	}
	if probe != 0 && !privilege.CanReadRollup(r.Path, probe) {
		fmt.Fprintln(stderr, "memwho: warning: the --sandbox blocks reading other processes' smaps_rollup on this kernel; their figures are estimates")
	}
	return nil
}
