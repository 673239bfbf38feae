package proc

// Meminfo holds the host-wide lines of /proc/meminfo that memwho uses, in
// bytes.
type Meminfo struct {
	MemTotal          uint64 // MemTotal
	MemFree           uint64 // MemFree
	MemAvailable      uint64 // MemAvailable (kernel 3.14+); see HasMemAvailable
	Buffers           uint64 // Buffers
	Cached            uint64 // Cached: page cache, including Shmem
	SwapCached        uint64 // SwapCached: pages in RAM that keep their swap slot
	ActiveFile        uint64 // Active(file): file pages on the active LRU
	InactiveFile      uint64 // Inactive(file): file pages on the inactive LRU
	SReclaimable      uint64 // SReclaimable: slab the kernel can reclaim
	KReclaimable      uint64 // KReclaimable (kernel 4.20+): SReclaimable and other reclaimable kernel memory
	Shmem             uint64 // Shmem: tmpfs, SysV shm, memfd, shared anonymous
	Mapped            uint64 // Mapped: file and shmem pages mapped by any process, each once
	SwapTotal         uint64 // SwapTotal
	SwapFree          uint64 // SwapFree
	Hugetlb           uint64 // Hugetlb (kernel 4.20+): all huge page pools
	HugePagesTotal    uint64 // HugePages_Total: a count of pages, not bytes
	Hugepagesize      uint64 // Hugepagesize: the default huge page size
	SUnreclaim        uint64 // SUnreclaim: slab the kernel cannot reclaim
	KernelStack       uint64 // KernelStack: kernel stacks of every task
	PageTables        uint64 // PageTables: page tables of user address spaces
	SecPageTables     uint64 // SecPageTables (kernel 6.0+): secondary (IOMMU, KVM) page tables
	VmallocUsed       uint64 // VmallocUsed: vmalloc'd pages (kernel 5.3+; 0 on 4.0 to 5.2)
	Percpu            uint64 // Percpu (kernel 4.18+): per-CPU allocator chunks
	Zswap             uint64 // Zswap (kernel 5.19+): the compressed pool zswap holds in RAM
	Zswapped          uint64 // Zswapped (kernel 5.19+): what that pool holds, uncompressed (swapped-out pages)
	AnonPages         uint64 // AnonPages: anonymous pages mapped by processes, each once
	HardwareCorrupted uint64 // HardwareCorrupted: pages taken out of use after memory errors
	Unaccepted        uint64 // Unaccepted (kernel 6.5+): memory of a confidential VM not yet accepted

	// HasMemAvailable is true when the MemAvailable line was present.
	// Kernels before 3.14 (and some container runtimes' fake meminfo)
	// lack it; see EstimateAvailable.
	HasMemAvailable bool
	// HasMapped is true when the Mapped line was present.
	HasMapped bool
}

// Meminfo reads /proc/meminfo into out.
func (r *Reader) Meminfo(out *Meminfo) error {
	b, err := r.readFile(r.fs.fd, "meminfo\x00", true)
	if err != nil {
		return err
	}
	return ParseMeminfo(b, out)
}

// ParseMeminfo parses the contents of /proc/meminfo. MemTotal is required;
// other lines are optional (older kernels lack some).
func ParseMeminfo(b []byte, out *Meminfo) error {
	*out = Meminfo{}
	if !wholeLines(b) {
		return ErrMalformed
	}
	for len(b) > 0 {
		var key, val []byte
		key, val, b = cutKey(b)
		var field *uint64
		switch string(key) {
		case "MemTotal":
			field = &out.MemTotal
		case "MemFree":
			field = &out.MemFree
		case "MemAvailable":
			field = &out.MemAvailable
			out.HasMemAvailable = true
		case "SwapCached":
			field = &out.SwapCached
		case "Active(file)":
			field = &out.ActiveFile
		case "Inactive(file)":
			field = &out.InactiveFile
		case "SReclaimable":
			field = &out.SReclaimable
		case "KReclaimable":
			field = &out.KReclaimable
		case "Buffers":
			field = &out.Buffers
		case "Cached":
			field = &out.Cached
		case "Shmem":
			field = &out.Shmem
		case "Mapped":
			field = &out.Mapped
			out.HasMapped = true
		case "SwapTotal":
			field = &out.SwapTotal
		case "SwapFree":
			field = &out.SwapFree
		case "Hugetlb":
			field = &out.Hugetlb
		case "Hugepagesize":
			field = &out.Hugepagesize
		case "SUnreclaim":
			field = &out.SUnreclaim
		case "KernelStack":
			field = &out.KernelStack
		case "PageTables":
			field = &out.PageTables
		case "SecPageTables":
			field = &out.SecPageTables
		case "VmallocUsed":
			field = &out.VmallocUsed
		case "Percpu":
			field = &out.Percpu
		case "Zswap":
			field = &out.Zswap
		case "Zswapped":
			field = &out.Zswapped
		case "AnonPages":
			field = &out.AnonPages
		case "HardwareCorrupted":
			field = &out.HardwareCorrupted
		case "Unaccepted":
			field = &out.Unaccepted
		case "HugePages_Total":
			val = trimSpace(val)
			v, n, ok := parseUint(val)
			if !ok || n != len(val) {
				return ErrMalformed
			}
			out.HugePagesTotal = v
			continue
		default:
			continue
		}
		v, ok := parseKB(val)
		if !ok {
			return ErrMalformed
		}
		*field = v
	}
	if out.MemTotal == 0 {
		return ErrMalformed
	}
	if out.Hugetlb == 0 {
		out.Hugetlb = out.HugePagesTotal * out.Hugepagesize
	}
	return nil
}
