package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestReview6SystemFileTable (review6): another user fills the system's
// file table (fs.file-max; only CAP_SYS_ADMIN is exempt, which a normal
// user's memwho, capabilities or not, lacks) while a normal user's
// `memwho watch` runs. It must not die: it did, after the first snapshot,
// with "fatal error: runtime: netpollinit failed" and a goroutine dump,
// at the first interval's timer (the Go runtime makes its poller lazily
// and cannot do without it). Processes it cannot read for want of
// descriptors are counted skipped and warned about, never gone.
//
// The test lowers fs.file-max to a little above what is open, for the
// length of one short watch each time, and restores it: every non-root
// process on the machine is short of files meanwhile, so it runs only as
// root and only when MEMWHO_TEST_FILE_MAX=1 asks for it:
//
//	sudo MEMWHO_TEST_FILE_MAX=1 go test ./cmd/memwho -run TestReview6SystemFileTable -v
func TestReview6SystemFileTable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root to lower fs.file-max and run memwho as another user")
	}
	if os.Getenv("MEMWHO_TEST_FILE_MAX") != "1" {
		t.Skip("skipping: lowers the system-wide fs.file-max for a moment; set MEMWHO_TEST_FILE_MAX=1 to run")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("skipping: setpriv (util-linux) not installed")
	}
	const maxPath = "/proc/sys/fs/file-max"
	old, err := os.ReadFile(maxPath)
	if err != nil {
		t.Skip(err)
	}
	bin := buildMemwho(t)
	// Some processes to read.
	for range 100 {
		c := exec.Command("sleep", "600")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	restore := func() {
		if err := os.WriteFile(maxPath, old, 0); err != nil {
			t.Errorf("restore %s: %v", maxPath, err)
		}
	}
	t.Cleanup(restore)
	for _, slack := range []int{300, 150, 80, 50, 30} {
		b, err := os.ReadFile("/proc/sys/fs/file-nr")
		if err != nil {
			t.Fatal(err)
		}
		nr, _ := strconv.Atoi(strings.Fields(string(b))[0])
		cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
			bin, "watch", "--plain", "--count", "2", "--interval", "0.05")
		if err := os.WriteFile(maxPath, []byte(strconv.Itoa(nr+slack)), 0); err != nil {
			t.Skipf("cannot lower %s: %v", maxPath, err)
		}
		out, err := cmd.CombinedOutput()
		restore()
		s := string(out)
		t.Logf("slack %d: %v\n%s", slack, err, lastLines(s, 6))
		if strings.Contains(s, "fatal error") || strings.Contains(s, "goroutine ") || strings.Contains(s, "panic") {
			t.Errorf("slack %d: memwho died:\n%s", slack, s)
		}
		if err != nil {
			// Refusing at start (setpriv or memwho out of files) is
			// one error line.
			if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 {
				t.Errorf("slack %d: exit 2 (a runtime crash):\n%s", slack, s)
			}
			continue
		}
		if strings.Count(s, " total\n") != 2 {
			t.Errorf("slack %d: want 2 snapshots:\n%s", slack, s)
		}
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
