package sample

import "errors"

// Options chooses what a Scanner reads. The zero value (with Root set)
// reads what the default report needs: exact figures and program names.
type Options struct {
	// Root is the procfs mount point, normally "/proc".
	Root string
	// Fast reads only /proc/PID/status (RSS-based estimates) and never
	// walks page tables.
	Fast bool
	// NeedUID makes the scan read each process's real uid.
	NeedUID bool
	// NeedCgroup makes the scan read /proc/PID/cgroup.
	NeedCgroup bool
	// PIDs, when not empty, restricts the scan to these processes.
	PIDs []int
	// Workers bounds the number of parallel readers; 0 means GOMAXPROCS.
	Workers int
}

// Scanner walks a /proc tree. It keeps its buffers between scans, so a
// long-running caller (watch, agent) should reuse one. A Scanner is not
// safe for concurrent use.
type Scanner struct {
	opt Options
}

// NewScanner opens the /proc tree at opt.Root.
func NewScanner(opt Options) (*Scanner, error) {
	return nil, errors.New("not implemented")
}

// Scan walks every process once and fills snap, reusing snap.Procs.
func (s *Scanner) Scan(snap *Snapshot) error {
	return errors.New("not implemented")
}

// Close releases the /proc directory descriptor.
func (s *Scanner) Close() error { return nil }
