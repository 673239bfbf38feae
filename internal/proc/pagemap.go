package proc

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Reading a process page by page, without stopping it.
//
// smaps_rollup walks a process's page tables under its mmap_lock, and the
// kernel lets a waiting writer in only between two mappings: a process
// that maps or unmaps memory while its largest mapping is walked waits
// for the whole walk, about 8 to 13 ms per GiB of 4 KiB pages on the
// development VM. And it drops the lock between mappings only to take it
// again at once, so that a writer woken meanwhile finds it taken (a
// reader may take an rwsem a writer waits for until the writer has
// waited about one jiffy): a process of many small mappings stalls too
// (16 ms measured with 6 GiB in 32 MiB mappings).
//
// /proc/PID/pagemap holds the lock for one 2 MiB step of the page tables
// at a time, and between two reads of it memwho holds nothing. So Paced
// reads it in steps of PacedStep of address space, and after every
// PacedBurst of back-to-back reads sleeps PacedPause, long enough for a
// woken writer to take the lock. Each pagemap entry says whether the page
// is present, swapped out, file-backed or shmem (rather than anonymous),
// and whether this process alone maps it (bit 56, exclusively mapped):
// a page it alone maps counts in full in Pss and Private, as in
// smaps_rollup, so a process whose pages are all its own is read exactly.
// A shared page counts 1/N of its size for its N mappers; the frame
// number in the entry and /proc/kpagecount give N, for root only (see
// KPages). Without them the page counts half its size, which is its
// largest possible share, and the Bound says by how much that may
// overstate. Swapped-out pages count in full in SwapPss (an upper bound:
// no file says how many processes share a swap slot), bounded by
// SwapBound. docs/accuracy.md has the table.

// Pacing of Paced's reads. See the measurements in docs/performance.md.
const (
	// PacedStep is the address space one pagemap read covers: 16 MiB is
	// 4096 entries, a 32 KiB buffer, about 0.1 ms of reading when the
	// range is fully populated.
	PacedStep = 16 << 20
	// PacedBurst is how long reads run back to back before a pause.
	PacedBurst = 250 * time.Microsecond
	// PacedPause is the pause: a writer woken by the last unlock gets
	// the lock while memwho sleeps.
	PacedPause = 50 * time.Microsecond
)

// Pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst).
const (
	pmPresent   = 1 << 63
	pmSwap      = 1 << 62
	pmFile      = 1 << 61 // file page or shared anonymous (shmem)
	pmExclusive = 1 << 56 // mapped by this process alone
	pmPFN       = 1<<55 - 1
)

// Pacer holds what Reader.Paced reuses between reads: the entry buffer,
// the frame lookups when memwho may make them, and the pacing. The zero
// value paces by the defaults above. A Pacer belongs to one Reader's
// goroutine.
type Pacer struct {
	// KP looks up shared pages' map counts. Paced opens it at the first
	// frame number pagemap shows (the kernel shows them to
	// CAP_SYS_ADMIN alone, which may read the lookup files too); it
	// stays nil without them, or with NoLookups.
	KP *KPages
	// NoLookups keeps Paced from looking frames up: shared pages are
	// then estimated even as root (for tests of that path).
	NoLookups bool
	kpTried   bool
	// Burst and Pause override PacedBurst and PacedPause when not zero.
	Burst, Pause time.Duration

	ent []uint64
	// noQ: PROCMAP_QUERY is unsupported (learnt once).
	noQ bool
	// The pacing of the current read.
	burst, pause time.Duration
	since        time.Time
	// The frames of shared pages to look up, by kind (kindAnon, kindFile,
	// kindShmem): every one up to lookupSample, a uniform sample beyond
	// (seen counts them all), and their counts once looked up.
	sample [3][]uint64
	seen   [3]uint64
	counts []uint64
	rnd    uint64

	// Pauses, Entries and Scans count the pauses taken, the pagemap
	// entries read and the PAGEMAP_SCAN calls made by the last Paced.
	Pauses  int
	Entries uint64
	Scans   int

	// resident is the process's resident size in bytes (plan); noScan:
	// PAGEMAP_SCAN is unsupported (learnt once).
	resident uint64
	noScan   bool
	regions  [64]pageRegion
}

