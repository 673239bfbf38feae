package testload

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcKB reads a /proc/PID file of "Key:   N kB" lines (smaps_rollup,
// status) and returns the kB fields in bytes. Lines without a kB value
// are left out. It is deliberately independent of memwho's own parsers:
// tests use it as the ground truth the scanner is compared with.
func ProcKB(pid int, file string) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return nil, err
	}
	m := make(map[string]int64)
	for _, line := range bytes.Split(b, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		f := strings.Fields(string(v))
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		m[string(k)] = n << 10
	}
	return m, nil
}

// StartTime returns field 22 of /proc/PID/stat (clock ticks since boot),
// which with the pid identifies a process across pid reuse.
func StartTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// comm (field 2) may contain spaces and parentheses: fields are
	// counted from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat of %d: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("stat of %d: %d fields", pid, len(f)+2)
	}
	return strconv.ParseUint(f[19], 10, 64)
}
