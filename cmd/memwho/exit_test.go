package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/profile"
)

func TestExitCodes(t *testing.T) {
	// A profile that cannot be created fails the run; a build without
	// -tags pprof refuses the flags as a usage error.
	profileExit := cli.ExitFailure
	if !profile.Built {
		profileExit = cli.ExitUsage
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--help"}, cli.ExitOK},
		{[]string{"--no-such-flag"}, cli.ExitUsage},
		{[]string{"--filter", "(["}, cli.ExitUsage},
		{[]string{"--proc", "/does/not/exist"}, cli.ExitUsage},
		{[]string{"-u", "no-such-user-here"}, cli.ExitUsage},
		{[]string{"--by", "x"}, cli.ExitUsage},
		{[]string{"--cpuprofile", "/does/not/exist/cpu.out"}, profileExit},
		{[]string{"--memprofile", "/does/not/exist/mem.out"}, profileExit},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			if code != cli.ExitOK && stdout.Len() != 0 {
				t.Errorf("stdout = %q on failure, want nothing", stdout.String())
			}
			if code == cli.ExitFailure || code == cli.ExitUsage && !strings.Contains(stderr.String(), "flag provided") {
				if lines := strings.Count(stderr.String(), "memwho: error:"); lines != 1 {
					t.Errorf("stderr has %d error lines, want 1: %q", lines, stderr.String())
				}
			}
		})
	}
}

// TestLive runs the report on the real /proc: it must succeed and list
// this test process.
func TestLive(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--by", "pid", "--csv"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "memwho.test [") {
		t.Errorf("live report does not list the test process:\n%s", stdout.String())
	}
}
