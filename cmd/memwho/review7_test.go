package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
)

// TestReview7HintPrivileged: the hint after refused walks says "even
// with CAP_SYS_PTRACE" only for this run's capabilities or the agent's
// socket, never for a snapshot file, whatever the file is called: watch
// compared its source line with "from memwho-agent", so `watch --from
// memwho-agent` (a file of that name) got the agent's hint.
func TestReview7HintPrivileged(t *testing.T) {
	el := privilege.Elevated()
	for _, tc := range []struct {
		from      string
		fromAgent bool
		want      bool
	}{
		{"", false, el},
		{"", true, true},
		{"memwho-agent", false, el},
		{"memwho-agent", true, el}, // report sets fromAgent for a file
		{"./memwho-agent", false, el},
		{"from memwho-agent", false, el},
	} {
		if got := hintPrivileged(tc.from, tc.fromAgent); got != tc.want {
			t.Errorf("hintPrivileged(%q, %v) = %v, want %v", tc.from, tc.fromAgent, got, tc.want)
		}
	}
}

// TestReview7FromFileWarns: a user's own snapshot file with a refused
// walk, named memwho-agent, read by report and by plain watch: the
// warning is there (not hidden), and for a normal user the hint is the
// capability one, not the agent's.
func TestReview7FromFileWarns(t *testing.T) {
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
	}
}
