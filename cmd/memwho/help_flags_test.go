package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/proc/proctest"
)

// Flags and help words as memwho's command line checks them (rows in
// docs/safe.md).

// runMemwho runs memwho with args and returns stdout, stderr's lines and
// the exit code.
func runMemwho(args ...string) (string, []string, int) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return stdout.String(), strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n"), code
}

// TestHelpCommand: memwho help WORD prints usage for the commands it
// knows (help --help too; any word was taken before), and is
// a one-line usage error for anything else; it never hands a word that
// is not one of the agent's four commands to memwho-agent, nor more
// than one. BROKE before the fix: help --help and help -h were usage
// errors.
func TestHelpCommand(t *testing.T) {
	saved := execAgent
	t.Cleanup(func() { execAgent = saved })
	var execs [][]string
	execAgent = func(path string, argv []string) error {
		execs = append(execs, argv)
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(filepath.Dir(self), agentBinary)
	if _, err := os.Stat(agent); err != nil {
		if err := os.WriteFile(agent, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Skipf("cannot place a fake %s beside the test binary: %v", agentBinary, err)
		}
		t.Cleanup(func() { os.Remove(agent) })
	}
	for _, tc := range []struct {
		args  []string
		code  int
		usage string   // in stdout, for exit 0
		exec  []string // memwho-agent's argv, when run
	}{
		{[]string{"help"}, 0, "Commands:", nil},
		{[]string{"help", ""}, 0, "Commands:", nil},
		{[]string{"help", "help"}, 0, "Commands:", nil},
		{[]string{"help", "version"}, 0, "Commands:", nil},
		{[]string{"help", "--help"}, 0, "Commands:", nil},
		{[]string{"help", "-h"}, 0, "Commands:", nil},
		{[]string{"help", "-help"}, 0, "Commands:", nil},
		{[]string{"help", "report"}, 0, "Usage:", nil},
		{[]string{"help", "watch"}, 0, "memwho watch", nil},
		{[]string{"help", "snapshot"}, 0, "memwho snapshot", nil},
		{[]string{"help", "diff"}, 0, "memwho diff", nil},
		{[]string{"help", "completion"}, 0, "completion", nil},
		{[]string{"help", "serve"}, 0, "", []string{agentBinary, "serve", "--help"}},
		{[]string{"help", "record"}, 0, "", []string{agentBinary, "record", "--help"}},
		{[]string{"help", "leaks"}, 0, "", []string{agentBinary, "leaks", "--help"}},
		{[]string{"help", "export"}, 0, "", []string{agentBinary, "export", "--help"}},
		{[]string{"help", "../../bin/sh"}, 2, "", nil},
		{[]string{"help", "/bin/sh"}, 2, "", nil},
		{[]string{"help", "Watch"}, 2, "", nil},
		{[]string{"help", "serve "}, 2, "", nil},
		{[]string{"help", "serve\n"}, 2, "", nil},
		{[]string{"help", "memwho-agent"}, 2, "", nil},
		{[]string{"help", "serve", "--bogus"}, 2, "", nil},
		{[]string{"help", "help", "help"}, 2, "", nil},
		{[]string{"help", "--", "serve"}, 2, "", nil},
		{[]string{"help", "\x1b]0;x\x07"}, 2, "", nil},
	} {
		execs = nil
		stdout, stderr, code := runMemwho(tc.args...)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d: %q", tc.args, code, tc.code, stderr)
			continue
		}
		if tc.exec != nil {
			if len(execs) != 1 || !reflect.DeepEqual(execs[0], tc.exec) {
				t.Errorf("%q: memwho-agent run as %q, want %q", tc.args, execs, tc.exec)
			}
			continue
		}
		if len(execs) != 0 {
			t.Errorf("%q: memwho-agent run as %q", tc.args, execs)
		}
		if code == 0 {
			if !strings.Contains(stdout, tc.usage) {
				t.Errorf("%q: stdout without %q:\n%s", tc.args, tc.usage, stdout)
			}
			continue
		}
		if stdout != "" || len(stderr) != 2 || !strings.HasPrefix(stderr[0], "memwho: error: ") || stderr[1] != "memwho: hint: see 'memwho --help'" {
			t.Errorf("%q: not one error line and the hint: stdout %q, stderr %q", tc.args, stdout, stderr)
		}
		if strings.ContainsAny(stderr[0], "\n\x1b\x07") {
			t.Errorf("%q: control characters in %q", tc.args, stderr[0])
		}
	}
}

