package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
)

// TestHelpOnce: usage asked for goes to stdout only, once, with exit 0,
// for memwho and every subcommand, with --help, -help and -h.
func TestHelpOnce(t *testing.T) {
	for _, cmd := range []string{"", "report", "watch", "completion"} {
		for _, flag := range []string{"--help", "-help", "-h"} {
			args := []string{flag}
			if cmd != "" {
				args = []string{cmd, flag}
			}
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := run(context.Background(), args, &stdout, &stderr)
				if code != cli.ExitOK {
					t.Errorf("exit %d, want 0", code)
				}
				if stderr.Len() != 0 {
					t.Errorf("stderr %q, want nothing", stderr.String())
				}
				if n := strings.Count(stdout.String(), "Usage: memwho"); n != 1 {
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
		{"--no-such-flag"},
		{"watch", "--interval", "soon"},
		{"watch", "-n", "-1"},
		{"watch", "--interval", "NaN"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitUsage {
				t.Errorf("exit %d, want %d", code, cli.ExitUsage)
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			// The hint names the subcommand's own --help.
			hint := "memwho: hint: see 'memwho --help'"
			if args[0] == "watch" {
				hint = "memwho: hint: see 'memwho watch --help'"
			}
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "memwho: error: ") || lines[1] != hint {
				t.Errorf("stderr is not one error line and the hint:\n%s", stderr.String())
			}
			if stdout.Len() != 0 || strings.Contains(stderr.String(), "Usage:") {
				t.Errorf("usage printed on an error: stdout %q stderr %q", stdout.String(), stderr.String())
			}
		})
	}
	var stdout, stderr bytes.Buffer
	run(context.Background(), []string{"watch", "--interval", "soon"}, &stdout, &stderr)
	if !strings.Contains(stderr.String(), "-interval") || !strings.Contains(stderr.String(), "seconds (2, 0.5) or a duration (500ms, 1m)") {
		t.Errorf("the error does not name the flag and the accepted forms: %q", stderr.String())
	}
}

// TestIntervalSeconds: a bare number is seconds, as in watch(1) and top.
func TestIntervalSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"1", time.Second},
		{"2", 2 * time.Second},
		{"0.5", 500 * time.Millisecond},
		{"500ms", 500 * time.Millisecond},
		{"1m", time.Minute},
	} {
		var d time.Duration
		if err := (*cli.Seconds)(&d).Set(tc.in); err != nil || d != tc.want {
			t.Errorf("--interval %s = %v, %v; want %v", tc.in, d, err, tc.want)
		}
	}
	for _, bad := range []string{"0", "-1", "NaN", "Inf", "1e9", "x", ""} {
		var d time.Duration
		if err := (*cli.Seconds)(&d).Set(bad); err == nil && d > 0 && bad != "0" {
			t.Errorf("--interval %q accepted as %v", bad, d)
		}
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"watch", "--proc", "/proc", "-n", "0.01", "--count", "1", "--plain", "--by", "user"}, &stdout, &stderr)
	if code != cli.ExitOK || !strings.Contains(stdout.String(), "every 10ms") {
		t.Errorf("watch -n 0.01: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
