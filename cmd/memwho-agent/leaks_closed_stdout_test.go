package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli/clitest"
)

// TestLeaksHTMLClosedStdout: leaks --html whose table goes to a
// pipe nobody reads any more (memwho leaks --html page.html | head):
// the Go runtime's SIGPIPE at the table's write killed it with the
// page's temporary file left. The closed pipe is now the run's error
// and the file is removed. The test binary runs as memwho-agent
// (TestMain), so cli.Main, as installed.
func TestLeaksHTMLClosedStdout(t *testing.T) {
	until := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	db := leaksDB(t, until)
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(t.TempDir(), "memwho-agent")
	if err := os.Symlink(self, agent); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "leaks.html")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	cmd := exec.Command(agent, "leaks", "--db", db, "--host", "web1", "--until", until.Format(time.RFC3339), "--html", page)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	err = cmd.Run()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() || ws.ExitStatus() != 1 {
		t.Errorf("exit %v (%v), want 1; stderr: %s", ws, err, stderr.String())
	}
	if got := stderr.String(); strings.Count(got, "memwho: error:") != 1 || !strings.Contains(got, "broken pipe") {
		t.Errorf("stderr: %q, want one error line with broken pipe", got)
	}
	if _, err := os.Stat(page); err == nil {
		t.Error("the page published")
	}
	clitest.NoTemps(t, dir)
}
