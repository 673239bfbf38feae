package testload

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

const nrHugepages = "/proc/sys/vm/nr_hugepages"

// EnsureHugePages makes the 2 MiB hugetlb pool hold at least n free pages
// for the rest of the test, and gives the pool back its size at the end:
// the pages it added, never more. It takes the swap tests' lock so that
// two tests do not size the pool at once. It skips the test when not
// root, and when the kernel cannot find n free huge pages.
func EnsureHugePages(t testing.TB, n int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: sizing the hugetlb pool needs root")
	}
	holdSwapLock(t)
	before, err := readInt(nrHugepages)
	if err != nil {
		t.Skipf("skipping: no hugetlb pool: %v", err)
	}
	free, err := hugeFree()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	if free >= n {
		return
	}
	want := before + n - free
	if err := os.WriteFile(nrHugepages, []byte(strconv.Itoa(want)), 0); err != nil {
		t.Skipf("skipping: %s: %v", nrHugepages, err)
	}
	t.Cleanup(func() {
		// Shrinking frees only unused pages: once the test's
		// processes are gone, all that were added.
		if err := os.WriteFile(nrHugepages, []byte(strconv.Itoa(before)), 0); err != nil {
			t.Errorf("restore %s to %d: %v", nrHugepages, before, err)
		}
	})
	if free, _ = hugeFree(); free < n {
		t.Skipf("skipping: the kernel found %d free huge pages of the %d asked for", free, n)
	}
}

func readInt(file string) (int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// hugeFree returns HugePages_Free of /proc/meminfo.
func hugeFree() (int, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "HugePages_Free:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, os.ErrNotExist
}
