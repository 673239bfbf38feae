package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/manpage"
)

// TestHelpOnce: usage asked for goes to stdout only, once, with exit 0,
// for every command of memwho-agent, with --help, -help and -h.
func TestHelpOnce(t *testing.T) {
	for _, cmd := range []string{"serve", "record", "leaks", "export", "diff"} {
		for _, flag := range []string{"--help", "-help", "-h"} {
			args := []string{cmd, flag}
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := run(context.Background(), args, &stdout, &stderr)
				if code != cli.ExitOK {
					t.Errorf("exit %d, want 0", code)
				}
				if stderr.Len() != 0 {
					t.Errorf("stderr %q, want nothing", stderr.String())
				}
				if n := strings.Count(stdout.String(), "Usage: memwho "+cmd); n != 1 {
					t.Errorf("stdout holds the usage %d times, want once:\n%s", n, stdout.String())
				}
			})
		}
	}
}

// TestUsageErrorOneLine: a usage error is one error line naming the
// flag, and a hint; never the whole usage.
func TestUsageErrorOneLine(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--once", "--walk-budget", "NaN"},
		// --once serves nothing, but its listener flags are checked as
		// without it, so that a typo is not ignored until the flag matters.
		{"serve", "--once", "--listen", "127.0.0.1:0"},
		{"serve", "--once", "--debug-listen", ":1234"},
		{"serve", "--once", "--max-connections", "0"},
		{"serve", "--once", "--socket-group", "no-such-group-memwho"},
		// An empty -o wrote to stdout; an empty --db used the default
		// history.
		{"export", "-o", ""},
		{"export", "--db", ""},
		{"record", "--bogus"},
		{"leaks", "--bogus"},
		{"export", "--bogus"},
		{"diff", "--bogus"},
		{"bogus"},
		{"--bogus"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitUsage {
				t.Errorf("exit %d, want %d", code, cli.ExitUsage)
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			// A command's hint names its own --help.
			hint := "memwho: hint: see 'memwho --help'"
			switch args[0] {
			case "serve", "record", "leaks", "export", "diff":
				hint = "memwho: hint: see 'memwho " + args[0] + " --help'"
			}
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "memwho: error: ") || lines[1] != hint {
				t.Errorf("stderr is not one error line and the hint:\n%s", stderr.String())
			}
			if stdout.Len() != 0 || strings.Contains(stderr.String(), "Usage:") {
				t.Errorf("usage printed on an error: stdout %q stderr %q", stdout.String(), stderr.String())
			}
		})
	}
}

// TestUsageFlagsDefined: every flag a usage text lists (read as the man
// pages and memwho's completions read it) is one the command parses.
func TestUsageFlagsDefined(t *testing.T) {
	for _, cmd := range []string{"serve", "record", "leaks", "export"} {
		text, err := manpage.Parse(usage(cmd))
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		flags := text.Flags()
		if len(flags) < 5 {
			t.Errorf("%s: %d flags in its usage text", cmd, len(flags))
		}
		for _, f := range flags {
			for _, name := range f.Names {
				// An unknown flag fails before --help is reached; a known
				// one is parsed (its value may be refused, which is not
				// what this checks).
				var stdout, stderr bytes.Buffer
				run(context.Background(), []string{cmd, name + "=1", "--help"}, &stdout, &stderr)
				if strings.Contains(stderr.String(), "not defined") {
					t.Errorf("memwho %s: %s is in the usage text but not defined: %s", cmd, name, stderr.String())
				}
			}
		}
	}
}
