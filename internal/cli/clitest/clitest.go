// Package clitest holds what the tests of memwho's two commands (memwho
// and memwho-agent) share: a small tmpfs to fill, the checks of the
// one-line error convention and of files left behind, and the runner of
// their testscript scenarios.
package clitest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/memwho/memwho/internal/atomicfile"
	"github.com/memwho/memwho/internal/proc/proctest"
)

// OneErrorLine fails t unless stderr is exactly one "memwho: error:" line
// that contains want.
func OneErrorLine(t testing.TB, stderr, want string) {
	t.Helper()
	if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "memwho: error: ") || !strings.Contains(stderr, want) {
		t.Errorf("stderr = %q, want one 'memwho: error:' line about %q", stderr, want)
	}
}

// MountTinyTmpfs mounts a tmpfs of the given size (mount's size= syntax)
// on a new temporary directory, unmounted at cleanup; it skips the test
// unless it runs as root.
func MountTinyTmpfs(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0755", "memwho-test", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// Fill writes a file in dir until the file system is full.
func Fill(t testing.TB, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// NoTemps fails t if dir holds a temporary file of package atomicfile.
func NoTemps(t testing.TB, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if atomicfile.IsTemp(e.Name()) {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// Scripts runs the testscript scenarios in dir (relative to the calling
// command's package, two levels below the module root) with NO_COLOR
// set, every exec explicit, and the command "unpack FIXTURE DIR", which
// unpacks the captured /proc tree internal/proc/testdata/FIXTURE.txtar
// into DIR. With update it rewrites the scripts' expected output.
func Scripts(t *testing.T, dir string, update bool) {
	fixtures, err := filepath.Abs("../../internal/proc/testdata")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		UpdateScripts:       update,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"unpack": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 2 {
					ts.Fatalf("usage: unpack FIXTURE DIR")
				}
				a, err := txtar.ParseFile(filepath.Join(fixtures, args[0]+".txtar"))
				ts.Check(err)
				ts.Check(proctest.Unpack(a, ts.MkAbs(args[1])))
			},
		},
	})
}
