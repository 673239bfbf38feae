package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// TestGeneratedUpToDate: the committed man pages and completion table are
// what the usage texts give now, so that --help, man and the completions
// cannot say different things. On a failure, run go generate
// ./tools/man (or go run ./tools/man from the root).
func TestGeneratedUpToDate(t *testing.T) {
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Errorf("%s: %v (run go generate ./tools/man)", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what the usage texts give (run go generate ./tools/man)", name)
		}
	}
	// A page of a command that no longer exists is stale too.
	pages, err := filepath.Glob(filepath.Join(root, "man", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if _, ok := files["man/"+filepath.Base(p)]; !ok {
			t.Errorf("%s is not generated from any usage text: remove it", p)
		}
	}
	// Every command with a usage text has a page (report's is memwho.1).
	for _, dir := range []string{"cmd/memwho/usage", "cmd/memwho-agent/usage"} {
		texts, err := filepath.Glob(filepath.Join(root, dir, "*.txt"))
		if err != nil || len(texts) == 0 {
			t.Fatalf("%s: %v, %d texts", dir, err, len(texts))
		}
		for _, txt := range texts {
			cmd := strings.TrimSuffix(filepath.Base(txt), ".txt")
			if _, ok := files["man/memwho-"+cmd+".1"]; !ok && cmd != "report" {
				t.Errorf("%s has no man page", txt)
			}
		}
	}
}

var overstrike = regexp.MustCompile(".\b")

// TestGroffClean: groff renders every page without a warning (-ww turns
// every warning on).
func TestGroffClean(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff is not installed (Debian: groff-base)")
	}
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, page := range files {
		if !strings.HasPrefix(name, "man/") {
			continue
		}
		n++
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(groff, "-man", "-Tutf8", "-ww")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(page), &stdout, &stderr
		if err := cmd.Run(); err != nil || stderr.Len() > 0 {
			t.Errorf("%s: groff: %v\n%s", name, err, stderr.String())
		}
		// Bold is overstruck: a character, a backspace, the character.
		plain := overstrike.ReplaceAllString(stdout.String(), "")
		if !strings.Contains(plain, "\nSYNOPSIS\n") || !strings.Contains(plain, "\nDESCRIPTION\n") {
			t.Errorf("%s: rendered page lacks SYNOPSIS or DESCRIPTION:\n%s", name, plain)
		}
	}
	if n < 10 {
		t.Errorf("%d pages, want at least 10", n)
	}
}
