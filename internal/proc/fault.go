package proc

import (
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Fault, when set with SetFault, is asked before each open, readlink and
// thread-counting statx beneath the tree (op "open", "readlink",
// "statx", with the NUL-free path as
// passed, relative to the root or to a held directory) and before each
// read of a held statm descriptor (op "statm", path ""): a non-zero errno
// fails the call as if the kernel had returned it. It exists for tests of
// what a scan does when memwho runs out of descriptors or memory
// (EMFILE, ENFILE, ENOMEM) at one given step, which a real kernel cannot
// be made to do on cue; nothing but a test sets it.
type Fault func(op, path string) syscall.Errno

var fault atomic.Pointer[Fault]

// SetFault installs f (nil removes it) and returns a function that
// restores the previous one. For tests only.
func SetFault(f Fault) (restore func()) {
	var p *Fault
	if f != nil {
		p = &f
	}
	old := fault.Swap(p)
	return func() { fault.Store(old) }
}

// Injected is injected for the readers beside this package that make
// their own calls beneath the tree (sockdiag's descriptor links, op
// "readlink"), so that their failures can be tested the same way.
func Injected(op string, path *byte) syscall.Errno { return injected(op, path) }

// injected returns the errno the installed Fault asks for, or 0.
func injected(op string, path *byte) syscall.Errno {
	f := fault.Load()
	if f == nil {
		return 0
	}
	s := ""
	if path != nil {
		n := 0
		for *(*byte)(unsafe.Add(unsafe.Pointer(path), n)) != 0 {
			n++
		}
		// A copy, not unsafe.String: path must not escape through
		// the call of f, or every caller's path buffer would move to
		// the heap (Threads builds its path on the stack).
		s = string(unsafe.Slice(path, n))
	}
	return (*f)(op, s)
}
