package main

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/proc/proctest"
)

// lockedBuffer is a bytes.Buffer that a command writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWatchPlainHangup: `memwho watch --plain` whose terminal hangs up
// (SIGHUP) stops as at SIGTERM: exit 0, the snapshots written so far
// kept. It caught SIGHUP and dropped it, so a `watch --plain > file`
// outlived the terminal it was started from. Started under nohup
// (SIGHUP ignored), it goes on until SIGTERM.
func TestWatchPlainHangup(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("skipping: no bash")
	}
	bin := buildMemwho(t)
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	for _, tc := range []struct {
		name  string
		trap  string
		stops bool // at SIGHUP
	}{
		{"SIGHUP", "", true},
		{"SIGHUP ignored (nohup)", "trap '' HUP; ", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bash, "-c", tc.trap+`exec "$0" "$@"`, bin, "watch", "--plain", "--proc", root, "--interval", "100ms")
			var stdout, stderr lockedBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stdout.String(), "total"); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("no snapshot in 10 s; stderr: %s", stderr.String())
				}
			}
			cmd.Process.Signal(syscall.SIGHUP)
			if !tc.stops {
				select {
				case err := <-exited:
					t.Fatalf("an ignored SIGHUP ended it: %v; stderr: %s", err, stderr.String())
				case <-time.After(500 * time.Millisecond):
				}
				cmd.Process.Signal(syscall.SIGTERM)
			}
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("still running 10 s after the signal; stderr: %s", stderr.String())
			}
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() || ws.ExitStatus() != 0 {
				t.Errorf("ended with %v, want exit 0; stderr: %s", cmd.ProcessState, stderr.String())
			}
			if n := strings.Count(stdout.String(), "total"); n == 0 {
				t.Errorf("no snapshot kept:\n%s", stdout.String())
			}
		})
	}
}