// PagedAnonPages is passed to Paced as anonPages when the caller does
// not know the process's resident anonymous pages.
const PagedAnonPages = ^uint64(0)

// HoldPagemap opens /proc/PID/pagemap of the process Select chose and
// keeps it until Close, to be read last by Paced: like Hold for
// smaps_rollup, a pagemap descriptor is bound to the process's address
// space, and a read after the process exited returns nothing.
func (r *Reader) HoldPagemap() error {
	return r.Hold("pagemap\x00")
}

// Paced reads the process's memory figures from /proc/PID/maps and the
// pagemap HoldPagemap opened, pacing its reads as described above, into
// out (which it zeroes; Paced, Bound and SwapBound set). st is the
// process's statm read just before, or a zero Statm: its resident pages
// tell whether the mappings without access ("---p", reservations that
// hold no pages but can be most of a process's address space) need
// reading at all, and its anonymous pages (resident less shared) tell
// the zero page, which pagemap cannot tell from a shared anonymous page
// without frame lookups, from pages the process shares.
//
// Errors: ErrGone when the process exited (or exec'd) meanwhile, ErrNoMM
// when it has no address space, ErrMalformed when maps does not parse,
// and those of opening and reading files.
func (r *Reader) Paced(out *Rollup, pc *Pacer, st Statm) error {
	*out = Rollup{}
	pc.Pauses, pc.Entries = 0, 0
	pm := r.held
	if pm < 0 {
		return ErrGone
	}
	defer func() {
		syscall.Close(r.held)
		r.held = -1
	}()
	dfd, path := r.at(r.pidfd, "maps\x00")
	mfd, err := r.fs.OpenAt(dfd, path, false, &r.how)
	if err != nil {
		return mapFileErrno(err)
	}
	defer syscall.Close(mfd)
	maps, err := r.readFD(mfd, false, MaxFileSize)
	if err != nil {
		return err
	}
	if len(maps) == 0 {
		return ErrNoMM
	}
	if len(pc.ent) == 0 {
		pc.ent = make([]uint64, PacedStep/pageSize)
	}
	pc.burst, pc.pause = PacedBurst, PacedPause
	if pc.Burst > 0 {
		pc.burst = pc.Burst
	}
	if pc.Pause > 0 {
		pc.pause = pc.Pause
	}
	pc.since = time.Now()
	pc.Scans = 0
	if err := pc.plan(pm, maps, st); err != nil {
		return err
	}
	for k := range pc.sample {
		pc.sample[k], pc.seen[k] = pc.sample[k][:0], 0
	}
	pc.rnd = 0x9e3779b97f4a7c15 ^ uint64(r.pid)
	var a pagedAcc
	noAccess, err := pc.pass(&a, r.fs, pm, mfd, maps, false)
	if err != nil {
		return err
	}
	// Pages in a mapping without access are rare (memory protected
	// after use): read those mappings only when the others do not hold
	// every resident page statm counts.
	if noAccess && (!st.OK || a.rss+a.unknown[kindAnon]+a.unknown[kindFile]+a.unknown[kindShmem]+pc.seen[kindAnon]+pc.seen[kindFile]+pc.seen[kindShmem] < st.Resident) {
		if _, err := pc.pass(&a, r.fs, pm, mfd, maps, true); err != nil {
			return err
		}
	}
	anon := PagedAnonPages
	if st.OK && st.Resident >= st.Shared {
		anon = st.Resident - st.Shared
	}
	return a.finish(out, anon, pc)
}

// sparseVMA is the size from which a mapping larger than the process's
// resident memory allows to be mostly pages is scanned for its pages
// rather than read entry by entry.
const sparseVMA = 1 << 30

// ErrSparse says a process's address space is mostly holes on a kernel
// without PAGEMAP_SCAN (before Linux 6.7): reading every entry of it
// could take minutes; the caller reads it another way.
var ErrSparse = errors.New("address space mostly holes, and no PAGEMAP_SCAN")

// plan notes the process's resident size, which decides which mappings
// are scanned for their pages first (scanned), and returns ErrSparse
// when one is to be on a kernel without PAGEMAP_SCAN.
func (pc *Pacer) plan(pm int, maps []byte, st Statm) error {
	pc.resident = 0
	if st.OK {
		pc.resident = st.Resident * pageSize
	}
	for b := maps; len(b) > 0; {
		var v VMA
		var err error
		if b, err = NextVMA(b, &v); err != nil {
			return err
		}
		if v.Start < 1<<63 && pc.scanned(&v) && !pc.probeScan(pm, v.Start) {
			return ErrSparse
		}
	}
	return nil
}