// TestFlagErrors: every command's flag errors read alike, with
// the hint of its own --help. BROKE before the fix: memwho diff kept
// the flag package's wording ("flag provided but not defined: -bogus").
func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		err, hint string
	}{
		{[]string{"diff", "--bogus", "a", "b"}, "unknown flag --bogus", "diff"},
		{[]string{"diff", "--top", "x", "a", "b"}, `--top: invalid value "x": not a number`, "diff"},
		{[]string{"diff", "--json=maybe", "a", "b"}, `--json: invalid value "maybe": want true or false (or the flag alone)`, "diff"},
		{[]string{"diff", "--top"}, "--top: needs a value", "diff"},
		{[]string{"diff", "--top", `x" for flag -by: y`, "a", "b"}, `--top: invalid value "x\" for flag -by: y": not a number`, "diff"},
		{[]string{"--bogus"}, "unknown flag --bogus", ""},
		{[]string{"--top", `x" for flag -p: parse error`}, `--top: invalid value "x\" for flag -p: parse error": not a number`, ""},
		{[]string{"watch", "-n", `x" for flag -top: z`}, `-n: invalid value "x\" for flag -top: z": want seconds`, "watch"},
		{[]string{"snapshot", "--bogus"}, "unknown flag --bogus", "snapshot"},
		{[]string{"completion", "--bogus"}, "unknown flag --bogus", "completion"},
		{[]string{"-p", ""}, "-p: empty", ""},
		{[]string{"--pid="}, "--pid: empty", ""},
		{[]string{"-u", ""}, "-u: empty", ""},
		{[]string{"--html="}, "--html: empty", ""},
		{[]string{"--svg", ""}, "--svg: empty", ""},
		{[]string{"--from", "x", "--from", ""}, "--from: empty", ""},
		{[]string{"watch", "--from="}, "--from: empty", "watch"},
		{[]string{"watch", "--proc", ""}, "--proc: empty", "watch"},
		{[]string{"snapshot", "-o", ""}, "-o: empty", "snapshot"},
		{[]string{"snapshot", "--output="}, "--output: empty", "snapshot"},
		{[]string{"-t", "--system"}, "-t excludes --system", ""},
		{[]string{"--from", "f", "--proc", "/proc"}, "--from excludes --proc", ""},
		{[]string{"watch", "--from", "f", "--fast"}, "--from excludes --fast", "watch"},
	} {
		stdout, stderr, code := runMemwho(tc.args...)
		hint := "memwho: hint: see 'memwho --help'"
		if tc.hint != "" {
			hint = "memwho: hint: see 'memwho " + tc.hint + " --help'"
		}
		if code != cli.ExitUsage || stdout != "" || len(stderr) != 2 ||
			!strings.HasPrefix(stderr[0], "memwho: error: "+tc.err) || stderr[1] != hint {
			t.Errorf("%q: exit %d, stderr %q; want 2, %q and %q", tc.args, code, stderr, tc.err, hint)
		}
	}
}

// TestBoolFalseNoConflict: a boolean flag given as false is not a
// conflict: -t=false --system shows the ledger, --system=false -t the
// one number. BROKE before the fix: both were "-t excludes --system".
func TestBoolFalseNoConflict(t *testing.T) {
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-t=false", "--system"}, "System ledger"},
		{[]string{"--total=false", "--system=true"}, "System ledger"},
		{[]string{"-t", "--system=false"}, ""},
	} {
		stdout, stderr, code := runMemwho(append([]string{"--proc", root}, tc.args...)...)
		if code != 0 {
			t.Errorf("%q: exit %d: %q", tc.args, code, stderr)
			continue
		}
		if tc.want != "" && !strings.Contains(stdout, tc.want) {
			t.Errorf("%q: no %q in\n%s", tc.args, tc.want, stdout)
		}
		if tc.want == "" && strings.Count(stdout, "\n") != 1 {
			t.Errorf("%q: not one number: %q", tc.args, stdout)
		}
	}
}
