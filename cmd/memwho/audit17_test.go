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

// Fixes of the machine-readable output audit of 2026-11-26 (session 17).

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

// TestAudit17SnapshotFromAgentTaken: a snapshot file made from the
// agent's snapshot is dated by the agent's walk, not by the copy: it was
// dated now, so diff's "later" was off by the snapshot's age.
func TestAudit17SnapshotFromAgentTaken(t *testing.T) {
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

// TestAudit17FromConns: --from FILE --conns with a file that holds no TCP
// counts dropped the column without a word (exit 0); it is an error now.
// A file that holds them shows them.
func TestAudit17FromConns(t *testing.T) {
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

// TestAudit17FromSystemNoMeminfo: --system with a file that holds no
// meminfo named /proc/meminfo, which was never read; it names the file.
func TestAudit17FromSystemNoMeminfo(t *testing.T) {
	s := agentSnapshot(time.Now())
	s.MeminfoOK = false
	path := writeSnap(t, s, s.Time)
	_, errOut, code := runArgs("--from", path, "--system")
	if code != cli.ExitFailure || !strings.Contains(errOut, "--system: "+path+" holds no meminfo") || strings.Contains(errOut, "/proc/meminfo") {
		t.Errorf("--from without meminfo, --system: exit %d\n%s", code, errOut)
	}
}
