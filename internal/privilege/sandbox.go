package privilege

import (
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"

	"github.com/memwho/memwho/internal/proc"
)

// Sandbox confines the rest of the process with Landlock (on every
// thread): it may then read only the directories in roDirs (the procfs
// tree to scan) and a few system files (user and group names, time
// zones), write nothing through new opens (files opened before stay
// usable), and make no TCP or UDP connection. On kernels without
// Landlock, or with an older ABI, it restricts what the kernel supports
// and succeeds (best effort).
//
// A Landlock domain also restricts ptrace-style access to processes
// outside it (security/landlock/task.c); whether reads of another
// process's smaps_rollup are affected depends on the kernel, so callers
// should probe one (see [ReadableRollup]) and warn if it fails. Measured
// on Linux 6.18 (docs/safe.md): a sandboxed root still reads them; a
// sandboxed process holding only CAP_SYS_PTRACE gets EACCES.
func Sandbox(roDirs ...string) error {
	rules := []landlock.Rule{
		landlock.RODirs(roDirs...),
		landlock.ROFiles("/etc/passwd", "/etc/group", "/etc/localtime").IgnoreIfMissing(),
		landlock.RODirs("/usr/share/zoneinfo").IgnoreIfMissing(),
	}
	if err := landlock.V11.BestEffort().Restrict(rules...); err != nil {
		return fmt.Errorf("landlock sandbox: %w", err)
	}
	return nil
}

// CanReadRollup reports whether the process can read the smaps_rollup of
// process pid in the tree fs (opening it is not enough: the kernel
// checks access on read).
func CanReadRollup(fs *proc.FS, pid int) bool {
	r := fs.NewReader()
	defer r.Close()
	r.Select(pid)
	var ru proc.Rollup
	return r.SmapsRollup(&ru) == nil
}

// ReadableRollup returns the lowest PID in fs, other than the calling
// process, whose smaps_rollup the process can read now, or 0 if none
// among the first few hundred is. It picks the process to probe with
// [CanReadRollup] after [Sandbox].
func ReadableRollup(fs *proc.FS) int {
	pids, _, err := fs.PIDs(nil, nil)
	if err != nil {
		return 0
	}
	self := os.Getpid()
	for i, pid := range pids {
		if i >= 512 {
			break
		}
		if pid != self && CanReadRollup(fs, pid) {
			return pid
		}
	}
	return 0
}
