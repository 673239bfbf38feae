package atomicfile

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// entries lists dir's names, to show that nothing was left behind.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestCreateCommit(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	for _, tc := range []struct {
		name     string
		existing bool
		perm     os.FileMode
		wantMode os.FileMode
	}{
		{"new file, default mode", false, 0, 0o600},
		{"replaces a file", true, 0, 0o600},
		{"given mode", false, 0o640, 0o640},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.csv")
			if tc.existing {
				if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f, err := Create(path, tc.perm)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Abort()
			if _, err := f.Write([]byte("new data")); err != nil {
				t.Fatal(err)
			}
			if tc.existing {
				if got := readFile(t, path); got != "old" {
					t.Errorf("before Commit the target holds %q, want the old content", got)
				}
			}
			if err := f.Commit(); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, path); got != "new data" {
				t.Errorf("target = %q, want %q", got, "new data")
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Mode().Perm(); got != tc.wantMode {
				t.Errorf("mode = %v, want %v", got, tc.wantMode)
			}
			if got := entries(t, dir); len(got) != 1 {
				t.Errorf("directory holds %q, want only out.csv", got)
			}
			if err := f.Commit(); !errors.Is(err, os.ErrClosed) {
				t.Errorf("second Commit = %v, want os.ErrClosed", err)
			}
		})
	}
}

func TestAbortLeavesTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	os.WriteFile(path, []byte("old"), 0o644)
	f, err := Create(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("partial"))
	f.Abort()
	f.Abort() // idempotent
	if got := readFile(t, path); got != "old" {
		t.Errorf("target = %q after Abort, want %q", got, "old")
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("directory holds %q after Abort, want only out", got)
	}
}

// TestSymlinkAtTarget: a symlink planted at the target is replaced by
// the new file; the file it points to is not written.
func TestSymlinkAtTarget(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	path := filepath.Join(dir, "out")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("export"))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, victim); got != "precious" {
		t.Errorf("victim = %q, want it untouched", got)
	}
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Mode().IsRegular() {
		t.Errorf("target mode %v, want a regular file in place of the link", st.Mode())
	}
}

func TestTargetIsDirectory(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(dir, 0); err == nil {
		t.Fatal("Create(directory) succeeded")
	}
	if got := entries(t, filepath.Dir(dir)); len(got) != 1 {
		t.Errorf("parent holds %q, want nothing new", got)
	}
	for _, p := range []string{"", dir + "/", filepath.Join(dir, "..")} {
		if _, err := Create(p, 0); err == nil {
			t.Errorf("Create(%q) succeeded", p)
		}
	}
}

// TestTempNames: temporary names are unpredictable, marked, and a file
// already at one is never opened.
func TestTempNames(t *testing.T) {
	a, b := tempName("x.csv"), tempName("x.csv")
	if a == b {
		t.Errorf("two temporary names are both %q", a)
	}
	if !IsTemp(a) || IsTemp("x.csv") || IsTemp(".x.csv.tmp-zz") || IsTemp("x.csv.tmp") {
		t.Errorf("IsTemp is wrong")
	}
	if n := tempName(strings.Repeat("n", 255)); len(n) > 255 {
		t.Errorf("temporary name of a 255-byte name is %d bytes", len(n))
	}
	// An OpenFunc that plants a symlink at the first temporary name it is
	// asked for, as an attacker guessing right would: Create must skip it.
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	planted := 0
	open := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		if flag&os.O_CREATE != 0 && planted == 0 {
			planted++
			if err := os.Symlink(victim, name); err != nil {
				t.Fatal(err)
			}
		}
		return os.OpenFile(name, flag, perm)
	}
	f, err := CreateWith(filepath.Join(dir, "out"), 0, open)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("data"))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, victim); got != "precious" {
		t.Errorf("victim = %q, want it untouched", got)
	}
}

// TestFullDisk: a write that fails for lack of space makes Commit fail,
// leaves the old target whole and removes the temporary file. It needs a
// small tmpfs, which only root can mount.
func TestFullDisk(t *testing.T) {
	dir := mountTinyTmpfs(t)
	path := filepath.Join(dir, "out")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	big := bytes.Repeat([]byte("x"), 32<<10)
	var werr error
	for range 8 {
		if _, werr = f.Write(big); werr != nil {
			break
		}
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("writes past 64 KiB: %v, want ENOSPC", werr)
	}
	err = f.Commit()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Commit = %v, want the ENOSPC", err)
	}
	if got := readFile(t, path); got != "old" {
		t.Errorf("target = %q, want the old content", got)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("tmpfs holds %q, want only out", got)
	}
}

// mountTinyTmpfs mounts a 64 KiB tmpfs on a new temporary directory for
// the test and unmounts it at the end; it skips unless run as root.
func mountTinyTmpfs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "memwho-test", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}
