package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--help"}, exitOK},
		{[]string{"--no-such-flag"}, exitUsage},
		{[]string{"--filter", "(["}, exitUsage},
		{[]string{"--proc", "/does/not/exist"}, exitUsage},
		{[]string{"-u", "no-such-user-here"}, exitUsage},
		{[]string{"--by", "x"}, exitUsage},
		{[]string{"--cpuprofile", "/does/not/exist/cpu.out"}, exitFailure},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			if code != exitOK && stdout.Len() != 0 {
				t.Errorf("stdout = %q on failure, want nothing", stdout.String())
			}
			if code == exitFailure || code == exitUsage && !strings.Contains(stderr.String(), "flag provided") {
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
