package snapshot

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoNet: the client is linked into the command users run, which must
// stay small and quick to start; package net (and what it brings) is the
// server's, in snapserve.
func TestNoNet(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the dependencies with")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for pkg := range strings.Lines(string(out)) {
		pkg = strings.TrimSpace(pkg)
		if pkg == "net" || strings.HasPrefix(pkg, "net/") || strings.HasPrefix(pkg, "crypto/") {
			t.Errorf("internal/snapshot depends on %s", pkg)
		}
	}
}
