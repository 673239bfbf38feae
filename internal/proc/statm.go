package proc

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Statm holds the fields of /proc/PID/statm a sampler compares between
// reads, in pages. The kernel prints statm in a fraction of the time of
// status, which makes it the cheap "did anything move" check.
type Statm struct {
	Resident uint64 // field 2: resident set size
	Shared   uint64 // field 3: resident file-backed and shmem pages
	Text     uint64 // field 4: the executable's text, which only exec changes
	// Data is field 6: private writable memory and stack, the address
	// space that can hold swapped-out anonymous pages; 0 when the line
	// ends after field 4.
	Data uint64
	OK   bool // parsed
}

// Zero reports whether the process has no address space (kernel thread,
// zombie): the kernel prints statm as zeros then.
func (s Statm) Zero() bool { return s.OK && s.Resident == 0 && s.Shared == 0 && s.Text == 0 }

// ParseStatm parses "size resident shared text lib data dt\n". A line it
// cannot parse gives a Statm with OK false, which a sampler treats as
// "moved": it then reads the process again rather than trust it.
func ParseStatm(b []byte) Statm {
	var f [4]uint64
	i := 0
	for k := range f {
		for i < len(b) && b[i] == ' ' {
			i++
		}
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			f[k] = f[k]*10 + uint64(b[i]-'0')
			i++
			n++
		}
		if n == 0 || n > 19 {
			return Statm{}
		}
	}
	// The fourth number must end the field: "4x" is no number, and the
	// loop above would take its digits. (Found by FuzzParseStatm.)
	if i < len(b) && b[i] != ' ' && b[i] != '\n' {
		return Statm{}
	}
	s := Statm{Resident: f[1], Shared: f[2], Text: f[3], OK: true}
	// lib (always 0) and data: taken when both are whole numbers.
	var g [2]uint64
	for k := range g {
		if i >= len(b) || b[i] != ' ' {
			return s
		}
		for i < len(b) && b[i] == ' ' {
			i++
		}
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' && n < 19 {
			g[k] = g[k]*10 + uint64(b[i]-'0')
			i++
			n++
		}
		if n == 0 || i < len(b) && b[i] != ' ' && b[i] != '\n' {
			return s
		}
	}
	s.Data = g[1]
	return s
}

// Statm reads statm of the process (or thread) Select or SelectTask
// chose, by path.
func (r *Reader) Statm() (Statm, error) {
	b, err := r.readTaskFile("statm\x00")
	if err != nil {
		return Statm{}, err
	}
	return ParseStatm(b), nil
}

// OpenStatm opens statm of the process (or thread) Select or SelectTask
// chose, under the tree's rules, and hands the descriptor to the caller,
// who keeps it across reads (ReadStatmFD) and closes it. The kernel binds
// it to the process it was opened for: once that process exits, reads
// through it fail even if the PID names another process by then, so a
// successful read proves the process lived on.
func (r *Reader) OpenStatm() (int, error) {
	dfd, path := r.at(r.pidfd, "statm\x00")
	fd, err := r.fs.OpenAt(dfd, path, false, &r.how)
	if err != nil {
		return -1, mapErrno(err, ErrGone)
	}
	return fd, nil
}

// ReadStatmFD reads a descriptor OpenStatm returned from its start (procfs
// prints the file again for a read at offset 0) into buf, which 64 bytes
// suffice for. It returns ErrGone once the process it was opened for has
// exited, and ErrExhausted when the kernel had no memory to print it
// (ENOMEM), which says nothing of the process.
func ReadStatmFD(fd int, buf []byte) (Statm, error) {
	for {
		n, err := unix.Pread(fd, buf, 0)
		if e := injected("statm", nil); e != 0 {
			n, err = 0, e
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			if Exhausted(err) {
				// A pread that fails for want of memory is not
				// the process exiting; counted gone, it would
				// vanish from a tick's totals unwarned.
				return Statm{}, ErrExhausted
			}
			// ESRCH: the process exited, even if its PID lives on.
			return Statm{}, ErrGone
		}
		return ParseStatm(buf[:n]), nil
	}
}
