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
// A KPages is not safe for concurrent use: each reader has its own (the
// descriptors are the FS's, shared; the caches are not).
type KPages struct {
	fs *FS
	// count and flags hold one 4 KiB block each of the two files: the
	// 512 entries around the last frame looked up, since the pages of
	// one mapping are often neighbours in memory.
	count, flags kpageBlock
}

type kpageBlock struct {
	base uint64 // first frame of v, plus 1; 0 when empty
	n    int    // entries read
	v    [512]uint64
}

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

// Count returns how many page tables map frame pfn: the map count
// smaps divides a page among, 0 for a frame that is no mapped page (the
// zero page, a device's memory), as the kernel's own walk skips them.
func (k *KPages) Count(pfn uint64) (uint64, error) {
	return k.count.get(k.fs.kpCount, pfn)
}

// Flags returns the kpageflags word of frame pfn.
func (k *KPages) Flags(pfn uint64) (uint64, error) {
	return k.flags.get(k.fs.kpFlags, pfn)
}

func (b *kpageBlock) get(fd int, pfn uint64) (uint64, error) {
	base := pfn &^ 511
	if b.base != base+1 {
		b.base, b.n = 0, 0
		for {
			m, err := pread(fd, unsafeBytes(b.v[:]), int(base*8))
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				return 0, mapErrno(err, ErrNotExist)
			}
			b.base, b.n = base+1, m/8
			break
		}
	}
	i := int(pfn - base)
	if i >= b.n {
		// Past the end of memory.
		return 0, nil
	}
	return b.v[i], nil
}
