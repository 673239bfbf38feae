package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestAgentHint: a usage error of the agent's commands, run as
// memwho COMMAND, points to that command's --help, as memwho's own
// commands do since the audit (UsageError.Command); memwho --help is the
// report's and lists none of their flags. BROKE before the fix: every
// one said see 'memwho --help'.
func TestAgentHint(t *testing.T) {
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"serve", "--bogus"}, "serve"},
		{[]string{"record", "--interval", "x"}, "record"},
		{[]string{"leaks", "--bogus"}, "leaks"},
		{[]string{"export", "--top"}, "export"},
		{[]string{"diff", "--bogus"}, "diff"},
		{[]string{"bogus"}, ""},
		{[]string{"--bogus"}, ""},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d", tc.args, code)
		}
		want := "memwho: hint: see 'memwho --help'"
		if tc.hint != "" {
			want = "memwho: hint: see 'memwho " + tc.hint + " --help'"
		}
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if len(lines) != 2 || lines[1] != want {
			t.Errorf("%q: %q, want one error line and %q", tc.args, stderr.String(), want)
		}
	}
}
