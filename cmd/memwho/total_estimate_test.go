package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/proc/proctest"
)

// TestTotalEstimateExit: -t prints one number for scripts, and when
// that number holds RSS-based estimates (as a normal user: other users'
// processes; here, a process whose smaps_rollup could not be parsed) it says
// so in its exit status, 3, with a warning on stderr. It printed
// 14,993,191,936 with exit 0 while free said 7.2 GiB used. An exact
// total exits 0, and so does an estimate asked for (--fast).
func TestTotalEstimateExit(t *testing.T) {
	number := regexp.MustCompile(`^[0-9]+\n$`)
	for _, tc := range []struct {
		fixture string
		args    []string
		code    int
	}{
		{"basic", nil, cli.ExitOK},
		{"corners", nil, cli.ExitEstimate},
		{"corners", []string{"--fast"}, cli.ExitOK},
	} {
		root := proctest.Root(t, "../../internal/proc/testdata/"+tc.fixture+".txtar")
		args := append([]string{"--proc", root, "-t"}, tc.args...)
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		if code != tc.code || !number.MatchString(stdout.String()) {
			t.Errorf("%s %q: exit %d, stdout %q; want %d and one number (stderr %q)", tc.fixture, tc.args, code, stdout.String(), tc.code, stderr.String())
		}
		if tc.code == cli.ExitEstimate && !strings.Contains(stderr.String(), "memwho: warning: --total: ") {
			t.Errorf("%s: no warning that the total is an estimate: %q", tc.fixture, stderr.String())
		}
	}
	// A normal user on the live /proc, where root's processes are
	// estimates.
	if os.Geteuid() != 0 {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"--fresh", "-t"}, &stdout, &stderr); code != cli.ExitEstimate || !number.MatchString(stdout.String()) {
			t.Errorf("as uid %d: exit %d, stdout %q; want %d and one number (%q)", os.Geteuid(), code, stdout.String(), cli.ExitEstimate, stderr.String())
		}
	}
}
