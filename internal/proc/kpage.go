package proc

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// KPages looks pages up by frame number in /proc/kpagecount and
// /proc/kpageflags: how many page tables map a page, and what kind of
// page it is. The kernel shows frame numbers in /proc/PID/pagemap only to
// a reader holding CAP_SYS_ADMIN, and the two files are root's alone
// (mode 0400), so only root's scans have a KPages; without one, the pages
// a process shares are known to be shared but not by how many.
//
// A lookup costs a read, and the kernel's work per frame read is about
// that of a page of smaps' walk: frames are looked up sorted, a read
// covering neighbours only where they are dense (Counts).
//
// A KPages is not safe for concurrent use: each reader has its own (the
// descriptors are the FS's, shared; the buffer is not).
type KPages struct {
	fs  *FS
	buf [kpageWindow]uint64
	// Reads counts the reads made, for tests and benchmarks.
	Reads int
}

// kpageWindow is the most entries one read of Counts covers.
const kpageWindow = 512

// Bits of /proc/kpageflags (Documentation/admin-guide/mm/pagemap.rst).
const (
	kpfAnon       = 1 << 12
	kpfSwapBacked = 1 << 14
	kpfHuge       = 1 << 17
	kpfNoPage     = 1 << 20
	kpfZeroPage   = 1 << 24
)

// OpenKPages opens /proc/kpagecount and /proc/kpageflags for frame
// lookups (once per FS: later calls share the descriptors) and returns
// a lookup of the caller's own. It returns an error on a tree that is not
// the root of a real procfs (a fake tree's files say nothing of this
// machine's memory), and when the files cannot be opened: memwho is not
// root.
func (fs *FS) OpenKPages() (*KPages, error) {
	fs.kpOnce.Do(func() {
		if !fs.real {
			fs.kpErr = ErrDenied
			return
		}
		var how unix.OpenHow
		c, err := fs.OpenAt(fs.fd, &[]byte("kpagecount\x00")[0], false, &how)
		if err != nil {
			fs.kpErr = mapErrno(err, ErrNotExist)
			return
		}
		f, err := fs.OpenAt(fs.fd, &[]byte("kpageflags\x00")[0], false, &how)
		if err != nil {
			syscall.Close(c)
			fs.kpErr = mapErrno(err, ErrNotExist)
			return
		}
		fs.kpCount, fs.kpFlags = c, f
	})
	if fs.kpErr != nil {
		return nil, fs.kpErr
	}
	return &KPages{fs: fs}, nil
}

// Counts sets counts[i] to how many page tables map frame pfns[i]: the
// map count smaps divides a page among, 0 for a frame that is no mapped
// page (the zero page, a device's memory), which the kernel's own walk
// skips. pfns must be sorted. A read covers several frames only where
// they lie densely (at least one in 8 of the entries read).
func (k *KPages) Counts(pfns, counts []uint64) error {
	for i := 0; i < len(pfns); {
		first := pfns[i]
		j := i
		for j+1 < len(pfns) && pfns[j+1]-first < kpageWindow && pfns[j+1]-first < 8*uint64(j+2-i) {
			j++
		}
		n, err := k.read(k.fs.kpCount, first, int(pfns[j]-first)+1)
		if err != nil {
			return err
		}
		for ; i <= j; i++ {
			if d := int(pfns[i] - first); d < n {
				counts[i] = k.buf[d]
			} else {
				counts[i] = 0 // past the end of memory
			}
		}
	}
	return nil
}

// Flags returns the kpageflags word of frame pfn.
func (k *KPages) Flags(pfn uint64) (uint64, error) {
	n, err := k.read(k.fs.kpFlags, pfn, 1)
	if err != nil || n == 0 {
		return 0, err
	}
	return k.buf[0], nil
}

// read reads n entries of fd from frame first into k.buf and returns how
// many it got (fewer past the end of memory).
func (k *KPages) read(fd int, first uint64, n int) (int, error) {
	for {
		m, err := pread(fd, unsafeBytes(k.buf[:n]), int(first*8))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, mapErrno(err, ErrNotExist)
		}
		k.Reads++
		return m / 8, nil
	}
}
