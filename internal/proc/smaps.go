package proc

// Rollup holds the summed memory counters of one address space, as
// /proc/PID/smaps_rollup reports them (or as a per-VMA sum of
// /proc/PID/smaps). Every field is in bytes.
type Rollup struct {
	Rss            uint64 // Rss: resident pages, shared ones counted in full
	Pss            uint64 // Pss: resident pages, each divided by its map count
	PssAnon        uint64 // Pss_Anon (kernel 5.8+)
	PssFile        uint64 // Pss_File (kernel 5.8+)
	PssShmem       uint64 // Pss_Shmem (kernel 5.8+)
	SharedClean    uint64 // Shared_Clean
	SharedDirty    uint64 // Shared_Dirty
	PrivateClean   uint64 // Private_Clean
	PrivateDirty   uint64 // Private_Dirty
	Anonymous      uint64 // Anonymous
	SharedHugetlb  uint64 // Shared_Hugetlb: hugetlbfs pages mapped by others too, not in Pss
	PrivateHugetlb uint64 // Private_Hugetlb: hugetlbfs pages only we map, not in Pss
	Swap           uint64 // Swap: swapped-out pages, shared ones counted in full
	SwapPss        uint64 // SwapPss (kernel 4.3+): swapped-out pages divided among sharers
	Locked         uint64 // Locked: mlocked, in Pss terms

	// HasPss is true when a Pss line was present; a file without one is
	// not a memory summary.
	HasPss bool
	// HasSwapPss is true when a SwapPss line was present.
	HasSwapPss bool

	// Paced is true when the figures were read page by page from
	// pagemap (Reader.Paced) rather than from smaps_rollup: the
	// clean/dirty split is then unknown (all of it is in PrivateDirty
	// and SharedDirty) and Locked is not counted.
	Paced bool
	// Bound is how far Pss may be from the truth, in bytes: pages the
	// kernel says are shared, without memwho learning by how many
	// processes (no frame lookups, or past the lookup sample), have
	// estimated shares. 0 when every page's share is known.
	Bound uint64
	// SwapBound is how much SwapPss may overstate the truth, in bytes:
	// a paced read counts every swapped-out page in full.
	SwapBound uint64
}

// SmapsRollup reads /proc/PID/smaps_rollup of the open process into out.
// It returns ErrNotExist on kernels without smaps_rollup (before 4.14),
// ErrNoMM for kernel threads and zombies, ErrDenied without ptrace access.
//
// A rollup without SwapPss is malformed: every kernel with smaps_rollup
// (4.14+) prints it, so its absence means the file was cut short.
func (r *Reader) SmapsRollup(out *Rollup) error {
	b, err := r.readFile(r.pidfd, "smaps_rollup\x00", true)
	return sumInto(out, b, err, true)
}

// TakeHeld hands the smaps_rollup descriptor Hold opened over to the
// caller, who reads it with RollupFD, as many times as it likes, and
// closes it; it returns -1 when nothing is held. It returns -1 for smaps
// too: smaps is printed a mapping at a time, and RollupFD reads one piece.
func (r *Reader) TakeHeld() int {
	if r.held < 0 || !r.heldSingle {
		return -1
	}
	fd := r.held
	r.held = -1
	return fd
}

// RollupFD reads smaps_rollup through a descriptor kept from an earlier
// read (TakeHeld) into out, from its start: procfs prints the file again,
// walking the page tables again, for every read at offset 0, which saves
// the open and close of reading it by path.
//
// The descriptor is bound to the address space it was opened for: once
// the process has exited or replaced it by an exec, the read fails (the
// kernel says ESRCH: ErrNoMM) even if the PID names a live process. A
// successful read therefore also proves the process lived, with the same
// address space, until the read. Errors are those of SmapsRollup.
func (r *Reader) RollupFD(fd int, out *Rollup) error {
	b, err := r.preadFD(fd, MaxSmallFile)
	return sumInto(out, b, err, true)
}

// RollupHeld reads the smaps_rollup or smaps that Hold opened into out,
// with the errors of SmapsRollup.
func (r *Reader) RollupHeld(out *Rollup) error {
	rollup := r.heldSingle // smaps_rollup, not smaps
	b, err := r.readHeld()
	return sumInto(out, b, err, rollup)
}

// Smaps reads /proc/PID/smaps of the open process and sums it per VMA into
// out: the fallback for kernels without smaps_rollup, and the reference the
// rollup is tested against.
func (r *Reader) Smaps(out *Rollup) error {
	b, err := r.ReadFile("smaps\x00")
	return sumInto(out, b, err, false)
}

// sumInto is the step shared by every reader of smaps and smaps_rollup:
// after a successful read, parse b into a zeroed out. rollup says b is
// smaps_rollup, which must have SwapPss.
func sumInto(out *Rollup, b []byte, err error, rollup bool) error {
	if err != nil {
		return err
	}
	*out = Rollup{}
	if err := parseMemLines(b, out); err != nil {
		return err
	}
	if rollup && !out.HasSwapPss {
		return ErrMalformed
	}
	return nil
}

