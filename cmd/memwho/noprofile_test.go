//go:build !pprof

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/cli"
)

// TestProfileNotBuilt: the shipped build (no -tags pprof) refuses
// --cpuprofile and --memprofile as a usage error, in one line that says how
// to build a memwho that profiles, before reading anything or creating the
// file.
func TestProfileNotBuilt(t *testing.T) {
	for _, flag := range []string{"--cpuprofile", "--memprofile"} {
		t.Run(flag, func(t *testing.T) {
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{flag, filepath.Join(dir, "prof"), "-t"}, &stdout, &stderr)
			if code != cli.ExitUsage {
				t.Errorf("exit %d, want %d", code, cli.ExitUsage)
			}
			// A usage error: its line, then the usage hint.
			want := "memwho: error: " + flag + ": this memwho was built without profiling (go build -tags pprof ./cmd/memwho)\n"
			if errOut := stderr.String(); !strings.HasPrefix(errOut, want) || strings.Count(errOut, "memwho: error:") != 1 {
				t.Errorf("stderr = %q, want it to begin with %q", errOut, want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("created %d files", len(ents))
			}
		})
	}
}