// scanned reports whether v is scanned for its pages rather than read
// entry by entry: a mapping of a GiB or more that is over four times
// the process's resident size cannot be mostly pages.
func (pc *Pacer) scanned(v *VMA) bool {
	return v.Size() >= sparseVMA && v.Size() > 4*pc.resident
}

// probeScan reports whether pagemap pm answers PAGEMAP_SCAN, asking once
// for a page at addr (ENOTTY before Linux 6.7, and from anything that is
// not procfs's pagemap).
func (pc *Pacer) probeScan(pm int, addr uint64) bool {
	if pc.noScan {
		return false
	}
	q := pmScanArg{Size: uint64(unsafe.Sizeof(pmScanArg{})), Start: addr, End: addr + pageSize,
		Vec: uint64(uintptr(unsafe.Pointer(&pc.regions[0]))), VecLen: 1, AnyOf: pageIsPresent, Return: pageIsPresent}
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(pm), pagemapScanIoctl, uintptr(unsafe.Pointer(&q)))
	pc.noScan = e == syscall.ENOTTY || e == syscall.EINVAL || e == syscall.EOPNOTSUPP
	return !pc.noScan
}

// pmScanArg is struct pm_scan_arg of <linux/fs.h> (Linux 6.7+).
type pmScanArg struct {
	Size, Flags, Start, End, WalkEnd, Vec, VecLen, MaxPages uint64
	Inverted, Mask, AnyOf, Return                           uint64
}

// pageRegion is struct page_region.
type pageRegion struct{ Start, End, Categories uint64 }

const (
	pageIsPresent = 1 << 3
	pageIsSwapped = 1 << 4
	// _IOWR('f', 16, struct pm_scan_arg).
	pagemapScanIoctl = 3<<30 | uintptr(unsafe.Sizeof(pmScanArg{}))<<16 | 'f'<<8 | 16
)

// pass reads the pagemap entries of the mappings of maps into a: those
// without access when noAccess is set, the others when not. It reports
// whether maps has mappings of the other kind.
func (pc *Pacer) pass(a *pagedAcc, fs *FS, pm, mfd int, maps []byte, noAccess bool) (other bool, err error) {
	for b := maps; len(b) > 0; {
		var v VMA
		if b, err = NextVMA(b, &v); err != nil {
			return false, err
		}
		if v.Start >= 1<<63 {
			// [vsyscall]: above the user address space pagemap covers.
			continue
		}
		if v.NoAccess != noAccess {
			other = true
			continue
		}
		huge := pc.hugetlb(mfd, &v)
		// The class of the VMA's file pages: from the first one's
		// flags when frames can be looked up, else from its name.
		class := classNone
		if !pc.scanned(&v) {
			if err := pc.entries(a, fs, pm, &v, v.Start, v.End, huge, &class); err != nil {
				return false, err
			}
			continue
		}
		// A large mapping that is mostly holes: pagemap would print
		// an entry for every page of it (a reserved terabyte is 2 GiB
		// of zeros); PAGEMAP_SCAN finds the pages in it, skipping
		// empty page tables whole.
		for addr := v.Start; addr < v.End; {
			q := pmScanArg{Size: uint64(unsafe.Sizeof(pmScanArg{})), Start: addr, End: v.End,
				Vec: uint64(uintptr(unsafe.Pointer(&pc.regions[0]))), VecLen: uint64(len(pc.regions)),
				MaxPages: PacedStep / pageSize, AnyOf: pageIsPresent | pageIsSwapped, Return: pageIsPresent | pageIsSwapped}
			n, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(pm), pagemapScanIoctl, uintptr(unsafe.Pointer(&q)))
			if e == syscall.EINTR {
				continue
			}
			if e != 0 {
				return false, mapFileErrno(e)
			}
			pc.Scans++
			for _, r := range pc.regions[:n] {
				if err := pc.entries(a, fs, pm, &v, max(r.Start, v.Start), min(r.End, v.End), huge, &class); err != nil {
					return false, err
				}
			}
			if q.WalkEnd <= addr {
				// No progress: the address space is gone.
				return false, ErrGone
			}
			addr = q.WalkEnd
			pc.pace()
		}
	}
	return other, nil
}

