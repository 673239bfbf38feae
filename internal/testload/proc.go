package testload

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
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

// WaitLeaderExited waits up to timeout for the main thread of pid (a child
// started with Spec.LeaderExit) to exit while other threads run on, and
// returns one of those threads: /proc/PID/task/TID/smaps_rollup of it is
// the ground truth for the process's memory.
func WaitLeaderExited(pid int, timeout time.Duration) (tid int, err error) {
	deadline := time.Now().Add(timeout)
	for {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return 0, err
		}
		if bytes.Contains(st, []byte("\nState:\tZ")) && !bytes.Contains(st, []byte("\nThreads:\t1\n")) {
			ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
			if err != nil {
				return 0, err
			}
			for _, e := range ents {
				if t, _ := strconv.Atoi(e.Name()); t != pid && t > 0 {
					return t, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("main thread of %d did not exit alone within %v", pid, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
