package cli

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStartPollerRefuses: when the kernel would refuse
// the runtime's poller (here: RLIMIT_NOFILE at what is open, EMFILE; in
// the attack, another user filling fs.file-max, ENFILE), StartPoller
// returns an error for one line on stderr, where the runtime would die
// with a goroutine dump (TestSystemFileTable in cmd/memwho runs
// the attack itself). The limit is set in a child, this test binary
// again.
func TestStartPollerRefuses(t *testing.T) {
	if os.Getenv("MEMWHO_POLLER_CHILD") == "1" {
		// The lowest free descriptor number: a limit there leaves
		// no descriptor to open.
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		n := uint64(fd)
		rl := unix.Rlimit{Cur: n, Max: n}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
			t.Fatal(err)
		}
		err = StartPoller()
		unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 1024, Max: 1024})
		if err == nil || !strings.Contains(err.Error(), "cannot start") {
			t.Fatalf("StartPoller at a full descriptor table = %v, want an error", err)
		}
		t.Logf("refused: %v", err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestStartPollerRefuses$", "-test.v")
	cmd.Env = append(os.Environ(), "MEMWHO_POLLER_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "refused:") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if err := StartPoller(); err != nil {
		t.Errorf("StartPoller with descriptors to spare: %v", err)
	}
}
