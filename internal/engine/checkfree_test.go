package engine

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestCheckFree: record's free-descriptor check under soft
// limits set around what this process has open, the limit restored
// after each. Two breaks: with no number free below the limit the
// listing of /proc/self/fd itself failed with EMFILE, which the check
// took for "cannot tell" and passed; and descriptors numbered at or
// above the limit (opened before it was lowered) were counted as taking
// room under it, so a check with room refused.
func TestCheckFree(t *testing.T) {
	var saved syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved)
	// Twenty descriptors at high numbers, as a shell can hand them
	// over before it lowers its limit.
	high := make([]int, 0, 20)
	for fd := 200; fd < 220; fd++ {
		if err := syscall.Dup2(0, fd); err != nil {
			t.Skip("skipping: cannot dup to", fd, err)
		}
		high = append(high, fd)
	}
	defer func() {
		for _, fd := range high {
			syscall.Close(fd)
		}
	}()
	// unused(k) is the limit under which exactly k numbers are free:
	// the (k+1)-th lowest number not open.
	dir, err := os.Open("/proc/self/fd")
	if err != nil {
		t.Skip("skipping: cannot list /proc/self/fd:", err)
	}
	names, err := dir.Readdirnames(-1)
	own := int(dir.Fd())
	dir.Close()
	if err != nil {
		t.Fatal(err)
	}
	var used []int
	for _, name := range names {
		// The listing's own descriptor is closed again.
		if n, err := strconv.Atoi(name); err == nil && n != own {
			used = append(used, n)
		}
	}
	limitFor := func(free int) uint64 {
		for n := 0; ; n++ {
			if !slices.Contains(used, n) {
				if free == 0 {
					return uint64(n)
				}
				free--
			}
		}
	}
	for _, tc := range []struct {
		name    string
		free    int
		need    int
		wantErr string // "": no error
	}{
		{"none free", 0, 3, "every descriptor is taken: this needs 3 free"},
		{"none free, need 1", 0, 1, "every descriptor is taken"},
		{"one free, need 3", 1, 3, "descriptors are open: this needs 3 free"},
		{"two free, need 3", 2, 3, "this needs 3 free"},
		{"three free, need 3 (twenty open above the limit)", 3, 3, ""},
		{"plenty", 1000, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := syscall.Rlimit{Cur: limitFor(tc.free), Max: saved.Max}
			if lim.Cur > saved.Max {
				t.Skip("skipping: the hard limit is lower")
			}
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
				t.Fatal(err)
			}
			err := CheckFree(tc.need)
			syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("CheckFree(%d) with %d free under %d: %v, want nil", tc.need, tc.free, lim.Cur, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("CheckFree(%d) with %d free under %d: %v, want an error with %q", tc.need, tc.free, lim.Cur, err, tc.wantErr)
			}
		})
	}
}
