package privilege

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/landlock-lsm/go-landlock/landlock"
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
// process pid under the procfs tree root (opening it is not enough: the
// kernel checks access on read).
func CanReadRollup(root string, pid int) bool {
	f, err := os.Open(filepath.Join(root, strconv.Itoa(pid), "smaps_rollup"))
	if err != nil {
		return false
	}
	defer f.Close()
	var b [256]byte
	n, err := f.Read(b[:])
	return err == nil && n > 0
}

// ReadableRollup returns the lowest PID under root, other than the
// calling process, whose smaps_rollup the process can read now, or 0 if
// none among the first few hundred entries is. It picks the process to
// probe with [CanReadRollup] after [Sandbox].
func ReadableRollup(root string) int {
	d, err := os.Open(root)
	if err != nil {
		return 0
	}
	defer d.Close()
	names, _ := d.Readdirnames(512)
	self := os.Getpid()
	best := 0
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == self || (best != 0 && pid >= best) {
			continue
		}
		if CanReadRollup(root, pid) {
			best = pid
		}
	}
	return best
}
