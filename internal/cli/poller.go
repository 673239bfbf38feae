package cli

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// StartPoller makes the Go runtime create its network poller (an epoll
// instance and an eventfd) now, and returns an error instead when the
// kernel would refuse them.
//
// The runtime creates the poller lazily, at the first timer or network
// descriptor, and dies if it cannot ("fatal error: runtime: netpollinit
// failed" and a goroutine dump, exit 2). Another user who fills the
// system's file table (fs.file-max, ENFILE, which only CAP_SYS_ADMIN
// escapes) for a moment can make a normal user's `memwho watch` die that
// way after its first snapshot, at the first interval's timer; the same
// can strike any command whose first timer comes late
// (the agent's walk ticker, the scavenger). So memwho tries the two
// descriptors itself first: a refusal is one error line, and once the
// runtime has its poller nothing later needs another.
func StartPoller() error {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("cannot start: epoll_create1: %w", err)
	}
	ev, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	unix.Close(ep)
	if err != nil {
		return fmt.Errorf("cannot start: eventfd: %w", err)
	}
	unix.Close(ev)
	// A function timer is put on the runtime's timer heap at once,
	// which starts the poller (a channel timer waits for a receiver).
	time.AfterFunc(time.Hour, func() {}).Stop()
	return nil
}
