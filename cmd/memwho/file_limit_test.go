package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestSystemFileTable: another user fills the system's
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
//	sudo MEMWHO_TEST_FILE_MAX=1 go test ./cmd/memwho -run TestSystemFileTable -v
func TestSystemFileTable(t *testing.T) {
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

// TestLowFileLimitCommands: every scanning command under
// a low open-file limit (prlimit --nofile=N:N, N from the lowest accepted
// up), reading 60 processes (watch: every process): no crash, exit 0,
// every process listed in every snapshot (none skipped or lost for want
// of descriptors), and a snapshot file that reads back whole.
func TestLowFileLimitCommands(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("skipping: prlimit (util-linux) not installed")
	}
	bin := buildMemwho(t)
	var pids []string
	for range 60 {
		c := exec.Command("sleep", "600")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		pids = append(pids, strconv.Itoa(c.Process.Pid))
	}
	list := strings.Join(pids, ",")
	dir := t.TempDir()
	for _, n := range []int{16, 17, 20, 24, 32, 40} {
		lim := "--nofile=" + strconv.Itoa(n) + ":" + strconv.Itoa(n)
		snapFile := dir + "/s" + strconv.Itoa(n)
		for _, tc := range []struct {
			args   []string
			totals int // lines ending "60  total" (watch: " total")
		}{
			{[]string{"-p", list, "--fresh"}, 1},
			{[]string{"-p", list, "--fresh", "--conns", "--by", "cgroup"}, 1},
			{[]string{"watch", "--plain", "--count", "3", "--interval", "10ms", "--fresh"}, 3},
			{[]string{"watch", "--plain", "--count", "3", "--interval", "10ms", "--fresh", "--conns"}, 3},
			{[]string{"snapshot", "--fresh", "-o", snapFile}, 0},
		} {
			cmd := exec.Command(prlimit, append([]string{lim, bin}, tc.args...)...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			all := string(out) + stderr.String()
			name := strconv.Itoa(n) + " " + strings.Join(tc.args[:min(len(tc.args), 2)], " ")
			if strings.Contains(all, "fatal error") || strings.Contains(all, "goroutine ") || strings.Contains(all, "panic") {
				t.Errorf("%s: memwho died:\n%s", name, all)
				continue
			}
			if err != nil {
				t.Errorf("%s: %v\n%s", name, err, all)
				continue
			}
			if strings.Contains(stderr.String(), "skipped") {
				t.Errorf("%s: processes skipped:\n%s", name, stderr.String())
			}
			want := " 60  total\n"
			if tc.args[0] == "watch" {
				// Every process of the host: the count moves with
				// the host's; "skipped" above says none was left out.
				want = " total\n"
			}
			if got := strings.Count(string(out), want); got != tc.totals {
				t.Errorf("%s: %d snapshots of all 60 processes, want %d:\n%s", name, got, tc.totals, all)
			}
		}
		// The snapshot reads back, every process in it.
		cmd := exec.Command(bin, "--from", snapFile, "-p", list)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), " 60  total\n") {
			t.Errorf("%d: the snapshot file does not read back whole: %v\n%s", n, err, out)
		}
	}
}
