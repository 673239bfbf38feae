package privilege

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// ErrEffective is returned by [OpenFile] when a capability is effective:
// a path the user named is opened only with the user's own rights.
var ErrEffective = errors.New("internal error: a path the user named was to be opened while a capability is effective")

// OpenFile is os.OpenFile for a path the user named (a profile, a
// database, a key file). After [Setup] the process's ids are the user's
// and no capability is effective until [Enter], and Enter comes only
// after every such path is open; so the kernel checks exactly the user's
// rights, symlinks and every directory included, with no window between
// a check and the open. OpenFile enforces that order: it refuses to open
// anything while the calling thread (and so every thread: capability
// changes here are all-thread) holds an effective capability.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	if err := UserRights(); err != nil {
		return nil, err
	}
	return os.OpenFile(path, flag, perm)
}

// OpenOwnRights is OpenFile for a path read again while capabilities are
// effective (the agent's certificate, renewed while it walks /proc): it
// opens path on an OS thread of its own whose effective capabilities it
// clears first (capset changes the calling thread only), so that the
// kernel checks the process's own user's rights, symlinks and every
// directory included, at the open itself. The thread is never handed
// back: it exits with its goroutine, and its reduced set with it. The
// other threads keep their capabilities throughout.
func OpenOwnRights(path string, flag int, perm os.FileMode) (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// No UnlockOSThread: the runtime ends a thread whose goroutine
		// exits locked to it.
		runtime.LockOSThread()
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			ch <- result{nil, fmt.Errorf("read capabilities: %w", err)}
			return
		}
		data[0].Effective, data[1].Effective = 0, 0
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			ch <- result{nil, fmt.Errorf("clear effective capabilities: %w", err)}
			return
		}
		if eff, err := effectiveCaps(); err != nil || eff != 0 {
			ch <- result{nil, ErrEffective}
			return
		}
		f, err := os.OpenFile(path, flag, perm)
		ch <- result{f, err}
	}()
	r := <-ch
	return r.f, r.err
}

// UserRights returns nil when files opened now are opened with the user's
// own rights only (no capability effective), ErrEffective otherwise. Code
// that opens files of its own choosing with other users' content in them
// (container runtimes' state, after the scan) checks it first.
func UserRights() error {
	if Elevated() {
		eff, err := effectiveCaps()
		if err != nil {
			return err
		}
		if eff != 0 {
			return ErrEffective
		}
	}
	return nil
}

// effectiveCaps returns the calling thread's effective capability mask.
func effectiveCaps() (uint64, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0, fmt.Errorf("read capabilities: %w", err)
	}
	return uint64(data[0].Effective) | uint64(data[1].Effective)<<32, nil
}
