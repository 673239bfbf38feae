package agent

import (
	"os"
	"syscall"
	"testing"
)

// TestCountFDsBySize: the fstat size of /proc/self/fd, where the kernel
// gives it (6.2 and later), counts what listing the directory counts.
func TestCountFDsBySize(t *testing.T) {
	var s selfStats
	fd, err := syscall.Open("/proc/self/fd", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Skip(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Size == 0 {
		syscall.Close(fd)
		t.Skip("this kernel gives /proc/self/fd no size (before 6.2)")
	}
	// Open a few more so the count is not trivially small.
	for range 5 {
		f, err := os.Open("/dev/null")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	listed, ok := s.listFDs(fd)
	// listFDs leaves out fd, the directory it reads, and countFDs its
	// own: with fd closed, both count the same set.
	syscall.Close(fd)
	if !ok {
		t.Fatal("listing failed")
	}
	got, ok := s.countFDs()
	if !ok || got != listed {
		t.Errorf("countFDs = %d, %v; listing gives %d", got, ok, listed)
	}
}

func TestParseUint(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"1234", 1234, true},
		{"1795660000\nprocesses 1\n", 1795660000, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"", 0, false},
		{"x", 0, false},
		// Found by FuzzParseUint: these wrapped.
		{"18446744073709551616", 0, false},
		{"20000000000000000000", 0, false},
	} {
		if got, ok := parseUint([]byte(tc.in)); got != tc.want || ok != tc.ok {
			t.Errorf("parseUint(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
