package privilege

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// OpenFile is os.OpenFile for a path the user named. When the process is
// elevated, the open runs on a dedicated OS thread whose effective
// capability set is cleared and whose fsuid and fsgid are the real
// user's: the kernel then checks the path (every directory searched,
// every symlink followed, the file itself, the directory a new file is
// created in) exactly as it would for the user, with no window between a
// check and the open. A file it creates is owned by the user. When the
// process is not elevated it is os.OpenFile.
//
// Why not access(2)/faccessat(AT_EACCESS) then open: the path can change
// between the two. Why not refuse user paths outright: profiles and
// exports into the user's own directories are useful, and this is exact.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	if !Elevated() {
		return os.OpenFile(path, flag, perm)
	}
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// Never unlocked: this thread's credentials differ from the
		// rest of the process, and a goroutine that exits while locked
		// makes the runtime terminate its thread instead of reusing it.
		runtime.LockOSThread()
		if err := lowerThread(); err != nil {
			ch <- result{nil, err}
			return
		}
		f, err := os.OpenFile(path, flag, perm)
		ch <- result{f, err}
	}()
	r := <-ch
	return r.f, r.err
}

// lowerThread gives the calling thread the real user's file-system
// identity and no effective capability. The permitted set is left alone
// so that all-thread changes made concurrently through libcap (which
// must succeed identically on every thread) still do.
func lowerThread() error {
	s, err := Current()
	if err != nil {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	data[0].Effective, data[1].Effective = 0, 0
	// A raw capset changes the calling thread only, which is the point.
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("lower capabilities: %w", err)
	}
	// setfs[ug]id to the real id needs no capability. They report no
	// errors, so read the value back.
	unix.Setfsgid(s.RGID)
	unix.Setfsuid(s.RUID)
	if got, _ := unix.SetfsuidRetUid(-1); got != s.RUID {
		return fmt.Errorf("set fsuid %d: still %d", s.RUID, got)
	}
	if got, _ := unix.SetfsgidRetGid(-1); got != s.RGID {
		return fmt.Errorf("set fsgid %d: still %d", s.RGID, got)
	}
	return nil
}
