package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot/snapserve"
)

// agentSnapshot is what the fake agent serves: two processes no walk of
// this host would find.
func agentSnapshot(taken time.Time) *sample.Snapshot {
	return &sample.Snapshot{
		Time: taken,
		Procs: []sample.Process{
			{PID: 4242, Name: "from-agent-a", Comm: "from-agent-a", UID: 0, UIDKnown: true, Cgroup: "/system.slice/a.service", RAM: 10 << 20, Private: 8 << 20, Shared: 2 << 20},
			{PID: 4343, Name: "from-agent-b", Comm: "from-agent-b", UID: 0, UIDKnown: true, Cgroup: "/system.slice/b.service", RAM: 30 << 20, Private: 30 << 20, Swap: 1 << 20},
		},
		Meminfo:   sample.Meminfo{MemTotal: 1 << 30, MemAvailable: 1 << 29},
		MeminfoOK: true,
	}
}

// startAgent serves snap (taken at its Time) on a unix socket in a new
// directory and returns the socket's path and a count of connections.
func startAgent(t *testing.T, snap *sample.Snapshot) (string, *int) {
	t.Helper()
	return startAgentIn(t, t.TempDir(), snap)
}

// startAgentIn is startAgent with the socket in dir.
func startAgentIn(t *testing.T, dir string, snap *sample.Snapshot) (string, *int) {
	t.Helper()
	sock := filepath.Join(dir, "snapshot.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	n := new(int)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		snapserve.Serve(ctx, ln, func() (*sample.Snapshot, time.Time, bool) {
			*n++
			return snap, snap.Time, true
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return sock, n
}

func runArgs(args ...string) (string, string, int) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

// TestReportFromAgent: with an agent answering on the socket, the report
// shows the agent's snapshot, exact, and says how old it is; --fresh,
// another --proc, a stale snapshot or a broken agent make it walk.
func TestReportFromAgent(t *testing.T) {
	sock, conns := startAgent(t, agentSnapshot(time.Now().Add(-2*time.Second)))

	out, errOut, code := runArgs("--agent-socket", sock, "--by", "pid", "--csv")
	if code != cli.ExitOK || !strings.Contains(out, "from-agent-b [4343]") || strings.Contains(out, "memwho.test") {
		t.Errorf("report from the agent: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.HasPrefix(errOut, "memwho: figures from memwho-agent, 2") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr %q, want one line giving the snapshot's age", errOut)
	}
	out, _, _ = runArgs("--agent-socket", sock, "--by", "cgroup", "--system")
	if !strings.Contains(out, "b.service") {
		t.Errorf("--by cgroup --system from the agent:\n%s", out)
	}

	before := *conns
	out, errOut, _ = runArgs("--agent-socket", sock, "--fresh", "--by", "pid", "--csv")
	if strings.Contains(out, "from-agent") || !strings.Contains(out, "memwho.test") || errOut != "" && strings.Contains(errOut, "memwho-agent") {
		t.Errorf("--fresh used the agent:\n%s%s", out, errOut)
	}
	root := t.TempDir()
	runArgs("--agent-socket", sock, "--proc", root)
	if *conns != before {
		t.Errorf("--fresh or --proc asked the agent (%d connections, want %d)", *conns, before)
	}

	stale, _ := startAgent(t, agentSnapshot(time.Now().Add(-time.Hour)))
	out, errOut, code = runArgs("--agent-socket", stale, "--by", "pid", "--csv")
	if code != cli.ExitOK || strings.Contains(out, "from-agent") || !strings.Contains(errOut, "not using memwho-agent: its snapshot is 1h0m0") {
		t.Errorf("stale snapshot: exit %d\n%s%s", code, out, errOut)
	}
	out, _, _ = runArgs("--agent-socket", stale, "--max-age", "7200", "--by", "pid", "--csv")
	if !strings.Contains(out, "from-agent") {
		t.Errorf("--max-age 7200 did not take an hour-old snapshot:\n%s", out)
	}
	out, errOut, _ = runArgs("--agent-socket", sock, "--conns", "--by", "pid", "--csv")
	if strings.Contains(out, "from-agent") || !strings.Contains(errOut, "no TCP counts") {
		t.Errorf("--conns from an agent without them:\n%s%s", out, errOut)
	}

	// An agent that answers garbage: one note, and a walk.
	junk := filepath.Join(t.TempDir(), "junk.sock")
	ln, err := net.Listen("unix", junk)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Read(make([]byte, 1)) // the request: closing on it unread would reset the connection
			c.Write([]byte("MWSN\x01\xff\xff\xff\x7fgarbage"))
			c.Close()
		}
	}()
	out, errOut, code = runArgs("--agent-socket", junk, "--by", "pid", "--csv")
	if code != cli.ExitOK || !strings.Contains(out, "memwho.test") || strings.Count(errOut, "not using memwho-agent") != 1 {
		t.Errorf("garbage from the agent: exit %d\n%s%s", code, out, errOut)
	}

	// No agent at all: not a word about it.
	out, errOut, _ = runArgs("--agent-socket", filepath.Join(t.TempDir(), "none.sock"), "--by", "pid", "--csv")
	if !strings.Contains(out, "memwho.test") || strings.Contains(errOut, "agent") {
		t.Errorf("no agent: %s%s", out, errOut)
	}
}

// TestReportFromAgentFutureDate: a snapshot dated ahead of the clock by
// more than --max-age (a clock stepped back, or a server that lies) has
// no known age: it is not used (docs/safe.md, second review).
func TestReportFromAgentFutureDate(t *testing.T) {
	ahead, _ := startAgent(t, agentSnapshot(time.Now().Add(time.Hour)))
	out, errOut, code := runArgs("--agent-socket", ahead, "--by", "pid", "--csv")
	if code != cli.ExitOK || strings.Contains(out, "from-agent") || !strings.Contains(errOut, "not using memwho-agent: its snapshot is dated 1h0m0s in the future") {
		t.Errorf("snapshot an hour ahead: exit %d\n%s%s", code, out, errOut)
	}
	// A little ahead (within --max-age) is the same clock read twice.
	near, _ := startAgent(t, agentSnapshot(time.Now().Add(time.Second)))
	if out, errOut, _ := runArgs("--agent-socket", near, "--by", "pid", "--csv"); !strings.Contains(out, "from-agent") {
		t.Errorf("snapshot a second ahead not used:\n%s%s", out, errOut)
	}
}

// TestWatchFromAgent: the plain watch shows the agent's snapshot and says
// where it comes from.
func TestWatchFromAgent(t *testing.T) {
	sock, _ := startAgent(t, agentSnapshot(time.Now()))
	out, errOut, code := runArgs("watch", "--agent-socket", sock, "--plain", "--count", "2", "-n", "0.05", "--by", "pid")
	if code != cli.ExitOK || !strings.Contains(out, "from memwho-agent") || !strings.Contains(out, "from-agent-b [4343]") {
		t.Errorf("watch from the agent: exit %d\n%s%s", code, out, errOut)
	}
}
