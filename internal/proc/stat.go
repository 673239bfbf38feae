package proc

import "bytes"

// PFKthread is the PF_KTHREAD bit of the flags field of /proc/PID/stat.
const PFKthread = 0x00200000

// Stat holds the fields of /proc/PID/stat that memwho uses.
type Stat struct {
	// Comm is the task name as raw bytes, exactly as the kernel keeps it:
	// it may contain spaces, parentheses, newlines and invalid UTF-8.
	Comm    [64]byte
	CommLen int
	State   byte   // field 3
	PPid    int    // field 4
	Flags   uint64 // field 9, PF_* bits
	// StartTime is field 22: when the process started, in clock ticks
	// since boot. With the PID it identifies a process across PID reuse.
	StartTime uint64
}

// CommBytes returns Comm as a slice.
func (s *Stat) CommBytes() []byte { return s.Comm[:s.CommLen] }

// Kthread reports whether the task is a kernel thread.
func (s *Stat) Kthread() bool { return s.Flags&PFKthread != 0 }

// Stat reads /proc/PID/stat of the open process into out.
func (r *Reader) Stat(out *Stat) error {
	b, err := r.readTaskFile("stat\x00")
	if err != nil {
		return err
	}
	return ParseStat(b, out)
}

// ParseStat parses the contents of /proc/PID/stat. The name sits between
// the first "(" and the last ")", because the name itself may contain
// parentheses and spaces; the numeric fields follow the last ")".
func ParseStat(b []byte, out *Stat) error {
	*out = Stat{}
	open := bytes.IndexByte(b, '(')
	close := bytes.LastIndexByte(b, ')')
	if open < 0 || close < open {
		return ErrMalformed
	}
	out.CommLen = copy(out.Comm[:], b[open+1:close])
	rest := b[close+1:]
	// Fields after the name are numbered from 3 (state).
	field := 2
	for len(rest) > 0 && field < 22 {
		if rest[0] != ' ' {
			return ErrMalformed
		}
		rest = rest[1:]
		field++
		end := bytes.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		tok := rest[:end]
		rest = rest[end:]
		switch field {
		case 3:
			if len(tok) != 1 {
				return ErrMalformed
			}
			out.State = tok[0]
		case 4:
			v, n, ok := parseUint(tok)
			if !ok || n != len(tok) || v > 1<<31 {
				return ErrMalformed
			}
			out.PPid = int(v)
		case 9:
			v, n, ok := parseUint(tok)
			if !ok || n != len(tok) {
				return ErrMalformed
			}
			out.Flags = v
		case 22:
			v, n, ok := parseUint(trimNL(tok))
			if !ok || n != len(trimNL(tok)) {
				return ErrMalformed
			}
			out.StartTime = v
		}
	}
	if field < 22 {
		return ErrMalformed
	}
	return nil
}

func trimNL(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		return b[:len(b)-1]
	}
	return b
}
