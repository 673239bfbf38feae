package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/profile"
)

// buildMemwho builds the command into a directory any user can enter.
func buildMemwho(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "memwho-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "memwho")
	args := []string{"build", "-o", bin}
	if profile.Built {
		// The binary is built as this test binary was.
		args = append(args, "-tags", "pprof")
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestUnprivilegedUser runs memwho as an ordinary user: it still lists a
// root-owned process, marked as an estimate, reads its own processes
// exactly, and says once on stderr how to get exact figures.
func TestUnprivilegedUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root to start processes as two different users")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("skipping: setpriv (util-linux) not installed")
	}
	bin := buildMemwho(t)
	asNobody := []string{"--reuid=65534", "--regid=65534", "--clear-groups"}

	rootChild := exec.Command("sleep", "600")
	userChild := exec.Command(setpriv, append(asNobody, "sleep", "600")...)
	for _, c := range []*exec.Cmd{rootChild, userChild} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	// Let setpriv exec sleep (same PID).
	time.Sleep(200 * time.Millisecond)

	pids := strconv.Itoa(rootChild.Process.Pid) + "," + strconv.Itoa(userChild.Process.Pid)
	cmd := exec.Command(setpriv, append(asNobody, bin, "--by", "pid", "--json", "-p", pids)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("memwho as nobody: %v\n%s", err, stderr.String())
	}
	var rep struct {
		Groups []struct {
			PIDs     []int  `json:"pids"`
			Accuracy string `json:"accuracy"`
			RAM      uint64 `json:"ram_bytes"`
		} `json:"groups"`
		Denied int `json:"denied_processes"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	acc := map[int]string{}
	for _, g := range rep.Groups {
		if g.RAM == 0 {
			t.Errorf("pids %v: RAM 0", g.PIDs)
		}
		for _, p := range g.PIDs {
			acc[p] = g.Accuracy
		}
	}
	if got := acc[rootChild.Process.Pid]; got != "estimate" {
		t.Errorf("root-owned process: accuracy %q, want estimate", got)
	}
	if got := acc[userChild.Process.Pid]; got != "exact" {
		t.Errorf("own process: accuracy %q, want exact", got)
	}
	if rep.Denied != 1 {
		t.Errorf("denied_processes = %d, want 1", rep.Denied)
	}
	if n := strings.Count(stderr.String(), "memwho: warning:"); n != 1 {
		t.Errorf("stderr has %d warnings, want 1:\n%s", n, stderr.String())
	}
	if !strings.Contains(stderr.String(), "memwho: hint:") {
		t.Errorf("stderr has no hint on exact figures:\n%s", stderr.String())
	}
}
