package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/cli"
)

// TestBuildVersionLdflags: a version set at link time wins over the stamp.
func TestBuildVersionLdflags(t *testing.T) {
	saved := version
	defer func() { version = saved }()
	version = "v1.2.3-4-g3dce945-dirty"
	if got := buildVersion(); got != version {
		t.Errorf("buildVersion = %q, want %q", got, version)
	}
}

// TestVersionHelp: memwho version --help prints its usage, not the
// version; a stray argument is a usage error.
func TestVersionHelp(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		prefix string
	}{
		{[]string{"version", "--help"}, cli.ExitOK, "Usage: memwho version\n"},
		{[]string{"version", "-h"}, cli.ExitOK, "Usage: memwho version\n"},
		{[]string{"version"}, cli.ExitOK, "memwho "},
		{[]string{"version", "x"}, cli.ExitUsage, ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		if code != tc.code || !strings.HasPrefix(stdout.String(), tc.prefix) {
			t.Errorf("%q: exit %d, stdout %q; want %d, %q", tc.args, code, stdout.String(), tc.code, tc.prefix)
		}
	}
}