// entries reads and adds the pagemap entries of [from, to) of v.
func (pc *Pacer) entries(a *pagedAcc, fs *FS, pm int, v *VMA, from, to uint64, huge bool, class *int) error {
	for addr := from; addr < to; {
		end := min(addr+PacedStep, to)
		ent := pc.ent[:(end-addr)/pageSize]
		got, err := preadFull(pm, unsafeBytes(ent), int64(addr/pageSize*8))
		if err != nil {
			return err
		}
		if got == 0 {
			// The address space is gone: the process exited or
			// exec'd since the open.
			return ErrGone
		}
		ent = ent[:got/8]
		pc.Entries += uint64(len(ent))
		if huge {
			a.hugetlb(ent)
		} else if err := a.pages(ent, pc, fs, v, class); err != nil {
			return err
		}
		addr += uint64(len(ent)) * pageSize
		pc.pace()
	}
	return nil
}

// pace sleeps PacedPause when reads have run back to back for
// PacedBurst.
func (pc *Pacer) pace() {
	if time.Since(pc.since) >= pc.burst {
		sleep(pc.pause)
		pc.Pauses++
		pc.since = time.Now()
	}
}

const pageSize = 4096

// Classes of a VMA's file-backed pages.
const (
	classNone  = iota // not known yet
	classFile         // page cache of a file
	classShmem        // shmem: tmpfs, memfd, SysV, shared anonymous
)

// shmemByName guesses a mapping's class from its name, for readers
// without kpageflags: shared anonymous memory, SysV segments, memfds and
// files in /dev/shm are shmem; a file elsewhere on a tmpfs is taken for a
// file (its pages then count in Pss_File rather than Pss_Shmem; their sum
// is right).
func shmemByName(v *VMA) int {
	n := v.Name
	switch {
	case bytes.HasPrefix(n, []byte("/dev/zero")) && v.Shared,
		bytes.HasPrefix(n, []byte("/SYSV")),
		bytes.HasPrefix(n, []byte("/memfd:")),
		bytes.HasPrefix(n, []byte("/dev/shm/")),
		bytes.HasPrefix(n, []byte("[anon_shmem:")):
		return classShmem
	}
	return classFile
}

// pagedAcc sums pagemap entries as smaps_rollup sums pages. Counts are in
// pages; the pss* sums are fixed point, bytes << pssShift, as the
// kernel's, so that they truncate to the same kB.
type pagedAcc struct {
	rss, anon, private, shared, swap uint64
	pss                              [3]uint64 // by kind
	privHuge, sharedHuge             uint64
	// Present pages the entry says are shared, whose map count is not
	// known (no frame lookups), by kind: anonymous ones may also be the
	// zero page.
	unknown [3]uint64
}

const pssShift = 12

// lookups returns pc's frame lookups, opening them the first time a
// frame number is seen.
func (pc *Pacer) lookups(fs *FS) *KPages {
	if pc.KP == nil && !pc.kpTried && !pc.NoLookups {
		pc.kpTried = true
		pc.KP, _ = fs.OpenKPages()
	}
	return pc.KP
}

// pages adds the entries of an ordinary mapping. class is the mapping's
// file class, learnt from kpageflags at its first file page when frames
// can be looked up.
func (a *pagedAcc) pages(ent []uint64, pc *Pacer, fs *FS, v *VMA, class *int) error {
	for _, e := range ent {
		if e&pmPresent == 0 {
			if e&pmSwap != 0 {
				a.swap++
			}
			continue
		}
		pfn := e & pmPFN
		kp := pc.KP
		if kp == nil && pfn != 0 {
			kp = pc.lookups(fs)
		}
		file := e&pmFile != 0
		if file && *class == classNone {
			if err := learnClass(kp, e, class, v); err != nil {
				return err
			}
		}
		k := kindAnon
		if file {
			k = kindFile
			if *class == classShmem {
				k = kindShmem
			}
		}
		if e&pmExclusive != 0 {
			// Mapped by this process alone: counts in full.
			a.rss++
			a.private++
			a.pss[k] += pageSize << pssShift
			if !file {
				a.anon++
			}
			continue
		}
		if kp == nil || pfn == 0 {
			a.unknown[k]++
			continue
		}
		pc.keep(k, pfn)
	}
	return nil
}

