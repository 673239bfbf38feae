package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/proc/proctest"
)

// TestHabits: what people type coming from ps_mem and smem. -d (ps_mem:
// a row per process) is --by pid and -r (smem) is --reverse; the flags
// memwho has no room for, or spells otherwise, get a hint that says
// what to type; a mistyped flag or command names the nearest one. None
// of it was there: -d, -w, -m were "unknown flag", and so was --sytem.
func TestHabits(t *testing.T) {
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	out := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"--proc", root}, args...), &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	same := func(a, b []string) {
		t.Helper()
		x, _, cx := out(a...)
		y, _, cy := out(b...)
		if cx != 0 || cy != 0 || x != y {
			t.Errorf("%q (exit %d) and %q (exit %d) differ:\n%s\n%s", a, cx, b, cy, x, y)
		}
	}
	same([]string{"-d"}, []string{"--by", "pid"})
	same([]string{"--discriminate-by-pid"}, []string{"--by", "pid"})
	same([]string{"-r"}, []string{"--reverse"})
	if _, stderr, code := out("-d", "--by", "user"); code != cli.ExitUsage || !strings.Contains(stderr, "-d is --by pid") {
		t.Errorf("-d --by user: exit %d, %q", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-w", "2"}, "memwho: hint: ps_mem's -w N (watch) is memwho watch --interval Ns"},
		{[]string{"-s"}, "memwho: hint: ps_mem's -s (full command lines) has no equivalent"},
		{[]string{"-u"}, "smem's -u (a row per user) is --by user"},
		{[]string{"-p"}, "smem's -p (percentages)"},
		{[]string{"-m"}, "smem's -m (a row per mapping)"},
		{[]string{"-c", "pid"}, "smem's -c (columns)"},
		{[]string{"--sytem"}, "unknown flag --sytem (did you mean --system?)"},
		{[]string{"--revrese"}, "(did you mean --reverse?)"},
		{[]string{"wach"}, `unknown command "wach" (did you mean watch?)`},
		{[]string{"snapshto"}, `(did you mean snapshot?)`},
	} {
		var stdout, stderr bytes.Buffer
		args := tc.args
		if !strings.HasPrefix(args[0], "-") {
			// A command comes first.
			args = append(args, "--proc", root)
		} else {
			args = append([]string{"--proc", root}, args...)
		}
		code := run(context.Background(), args, &stdout, &stderr)
		if code != cli.ExitUsage || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), cli.ExitUsage, tc.want)
		}
	}
}
