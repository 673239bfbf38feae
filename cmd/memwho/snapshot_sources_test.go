package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
)

// What a snapshot file and the agent's snapshot say of their figures:
// where they came from, when they were taken and how stale they may be.

// writeSnap writes s as a snapshot file taken at taken, in a new directory.
func writeSnap(t *testing.T, s *sample.Snapshot, taken time.Time) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.mwsnap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := snapshot.WriteFile(f, s, taken); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSnapshotFromAgentTaken: a snapshot file made from the
// agent's snapshot is dated by the agent's walk, not by the copy: it was
// dated now, so diff's "later" was off by the snapshot's age.
func TestSnapshotFromAgentTaken(t *testing.T) {
	walked := time.Now().Add(-20 * time.Second).Truncate(time.Second)
	sock, _ := startAgent(t, agentSnapshot(walked))
	path := filepath.Join(t.TempDir(), "a.mwsnap")
	if _, errOut, code := runArgs("snapshot", "--agent-socket", sock, "-o", path); code != cli.ExitOK {
		t.Fatalf("snapshot from the agent: exit %d: %s", code, errOut)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	taken, err := snapshot.ReadFile(f, new(sample.Snapshot))
	if err != nil {
		t.Fatal(err)
	}
	if !taken.Equal(walked) {
		t.Errorf("file dated %s, want the agent's walk at %s", taken, walked)
	}
}

// TestFromConns: --from FILE --conns with a file that holds no TCP
// counts dropped the column without a word (exit 0); it is an error now.
// A file that holds them shows them.
func TestFromConns(t *testing.T) {
	s := agentSnapshot(time.Now())
	path := writeSnap(t, s, s.Time)
	out, errOut, code := runArgs("--from", path, "--conns", "--csv")
	if code != cli.ExitFailure || out != "" || !strings.Contains(errOut, "--conns: "+path+" holds no TCP counts") {
		t.Errorf("--from without TCP counts, --conns: exit %d\n%s%s", code, out, errOut)
	}
	s.ConnsOK = true
	s.Procs[0].Conns = 7
	path = writeSnap(t, s, s.Time)
	out, errOut, code = runArgs("--from", path, "--conns", "--csv")
	if code != cli.ExitOK || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "tcp_established") {
		t.Errorf("--from with TCP counts, --conns: exit %d\n%s%s", code, out, errOut)
	}
}

// TestFromSystemNoMeminfo: --system with a file that holds no
// meminfo named /proc/meminfo, which was never read; it names the file.
func TestFromSystemNoMeminfo(t *testing.T) {
	s := agentSnapshot(time.Now())
	s.MeminfoOK = false
	path := writeSnap(t, s, s.Time)
	_, errOut, code := runArgs("--from", path, "--system")
	if code != cli.ExitFailure || !strings.Contains(errOut, "--system: "+path+" holds no meminfo") || strings.Contains(errOut, "/proc/meminfo") {
		t.Errorf("--from without meminfo, --system: exit %d\n%s", code, errOut)
	}
}

// TestAgentStaleBound: an agent's snapshot keeps unchanged processes'
// figures from earlier walks; when the bound on their error is more than
// 1% of the processes' RAM, memwho says so on its one stderr line rather
// than calling them exact. Below that, not a word more.
func TestAgentStaleBound(t *testing.T) {
	s := agentSnapshot(time.Now().Add(-time.Second))
	s.Oldest = time.Now().Add(-95 * time.Second)
	s.StaleBound = 20 << 20 // half the processes' 40 MiB
	sock, _ := startAgent(t, s)
	out, errOut, code := runArgs("--agent-socket", sock, "--by", "pid", "--csv")
	if code != cli.ExitOK || !strings.Contains(out, "from-agent-b") || strings.Count(errOut, "\n") != 1 ||
		!strings.Contains(errOut, "unchanged processes' figures are up to 1m3") || !strings.Contains(errOut, "may be off by up to 20.0 MiB") {
		t.Errorf("stale snapshot: exit %d\n%s%s", code, out, errOut)
	}
	small := agentSnapshot(time.Now().Add(-time.Second))
	small.Oldest, small.StaleBound = time.Now().Add(-95*time.Second), 100<<10 // 0.25%
	sock, _ = startAgent(t, small)
	if _, errOut, _ := runArgs("--agent-socket", sock, "--by", "pid", "--csv"); strings.Contains(errOut, "off by") {
		t.Errorf("a bound under 1%% was mentioned: %s", errOut)
	}
}

// TestAgentFastWalks: an agent run with --fast serves RSS-based
// estimates only; memwho showed every row ~ with "smaps_rollup could not
// be read" as the reason. It walks /proc instead, with a note.
func TestAgentFastWalks(t *testing.T) {
	s := agentSnapshot(time.Now())
	for i := range s.Procs {
		s.Procs[i].Accuracy = sample.Estimate
	}
	sock, _ := startAgent(t, s)
	out, errOut, code := runArgs("--agent-socket", sock, "--by", "pid", "--csv")
	if code != cli.ExitOK || strings.Contains(out, "from-agent") || !strings.Contains(errOut, "not using memwho-agent: its snapshot holds RSS-based estimates only") {
		t.Errorf("fast agent: exit %d\n%s%s", code, out, errOut)
	}
	// Estimates forced by a refused walk are the agent's answer.
	s.Procs[0].Cause = sample.CauseDenied
	s.Procs[1].Accuracy = sample.Exact
	sock, _ = startAgent(t, s)
	if out, errOut, _ := runArgs("--agent-socket", sock, "--by", "pid", "--csv"); !strings.Contains(out, "from-agent") {
		t.Errorf("an agent with a refused walk was not used:\n%s%s", out, errOut)
	}
}