// ParseRollup parses the contents of smaps_rollup or smaps into out,
// summing every counter over all the lines that carry it. It returns
// ErrNoMM for an empty file and ErrMalformed when the text is cut short
// or a counter is not a number.
//
// A file cut at a line boundary looks whole, so the counters memwho's
// figures rest on must all be there: Rss, Pss, Shared_Clean,
// Shared_Dirty, Private_Clean, Private_Dirty, Swap and Locked (the last
// line the kernel prints for a mapping or a rollup) once per mapping,
// and SwapPss on every mapping or on none (kernels before 4.3). A smaps
// cut exactly between two mappings cannot be told from a whole one.
func ParseRollup(b []byte, out *Rollup) error {
	*out = Rollup{}
	return parseMemLines(b, out)
}

// parseMemLines adds the "Key:   N kB" counters in b to out. Lines that are
// not counters (VMA headers, VmFlags, THPeligible) are skipped. A counter
// line that is cut short makes the whole file malformed: a partial sum
// would be a wrong total.
func parseMemLines(b []byte, out *Rollup) error {
	if len(b) == 0 {
		return ErrNoMM
	}
	if !wholeLines(b) {
		return ErrMalformed
	}
	// How many times each required counter was seen, indexed by the
	// req* constants; Pss is counted by nPss.
	var seen [reqCount]int
	nPss, nSwapPss := 0, 0
	for len(b) > 0 {
		var key, val []byte
		key, val, b = cutKey(b)
		var field *uint64
		switch string(key) {
		case "Rss":
			field = &out.Rss
			seen[reqRss]++
		case "Pss":
			field = &out.Pss
			out.HasPss = true
			nPss++
		case "Pss_Anon":
			field = &out.PssAnon
		case "Pss_File":
			field = &out.PssFile
		case "Pss_Shmem":
			field = &out.PssShmem
		case "Shared_Clean":
			field = &out.SharedClean
			seen[reqSharedClean]++
		case "Shared_Dirty":
			field = &out.SharedDirty
			seen[reqSharedDirty]++
		case "Private_Clean":
			field = &out.PrivateClean
			seen[reqPrivateClean]++
		case "Private_Dirty":
			field = &out.PrivateDirty
			seen[reqPrivateDirty]++
		case "Anonymous":
			field = &out.Anonymous
		case "Shared_Hugetlb":
			field = &out.SharedHugetlb
		case "Private_Hugetlb":
			field = &out.PrivateHugetlb
		case "Swap":
			field = &out.Swap
			seen[reqSwap]++
		case "SwapPss":
			field = &out.SwapPss
			out.HasSwapPss = true
			nSwapPss++
		case "Locked":
			field = &out.Locked
			seen[reqLocked]++
		default:
			continue
		}
		v, ok := parseKB(val)
		if !ok || *field+v > MaxBytes {
			return ErrMalformed
		}
		*field += v
	}
	if !out.HasPss {
		return ErrMalformed
	}
	for _, n := range seen {
		if n != nPss {
			return ErrMalformed
		}
	}
	if nSwapPss != 0 && nSwapPss != nPss {
		return ErrMalformed
	}
	return nil
}

// Indexes of the counters parseMemLines requires besides Pss.
const (
	reqRss = iota
	reqSharedClean
	reqSharedDirty
	reqPrivateClean
	reqPrivateDirty
	reqSwap
	reqLocked
	reqCount
)

// parseKB parses "   1234 kB" into bytes. The unit must be present: a
// number without it is a line cut short.
func parseKB(b []byte) (uint64, bool) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	v, n, ok := parseUint(b[i:])
	if !ok {
		return 0, false
	}
	rest := b[i+n:]
	if len(rest) != 3 || rest[0] != ' ' || rest[1] != 'k' || rest[2] != 'B' {
		return 0, false
	}
	if v > MaxBytes/1024 {
		return 0, false
	}
	return v * 1024, true
}

// MaxBytes is the largest figure, in bytes, a memory counter may hold:
// 4 PiB, the most physical memory x86-64's 52-bit addresses can reach. A
// larger value is a malformed file, not memory. A sum over many
// processes could still pass 2^64 (2^22 PIDs × 2^52 bytes), so the
// totals in package sample saturate instead of wrapping.
const MaxBytes = 1 << 52

// parseUint parses leading decimal digits; it reports how many bytes it
// used and fails on no digits or overflow.
func parseUint(b []byte) (v uint64, n int, ok bool) {
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		d := uint64(b[n] - '0')
		if v > (1<<64-1-d)/10 {
			return 0, 0, false
		}
		v = v*10 + d
		n++
	}
	return v, n, n > 0
}
