package proc

import (
	"bytes"
	"os"
)

// Zoneinfo holds what the kernel's own MemAvailable estimate needs from
// /proc/zoneinfo, and the free pages held on per-CPU lists, summed over
// every zone of every node, in bytes.
type Zoneinfo struct {
	// LowWatermark is the sum of the zones' "low" watermarks.
	LowWatermark uint64
	// Reserve is totalreserve_pages: per zone, the largest of its
	// "protection" (lowmem_reserve) entries plus its "high" watermark,
	// capped at its "managed" pages. The page allocator keeps this much
	// free for itself.
	Reserve uint64
	// PCPFree is the sum of the "count:" lines of the zones' pagesets:
	// free pages each CPU keeps on its own lists to allocate without a
	// lock. They are in no line of /proc/meminfo, MemFree included.
	PCPFree uint64
}

// Zoneinfo reads /proc/zoneinfo into out.
func (r *Reader) Zoneinfo(out *Zoneinfo) error {
	b, err := r.readFile(r.fs.fd, "zoneinfo\x00", false)
	if err != nil {
		return err
	}
	return ParseZoneinfo(b, out, uint64(os.Getpagesize()))
}

// ParseZoneinfo parses the contents of /proc/zoneinfo, whose figures are
// in pages of pageSize bytes. It returns ErrMalformed when no zone has
// watermarks.
func ParseZoneinfo(b []byte, out *Zoneinfo, pageSize uint64) error {
	*out = Zoneinfo{}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return ErrMalformed
	}
	// One zone at a time: its reserve needs its own high, managed and
	// protection figures together.
	var high, managed, prot uint64
	inZone, zones := false, 0
	flush := func() {
		if inZone {
			r := prot + high
			if r > managed {
				r = managed
			}
			out.Reserve += r
		}
		high, managed, prot = 0, 0, 0
	}
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		line := b[:nl]
		b = b[nl+1:]
		if bytes.HasPrefix(line, []byte("Node ")) {
			flush()
			inZone = true
			zones++
			continue
		}
		line = trimSpace(line)
		sp := bytes.IndexByte(line, ' ')
		if sp <= 0 {
			continue
		}
		key, val := line[:sp], trimSpace(line[sp:])
		switch string(key) {
		case "low", "high", "managed":
			v, n, ok := parseUint(val)
			if !ok || n != len(val) {
				return ErrMalformed
			}
			switch key[0] {
			case 'l':
				out.LowWatermark += v
			case 'h':
				high = v
			default:
				managed = v
			}
		case "count:":
			v, n, ok := parseUint(val)
			if !ok || n != len(val) || v > MaxBytes/pageSize {
				return ErrMalformed
			}
			// Saturating: a count is at most a few thousand pages,
			// and a forged file may hold any number of them.
			out.PCPFree = min(out.PCPFree+v, MaxBytes/pageSize)
		case "protection:":
			// "(0, 3018, 5322)": the largest entry.
			for len(val) > 0 {
				for len(val) > 0 && (val[0] < '0' || val[0] > '9') {
					val = val[1:]
				}
				v, n, ok := parseUint(val)
				if !ok {
					break
				}
				prot = max(prot, v)
				val = val[n:]
			}
		}
	}
	flush()
	if zones == 0 {
		return ErrMalformed
	}
	out.LowWatermark *= pageSize
	out.Reserve *= pageSize
	out.PCPFree *= pageSize
	return nil
}

// EstimateAvailable computes MemAvailable, in bytes, the way the kernel
// does (si_mem_available in mm/show_mem.c) for a meminfo that lacks the
// line: free memory less what the allocator reserves, plus the page cache
// and reclaimable kernel memory that could be freed without swapping,
// each less what reclaim cannot take without dipping below the low
// watermarks. z may be nil when /proc/zoneinfo cannot be read; the
// watermarks and the reserve then count as zero, which overstates what is
// available (and understates host used).
func EstimateAvailable(m *Meminfo, z *Zoneinfo) uint64 {
	var low, reserve uint64
	if z != nil {
		low, reserve = z.LowWatermark, z.Reserve
	}
	var avail uint64
	if m.MemFree > reserve {
		avail = m.MemFree - reserve
	}
	pagecache := m.ActiveFile + m.InactiveFile
	avail += pagecache - min(pagecache/2, low)
	reclaimable := m.KReclaimable
	if reclaimable == 0 {
		// Before 4.20 the kernel counted reclaimable slab alone.
		reclaimable = m.SReclaimable
	}
	avail += reclaimable - min(reclaimable/2, low)
	return min(avail, m.MemTotal)
}
