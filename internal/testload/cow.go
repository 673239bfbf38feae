package testload

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Go program cannot fork safely: the copy has one thread, and any entry
// into the runtime (allocation, stack growth, scheduling, a signal
// handler) may touch locks or threads that do not exist in it. Copy-on-write
// sharing needs a real fork, though, so forkSleeper forks with a raw clone
// and confines the new process to a few raw system calls that never enter
// the runtime:
//
//   - every function it runs is nosplit and norace, so no stack check can
//     call morestack and no race hook can call into the race runtime;
//   - it allocates nothing: its only memory is a package-level signal mask;
//   - it blocks every blockable signal at once, so no Go signal handler
//     (inherited from the parent) can run in it;
//   - it asks for SIGKILL when its parent dies and then sleeps in ppoll
//     forever, waking for nothing. SIGKILL is the only way out.
//
// The residual risk is the compiler or runtime changing what a nosplit
// raw-syscall path does (for example, instrumenting it); the tests of this
// package would then show a crashed or hung grandchild.

// grandchildSigmask blocks all signals (SIGKILL and SIGSTOP cannot be).
// It is a global so that taking its address allocates nothing.
var grandchildSigmask = ^uint64(0)

// forkSleeper forks the calling process. In the parent it returns the new
// pid. The new process never returns: it sleeps until it is killed,
// sharing every page of the parent copy-on-write. ppid is the caller's pid,
// used to notice a parent that died before the death signal was armed.
//
//go:nosplit
//go:norace
func forkSleeper(ppid uintptr) (uintptr, syscall.Errno) {
	pid, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 || pid != 0 {
		return pid, errno
	}
	sleepForever(ppid)
	return 0, 0 // not reached
}

//go:nosplit
//go:norace
func sleepForever(ppid uintptr) {
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&grandchildSigmask)), 0, 8, 0, 0)
	syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
	if p, _, _ := syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0); p != ppid {
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 1, 0, 0)
	}
	// Drop every descriptor but the lifeline (0-2 are harmless), so the
	// grandchild does not keep the ready pipe or shared objects open.
	syscall.RawSyscall(unix.SYS_CLOSE_RANGE, 3, uintptr(^uint32(0)), 0)
	for {
		syscall.RawSyscall6(syscall.SYS_PPOLL, 0, 0, 0, 0, 0, 0)
	}
}