// Kinds of page, as smaps_rollup's Pss_Anon, Pss_File and Pss_Shmem.
const (
	kindAnon = iota
	kindFile
	kindShmem
)

// lookupSample is how many shared pages of each kind Paced looks up at
// most: 64 MiB of each kind are exact; beyond, a uniform sample of them
// gives their shares (see finish). 16384 lookups take about 10 ms.
const lookupSample = 16384

// keep adds a shared page's frame to the lookups of its kind: all of
// them up to lookupSample, then a uniform sample (reservoir sampling).
func (pc *Pacer) keep(kind int, pfn uint64) {
	pc.seen[kind]++
	if len(pc.sample[kind]) < lookupSample {
		if pc.sample[kind] == nil {
			pc.sample[kind] = make([]uint64, 0, lookupSample)
		}
		pc.sample[kind] = append(pc.sample[kind], pfn)
		return
	}
	// xorshift64: reproducible for one process, and cheap.
	pc.rnd ^= pc.rnd << 13
	pc.rnd ^= pc.rnd >> 7
	pc.rnd ^= pc.rnd << 17
	if j := pc.rnd % pc.seen[kind]; j < lookupSample {
		pc.sample[kind][j] = pfn
	}
}

// learnClass sets class from the kpageflags of entry e's frame (the
// pages of one mapping's file are all shmem or all not), or from v's
// name when frames cannot be looked up.
func learnClass(kp *KPages, e uint64, class *int, v *VMA) error {
	pfn := e & pmPFN
	if kp == nil || pfn == 0 {
		*class = shmemByName(v)
		return nil
	}
	f, err := kp.Flags(pfn)
	if err != nil {
		return err
	}
	if f&kpfSwapBacked != 0 && f&kpfAnon == 0 {
		*class = classShmem
	} else {
		*class = classFile
	}
	return nil
}

// hugetlb adds the entries of a hugetlbfs mapping: its pages count in
// Private_Hugetlb or Shared_Hugetlb, not in Rss or Pss, as in smaps.
func (a *pagedAcc) hugetlb(ent []uint64) {
	for _, e := range ent {
		if e&pmPresent == 0 {
			continue
		}
		if e&pmExclusive != 0 {
			a.privHuge++
		} else {
			a.sharedHuge++
		}
	}
}

// finish writes the sums into out. Shared pages whose frames were looked
// up count their exact share; beyond the lookup sample, the sample's
// mean share stands for the rest, and Bound covers their whole range.
// Shared pages without lookups count half their size (their largest
// share); shared anonymous entries beyond what the process's resident
// anonymous pages allow are the zero page and count nothing.
func (a *pagedAcc) finish(out *Rollup, anonPages uint64, pc *Pacer) error {
	const half = pageSize / 2 << pssShift
	var bound float64 // bytes
	for k := range pc.sample {
		if err := a.looked(k, pc, &bound); err != nil {
			return err
		}
	}
	ua := a.unknown[kindAnon]
	if anonPages != PagedAnonPages {
		// statm's anonymous pages count every anonymous page mapped,
		// shared or not, and never the zero page.
		room := uint64(0)
		if known := a.anon; anonPages > known {
			room = anonPages - known
		}
		ua = min(ua, room)
	}
	unknown := ua + a.unknown[kindFile] + a.unknown[kindShmem]
	a.rss += unknown
	a.anon += ua
	a.shared += unknown
	a.pss[kindAnon] += ua * half
	a.pss[kindFile] += a.unknown[kindFile] * half
	a.pss[kindShmem] += a.unknown[kindShmem] * half
	bound += float64(unknown * (pageSize / 2))

	kb := func(fx uint64) uint64 { return fx >> pssShift >> 10 << 10 }
	out.Rss = a.rss * pageSize
	out.Pss = kb(a.pss[kindAnon] + a.pss[kindFile] + a.pss[kindShmem])
	out.PssAnon, out.PssFile, out.PssShmem = kb(a.pss[kindAnon]), kb(a.pss[kindFile]), kb(a.pss[kindShmem])
	out.PrivateDirty = a.private * pageSize
	out.SharedDirty = a.shared * pageSize
	out.Anonymous = a.anon * pageSize
	out.PrivateHugetlb = a.privHuge * pageSize
	out.SharedHugetlb = a.sharedHuge * pageSize
	out.Swap = a.swap * pageSize
	out.SwapPss = out.Swap
	out.HasPss, out.HasSwapPss = true, true
	out.Paced = true
	out.Bound = uint64(math.Ceil(bound))
	out.SwapBound = out.Swap
	return nil
}

