package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/proc/proctest"
)

// TestCornerExitCodes: the failures of issue 11 exit 1 (not 2: the
// command line was right), the --system one after printing the report.
func TestCornerExitCodes(t *testing.T) {
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	for _, tc := range []struct {
		args   []string
		code   int
		output bool
	}{
		{[]string{"-p", "999999"}, cli.ExitFailure, false},
		{[]string{"-p", "6570,999999"}, cli.ExitOK, true},
		{[]string{"--system"}, cli.ExitOK, true},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"--proc", root}, tc.args...), &stdout, &stderr)
		if code != tc.code || (stdout.Len() > 0) != tc.output {
			t.Errorf("%v: exit %d, %d bytes of output; want %d, output %v (stderr %q)", tc.args, code, stdout.Len(), tc.code, tc.output, stderr.String())
		}
	}
	if err := os.Remove(filepath.Join(root, "meminfo")); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--proc", root, "--system"}, &stdout, &stderr); code != cli.ExitFailure || stdout.Len() == 0 {
		t.Errorf("--system without meminfo: exit %d, %d bytes of output; want 1 after the report", code, stdout.Len())
	}
}
