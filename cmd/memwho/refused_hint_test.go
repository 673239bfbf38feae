package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
)

// TestHintPrivileged: the hint after refused walks says "even
// with CAP_SYS_PTRACE" only for this run's capabilities or the agent's
// socket, never for a snapshot file, whatever the file is called: watch
// compared its source line with "from memwho-agent", so `watch --from
// memwho-agent` (a file of that name) got the agent's hint.
func TestHintPrivileged(t *testing.T) {
	self := report.ScannerSelf
	if privilege.Elevated() {
		self = report.ScannerPrivileged
	}
	for _, tc := range []struct {
		from      string
		fromAgent bool
		want      report.Scanner
	}{
		{"", false, self},
		{"", true, report.ScannerPrivileged},
		// A file is its taker's, whatever it is called and whoever
		// reads it.
		{"memwho-agent", false, report.ScannerFile},
		{"memwho-agent", true, report.ScannerFile}, // report sets fromAgent for a file
		{"./memwho-agent", false, report.ScannerFile},
		{"from memwho-agent", false, report.ScannerFile},
	} {
		if got := scanner(tc.from, tc.fromAgent); got != tc.want {
			t.Errorf("scanner(%q, %v) = %v, want %v", tc.from, tc.fromAgent, got, tc.want)
		}
	}
}

// TestFromFileWarns: a user's own snapshot file with a refused
// walk, named memwho-agent, read by report and by plain watch: the
// warning is there (not hidden), and for a normal user the hint is the
// capability one, not the agent's.
func TestFromFileWarns(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	snap := &sample.Snapshot{
		Procs: []sample.Process{
			{PID: 4242, Comm: "victim", Accuracy: sample.Estimate, Cause: sample.CauseDenied, RAM: 1 << 20},
			{PID: 4243, Comm: "mine", RAM: 1 << 20},
		},
		Denied: 1,
	}
	f, err := os.Create("memwho-agent")
	if err != nil {
		t.Fatal(err)
	}
	if err := snapshot.WriteFile(f, snap, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--from", "memwho-agent", "--by", "pid"},
		{"watch", "--plain", "--count", "1", "--from", "memwho-agent", "--by", "pid"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		name := strings.Join(args, " ")
		if code != 0 {
			t.Errorf("%s: exit %d\n%s%s", name, code, stdout.String(), stderr.String())
			continue
		}
		if !strings.Contains(stderr.String(), "1 of 2 processes are RSS-based estimates") {
			t.Errorf("%s: no warning:\n%s", name, stderr.String())
		}
		if os.Geteuid() != 0 && !privilege.Elevated() && strings.Contains(stderr.String(), "even with CAP_SYS_PTRACE") {
			t.Errorf("%s: a user's own file got the agent's hint:\n%s", name, stderr.String())
		}
		// Whoever reads it: the file's taker was refused (audit,
		// 2026-11-26: root was told "even root may not").
		if !strings.Contains(stderr.String(), "whoever took it could not walk these processes") || strings.Contains(stderr.String(), "even root") {
			t.Errorf("%s: not the file's hint:\n%s", name, stderr.String())
		}
	}
}

// TestFakeAgentWarns: a user's own "agent" (any server on a
// socket the user names with --agent-socket) serving a refused walk:
// report and plain watch still warn. The hint is the agent's ("even
// with CAP_SYS_PTRACE"): the client checks no peer credentials, so it
// trusts the socket it was given; the default one is under root's /run.
func TestFakeAgentWarns(t *testing.T) {
	snap := agentSnapshot(time.Now())
	snap.Procs[0].Accuracy, snap.Procs[0].Cause = sample.Estimate, sample.CauseDenied
	snap.Denied = 1
	sock, _ := startAgent(t, snap)
	for _, args := range [][]string{
		{"--agent-socket", sock, "--by", "pid"},
		{"watch", "--agent-socket", sock, "--plain", "--count", "1", "--by", "pid"},
	} {
		out, errOut, code := runArgs(args...)
		name := strings.Join(args[:1], " ")
		if code != 0 {
			t.Errorf("%s: exit %d\n%s%s", name, code, out, errOut)
			continue
		}
		if !strings.Contains(errOut, "1 of 2 processes are RSS-based estimates") {
			t.Errorf("%s: the warning is gone:\n%s", name, errOut)
		}
		if os.Geteuid() != 0 && !strings.Contains(errOut, "even with CAP_SYS_PTRACE") {
			t.Errorf("%s: not the agent's hint:\n%s", name, errOut)
		}
	}
}
