package proc

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file reads a process through one of its threads. When the main
// thread (the thread-group leader) exits with pthread_exit or a raw exit
// while other threads run on, the kernel keeps the leader as a zombie
// until the whole group exits, and /proc/PID then describes that zombie:
// status has no Vm lines, statm is zeros, smaps_rollup fails with ESRCH,
// the exe link is gone. The address space lives on, shared by the other
// threads, and /proc/PID/task/TID of a live thread shows it in full.
// Nothing here is on the path of an ordinary process.

// Threads returns the number of threads of process pid (the leader
// included), or 0 when it cannot tell. It costs one statx of
// /proc/PID/task: procfs gives that directory a link count of 2 plus the
// number of threads, as any directory has 2 plus its subdirectories. So
// a fake tree unpacked on disk answers the same way.
func (r *Reader) Threads(pid int) int {
	var p [32]byte
	b := AppendInt(p[:0], pid)
	b = append(b, "/task\x00"...)
	var stx unix.Statx_t
	if injected("statx", &b[0]) != 0 {
		return 0
	}
	_, _, e := syscall.Syscall6(unix.SYS_STATX, uintptr(r.fs.fd), uintptr(unsafe.Pointer(&b[0])),
		unix.AT_SYMLINK_NOFOLLOW, unix.STATX_NLINK, uintptr(unsafe.Pointer(&stx)), 0)
	if e != 0 || stx.Nlink < 3 {
		return 0
	}
	return int(stx.Nlink) - 2
}

// Tasks appends the thread ids listed in /proc/PID/task to dst[:0]; buf
// is scratch space for getdents, as for FS.PIDs.
func (r *Reader) Tasks(pid int, dst []int, buf []byte) ([]int, []byte, error) {
	dst = dst[:0]
	if len(buf) < 4096 {
		buf = make([]byte, 8192)
	}
	var p [32]byte
	b := AppendInt(p[:0], pid)
	b = append(b, "/task\x00"...)
	fd, err := r.fs.OpenAt(r.fs.fd, &b[0], true, &r.how)
	if err != nil {
		return dst, buf, mapErrno(err, ErrGone)
	}
	defer syscall.Close(fd)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return dst, buf, mapErrno(err, ErrGone)
		}
		if n <= 0 {
			return dst, buf, nil
		}
		dst = appendDirentPIDs(dst, buf[:n])
	}
}

// SelectTask is Select for thread tid of process pid: later reads open
// "PID/task/TID/name" relative to the procfs root. A thread's smaps_rollup,
// statm, exe and cmdline describe the address space it shares with the
// whole process; its status and comm carry its own task name.
func (r *Reader) SelectTask(pid, tid int) {
	r.Close()
	p := AppendInt(r.path[:0], pid)
	p = append(p, "/task/"...)
	p = AppendInt(p, tid)
	p = append(p, '/')
	r.pidfd, r.pid, r.prefix = direct, pid, len(p)
}

// OpenTask is Open for thread tid of process pid: it holds the
// /proc/PID/task/TID directory, which the kernel ties to that thread, and
// every read until Close goes through it. It returns ErrGone when the
// thread does not exist.
func (r *Reader) OpenTask(pid, tid int) error {
	r.Close()
	p := AppendInt(r.path[:0], pid)
	p = append(p, "/task/"...)
	p = AppendInt(p, tid)
	return r.openDir(pid, append(p, 0))
}

// LeaderStat reads /proc/PID/stat of the process the Reader points at,
// whichever thread SelectTask or OpenTask chose: the process's own start
// time and parent, which identify it across scans. A thread's stat has
// the thread's start time instead.
func (r *Reader) LeaderStat(out *Stat) error {
	var p [32]byte
	b := AppendInt(p[:0], r.pid)
	b = append(b, "/stat\x00"...)
	b, err := r.readFile(r.fs.fd, unsafe.String(&b[0], len(b)), true)
	if err == ErrNotExist || err == ErrNoMM {
		return ErrGone
	}
	if err != nil {
		return err
	}
	return ParseStat(b, out)
}
