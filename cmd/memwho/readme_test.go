package main

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeFirstScreen keeps the README's promise testable: its first
// screen gives the command that builds and runs memwho and the command
// that runs the tests, and CI runs that same test command. (A merge once
// left the README empty and nothing noticed.)
func TestReadmeFirstScreen(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) > 60 {
		lines = lines[:60]
	}
	first := strings.Join(lines, "\n")
	for _, want := range []string{
		"go build -trimpath -o . ./cmd/memwho ./cmd/memwho-agent && ./memwho",
		"./scripts/test.sh",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("README's first 60 lines lack %q", want)
		}
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "exec ./scripts/test.sh") {
		t.Errorf(".ci/run does not run the README's test command:\n%s", ci)
	}
}
