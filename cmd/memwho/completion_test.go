package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/cli"
)

func completionScript(t *testing.T, shell string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"completion", shell}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("memwho completion %s: exit %d: %s", shell, code, stderr.String())
	}
	path := filepath.Join(t.TempDir(), "memwho."+shell)
	if err := os.WriteFile(path, stdout.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCompletionBash: the script is valid bash, and completing words
// offers the commands and each command's flags.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	script := completionScript(t, "bash")
	if out, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		line      string // the words, the last being completed
		want, not []string
	}{
		{line: "memwho --b", want: []string{"--by"}},
		{line: "memwho w", want: []string{"watch"}},
		{line: "memwho ", want: []string{"report", "serve", "completion"}},
		{line: "memwho watch -", want: []string{"-n", "--interval", "--plain", "--help"}, not: []string{"--system"}},
		{line: "memwho report --sy", want: []string{"--system"}},
		{line: "memwho serve --soc", want: []string{"--socket", "--socket-group"}},
		{line: "memwho export --up", want: []string{"--upload"}},
		{line: "memwho diff --by program --t", want: []string{"--top"}},
		{line: "memwho snapshot -o ", want: nil},
		{line: "memwho completion ", want: []string{"bash", "zsh", "fish"}},
		// Flag values, from the packages that parse them and the help.
		{line: "memwho --by ", want: []string{"program", "pid", "user", "container"}},
		{line: "memwho report --sort s", want: []string{"shared", "swap"}, not: []string{"ram"}},
		{line: "memwho --sort c", want: []string{"count"}, not: []string{"conns", "change"}},
		{line: "memwho watch --sort c", want: []string{"count", "change", "conns"}},
		{line: "memwho serve --by ", want: []string{"program", "container"}, not: []string{"pid"}},
		{line: "memwho leaks --kind ", want: []string{"process", "program", "container"}},
		{line: "memwho leaks --kind program,u", want: []string{"program,unit", "program,user"}},
		{line: "memwho record --groups ", want: []string{"program", "none"}, not: []string{"process"}},
		{line: "memwho -u roo", want: []string{"root"}},
		{line: "memwho --user roo", want: []string{"root"}},
	} {
		words := strings.Split(tc.line, " ")
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = sq(w)
		}
		prog := ". " + sq(script) + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" +
			strconv.Itoa(len(words)-1) + "\n_memwho\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		out, err := exec.Command(bash, "--norc", "--noprofile", "-c", prog).CombinedOutput()
		if err != nil {
			t.Errorf("%q: %v\n%s", tc.line, err, out)
			continue
		}
		got := strings.Fields(string(out))
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q completes to %q, want %q among them", tc.line, got, w)
			}
		}
		for _, w := range tc.not {
			if slices.Contains(got, w) {
				t.Errorf("%q completes to %q, want no %q", tc.line, got, w)
			}
		}
		if tc.want == nil && len(got) > 0 {
			t.Errorf("%q completes to %q, want nothing (bash's default: files)", tc.line, got)
		}
	}
}

// TestCompletionFish asks fish itself (complete -C) what it offers for
// a command line, flag values included.
func TestCompletionFish(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("fish is not installed")
	}
	script := completionScript(t, "fish")
	for _, tc := range []struct {
		line      string
		want, not []string
	}{
		{line: "memwho --b", want: []string{"--by"}},
		{line: "memwho --by ", want: []string{"program", "pid", "container"}},
		{line: "memwho watch --sort ", want: []string{"rate", "conns"}},
		{line: "memwho serve --by ", want: []string{"unit"}, not: []string{"pid"}},
		{line: "memwho leaks --kind program,", want: []string{"program,user", "program,slice"}},
		{line: "memwho -u roo", want: []string{"root"}},
	} {
		out, err := exec.Command(fish, "--no-config", "-c", "source "+sq(script)+"; complete -C "+sq(tc.line)).CombinedOutput()
		if err != nil {
			t.Errorf("%q: %v\n%s", tc.line, err, out)
			continue
		}
		var got []string
		for _, l := range strings.Split(string(out), "\n") {
			if w, _, _ := strings.Cut(l, "\t"); w != "" {
				got = append(got, w)
			}
		}
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q completes to %q, want %q among them", tc.line, got, w)
			}
		}
		for _, w := range tc.not {
			if slices.Contains(got, w) {
				t.Errorf("%q completes to %q, want no %q", tc.line, got, w)
			}
		}
	}
}

// TestCompletionSyntax: the zsh and fish scripts are valid in their
// shells, where those are installed.
func TestCompletionSyntax(t *testing.T) {
	for _, shell := range []string{"zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			path, err := exec.LookPath(shell)
			if err != nil {
				t.Skipf("%s is not installed", shell)
			}
			script := completionScript(t, shell)
			if out, err := exec.Command(path, "-n", script).CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", shell, err, out)
			}
		})
	}
}

// TestCompletionUsage: the shell is one argument, and only those three.
func TestCompletionUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"completion"}, cli.ExitUsage},
		{[]string{"completion", "tcsh"}, cli.ExitUsage},
		{[]string{"completion", "bash", "zsh"}, cli.ExitUsage},
		{[]string{"completion", "--bogus"}, cli.ExitUsage},
		{[]string{"completion", "--help"}, cli.ExitOK},
		{[]string{"completion", "fish"}, cli.ExitOK},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != tc.code {
			t.Errorf("%q: exit %d, want %d: %s", tc.args, code, tc.code, stderr.String())
		}
	}
}

// TestCompletionFlagsDefined: every flag the completions offer for
// memwho's own commands (from the usage texts) is one the command parses,
// so that a usage text cannot list a flag that does not exist.
func TestCompletionFlagsDefined(t *testing.T) {
	n := 0
	for _, c := range completionCommands {
		if !slices.Contains([]string{"report", "watch", "snapshot", "diff"}, c.Name) {
			continue
		}
		for _, f := range c.Flags {
			for _, name := range f.Names {
				if name == "--version" {
					// memwho --version is the version command
					// (cli.SplitCommand), not a flag of report.
					continue
				}
				n++
				// An unknown flag fails before --help is reached; a known
				// one is parsed (its value may be refused, which is not
				// what this checks).
				var stdout, stderr bytes.Buffer
				run(context.Background(), []string{c.Name, name + "=1", "--help"}, &stdout, &stderr)
				if strings.Contains(stderr.String(), "not defined") {
					t.Errorf("memwho %s: %s is in the usage text but not defined: %s", c.Name, name, stderr.String())
				}
			}
		}
	}
	if n < 40 {
		t.Errorf("%d flags checked, want the usage texts' (more than 40)", n)
	}
}

// sq quotes s for bash in single quotes (the test's own, to build
// command lines).
func sq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
