package proc

// Status holds the fields of /proc/PID/status that memwho uses. Sizes are
// in bytes.
type Status struct {
	// Name is the Name: line as the kernel prints it, which escapes
	// newlines and backslashes; Stat.Comm has the raw bytes.
	Name    [64]byte
	NameLen int
	State   byte   // first letter of State:, e.g. 'S', 'R', 'Z'
	Tgid    int    // Tgid:
	PPid    int    // PPid:
	UID     uint32 // real uid: first field of Uid:
	EUID    uint32 // effective uid: second field of Uid:
	// Threads is the Threads: line, the number of threads in the
	// process. A zombie leader with Threads above 1 has exited alone:
	// its process lives on in the other threads (see Reader.SelectTask).
	Threads int
	// HasMM is true when the status has VmRSS, that is, the process has
	// an address space (not a kernel thread or zombie).
	HasMM        bool
	VmRSS        uint64 // VmRSS: resident set size (RssAnon+RssFile+RssShmem)
	RssAnon      uint64 // RssAnon (kernel 4.5+): resident anonymous memory
	RssFile      uint64 // RssFile: resident file mappings
	RssShmem     uint64 // RssShmem: resident shmem, including SysV shm and memfd
	VmSwap       uint64 // VmSwap: swapped-out anonymous memory, shared pages in full
	HugetlbPages uint64 // HugetlbPages (kernel 4.4+): hugetlbfs pages mapped
}

// NameBytes returns Name as a slice.
func (s *Status) NameBytes() []byte { return s.Name[:s.NameLen] }

// Status reads /proc/PID/status of the open process into out.
func (r *Reader) Status(out *Status) error {
	b, err := r.readTaskFile("status\x00")
	if err != nil {
		return err
	}
	return ParseStatus(b, out)
}

// ParseStatus parses the contents of /proc/PID/status. Memory lines must
// all be complete: a status cut short returns ErrMalformed rather than a
// figure missing some of its parts.
//
// Parsing ends at the Threads: line, the last field memwho uses: every
// kernel prints it (task_sig, never skipped) after the name, the ids and
// the memory lines (task_name, task_state, task_mem), and the 20-odd
// lines after it (signal and capability masks, CPU and node lists) are
// about half the file's bytes. A file without Threads: is parsed to its
// end.
func ParseStatus(b []byte, out *Status) error {
	*out = Status{}
	if !wholeLines(b) {
		return ErrMalformed
	}
	var seenName, seenUID, seenVmSize bool
	for len(b) > 0 {
		var key, val []byte
		key, val, b = cutKey(b)
		var field *uint64
		switch string(key) {
		case "Name":
			if len(val) > 0 && val[0] == '\t' {
				val = val[1:]
			}
			out.NameLen = copy(out.Name[:], val)
			seenName = true
			continue
		case "State":
			v := trimSpace(val)
			if len(v) == 0 {
				return ErrMalformed
			}
			out.State = v[0]
			continue
		case "Threads":
			v, _, ok := parseUint(trimSpace(val))
			if !ok || v > 1<<31 {
				return ErrMalformed
			}
			out.Threads = int(v)
			// The last field used: see above.
			b = nil
			continue
		case "Tgid", "PPid":
			v, _, ok := parseUint(trimSpace(val))
			if !ok || v > 1<<31 {
				return ErrMalformed
			}
			if key[0] == 'T' {
				out.Tgid = int(v)
			} else {
				out.PPid = int(v)
			}
			continue
		case "Uid":
			v := trimSpace(val)
			u, n, ok := parseUint(v)
			if !ok || u > 1<<32-1 {
				return ErrMalformed
			}
			v = trimSpace(v[n:])
			e, _, ok := parseUint(v)
			if !ok || e > 1<<32-1 {
				return ErrMalformed
			}
			out.UID, out.EUID = uint32(u), uint32(e)
			seenUID = true
			continue
		case "VmSize":
			seenVmSize = true
			continue
		case "VmRSS":
			field = &out.VmRSS
			out.HasMM = true
		case "RssAnon":
			field = &out.RssAnon
		case "RssFile":
			field = &out.RssFile
		case "RssShmem":
			field = &out.RssShmem
		case "VmSwap":
			field = &out.VmSwap
		case "HugetlbPages":
			field = &out.HugetlbPages
		default:
			continue
		}
		v, ok := parseKB(val)
		if !ok {
			return ErrMalformed
		}
		*field = v
	}
	// A status with VmSize but no VmRSS was cut short between the two.
	if !seenName || !seenUID || seenVmSize != out.HasMM {
		return ErrMalformed
	}
	return nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// UnescapeName appends to dst the raw task name that the Name: line of
// status shows escaped: the kernel prints a newline as `\n` and a
// backslash as `\\`, and every other byte as it is.
func UnescapeName(dst, name []byte) []byte {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '\\' && i+1 < len(name) {
			switch name[i+1] {
			case 'n':
				dst = append(dst, '\n')
				i++
				continue
			case '\\':
				dst = append(dst, '\\')
				i++
				continue
			}
		}
		dst = append(dst, c)
	}
	return dst
}