// looked adds the shared pages of kind k whose frames were kept for
// lookup: exactly when all were, else scaled from the sample, with the
// most the estimate can be off added to bound (bytes).
func (a *pagedAcc) looked(k int, pc *Pacer, bound *float64) error {
	s := pc.sample[k]
	if len(s) == 0 {
		return nil
	}
	slices.Sort(s)
	if cap(pc.counts) < len(s) {
		pc.counts = make([]uint64, len(s), lookupSample)
	}
	counts := pc.counts[:len(s)]
	if err := pc.KP.Counts(s, counts); err != nil {
		return err
	}
	var pss, present, private, shared uint64
	for _, m := range counts {
		switch {
		case m == 0:
			// The zero page, or memory without a page (a device's):
			// smaps counts neither.
		case m == 1:
			// Mapped once by the time of the lookup.
			present++
			private++
			pss += pageSize << pssShift
		default:
			present++
			shared++
			pss += (pageSize << pssShift) / m
		}
	}
	n := pc.seen[k]
	if n > uint64(len(s)) {
		// Scale the sample to all n pages. The pages not looked up
		// share between nothing and half their size each.
		f := float64(n) / float64(len(s))
		scale := func(v uint64) uint64 { return uint64(math.Round(float64(v) * f)) }
		rest := float64(n - uint64(len(s)))
		est := float64(pss>>pssShift) * (f - 1)
		*bound += max(est, rest*pageSize/2-est)
		pss, present, private, shared = scale(pss), scale(present), scale(private), scale(shared)
	}
	a.rss += present
	a.private += private
	a.shared += shared
	a.pss[k] += pss
	if k == kindAnon {
		a.anon += present
	}
	return nil
}

// hugetlb reports whether v is a hugetlbfs mapping, whose pages smaps
// counts apart. PROCMAP_QUERY (Linux 6.11+) gives a mapping's page size;
// before it, only anonymous huge page mappings are known by their name.
// Only file-backed mappings can be hugetlbfs ones (MAP_HUGETLB memory
// is a file of an internal mount, "/anon_hugepage").
func (pc *Pacer) hugetlb(mfd int, v *VMA) bool {
	if len(v.Name) == 0 || v.Name[0] != '/' {
		return false
	}
	if !pc.noQ {
		q := procmapQuery{Size: uint64(unsafe.Sizeof(procmapQuery{})), Addr: v.Start}
		_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(mfd), procmapQueryIoctl, uintptr(unsafe.Pointer(&q)))
		switch {
		case e == 0 && q.VMAStart == v.Start:
			return q.PageSize > pageSize
		case e == syscall.ENOTTY || e == syscall.EINVAL:
			pc.noQ = true
		}
	}
	return bytes.HasPrefix(v.Name, []byte("/anon_hugepage"))
}

// procmapQuery is struct procmap_query of <linux/fs.h>.
type procmapQuery struct {
	Size, Flags, Addr                    uint64
	VMAStart, VMAEnd, VMAFlags           uint64
	PageSize, Offset, Inode              uint64
	DevMajor, DevMinor, NameSize, IDSize uint32
	NameAddr, IDAddr                     uint64
}

// _IOWR('f', 17, struct procmap_query).
const procmapQueryIoctl = 3<<30 | uintptr(unsafe.Sizeof(procmapQuery{}))<<16 | 'f'<<8 | 17

// preadFull reads len(b) bytes at off, or fewer at the end of the file.
func preadFull(fd int, b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := pread(fd, b[n:], int(off)+n)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, mapFileErrno(err)
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// unsafeBytes views a slice of words as bytes, for reading into it.
func unsafeBytes(v []uint64) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*8)
}

// sleep pauses the calling thread for d without the Go scheduler's
// timers, which round a pause this short up to a millisecond or more.
func sleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
