//go:build pprof

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/cli/clitest"
)

// TestFullDiskProfile: a profile that cannot be written on a full disk
// fails the report with one error line and exit 1, and leaves an older
// file of that name as it was.
func TestFullDiskProfile(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	for _, flag := range []string{"--cpuprofile", "--memprofile"} {
		t.Run(flag, func(t *testing.T) {
			dir := clitest.MountTinyTmpfs(t, "64k")
			prof := filepath.Join(dir, "prof")
			os.WriteFile(prof, []byte("old\n"), 0o644)
			clitest.Fill(t, dir)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{flag, prof, "-t", "-p", self}, &stdout, &stderr)
			errOut := stderr.String()
			if code != cli.ExitFailure {
				t.Errorf("exit %d, want %d", code, cli.ExitFailure)
			}
			clitest.OneErrorLine(t, errOut, flag+": write "+prof+": no space left on device")
			if b, _ := os.ReadFile(prof); string(b) != "old\n" {
				t.Errorf("profile holds %.40q, want the old content", b)
			}
			clitest.NoTemps(t, dir)
		})
	}
}
