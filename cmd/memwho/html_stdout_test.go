package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/proc/proctest"
)

// TestPictureToStdout: --html - and --svg - write the picture to
// standard output, in the table's place, as --from - reads standard
// input; they made a file named "-". With another output on standard
// output, or both, they are usage errors.
func TestPictureToStdout(t *testing.T) {
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		args   []string
		code   int
		prefix string
	}{
		{[]string{"--html", "-"}, cli.ExitOK, "<!DOCTYPE html>"},
		{[]string{"--svg", "-", "--by", "user"}, cli.ExitOK, `<?xml version="1.0" encoding="UTF-8"?>`},
		{[]string{"--html", "-", "--svg", "map.svg"}, cli.ExitOK, "<!DOCTYPE html>"},
		{[]string{"--html", "-", "--svg", "-"}, cli.ExitUsage, ""},
		{[]string{"--html", "-", "--json"}, cli.ExitUsage, ""},
		{[]string{"--svg", "-", "-t"}, cli.ExitUsage, ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"--proc", root}, tc.args...), &stdout, &stderr)
		if code != tc.code || !strings.HasPrefix(stdout.String(), tc.prefix) {
			t.Errorf("%q: exit %d, stdout %.40q; want %d, %q (stderr %q)", tc.args, code, stdout.String(), tc.code, tc.prefix, stderr.String())
		}
		if tc.code == cli.ExitOK && strings.Contains(stdout.String(), "Private  +") {
			t.Errorf("%q: the table too on standard output", tc.args)
		}
		if _, err := os.Lstat("-"); err == nil {
			t.Fatalf("%q: a file named \"-\"", tc.args)
		}
	}
	if _, err := os.Stat("map.svg"); err != nil {
		t.Errorf("--svg map.svg beside --html -: %v", err)
	}
}
