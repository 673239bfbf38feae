package proc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// mountinfo is a captured mountinfo with hostile tmpfs mount points
// added: a space, a newline and an escape sequence, escaped as the
// kernel escapes them, a backslash, and optional fields.
const mountinfo = `22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
23 1 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw
25 24 0:23 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,inode64
26 24 0:24 / /run rw,nosuid,nodev,size=1612360k,mode=755 shared:5 - tmpfs tmpfs rw,size=1612360k,mode=755,inode64
28 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
40 26 0:35 / /run/user/1000 rw,nosuid,nodev,relatime shared:300 master:5 - tmpfs tmpfs rw,size=806176k,nr_inodes=201544,mode=700,uid=1000,gid=1000,inode64
41 28 0:36 / /home/eve/a\040b\012c\033[31m rw,relatime shared:301 - tmpfs x rw
42 28 0:37 / /home/eve/back\134slash rw,relatime - tmpfs tmpfs rw
43 28 0:38 / /home/eve/not-tmpfs\040- rw,relatime - fuse.tmpfs tmpfs rw
44 28 0:39 / /home/eve/bad\04 rw - tmpfs tmpfs rw
garbage
45 28 0:40 / /short rw - tmpfs
`

func TestParseTmpfsMounts(t *testing.T) {
	want := []string{"/dev/shm", "/run", "/run/user/1000", "/home/eve/a b\nc\x1b[31m", `/home/eve/back\slash`, `/home/eve/bad\04`}
	got, more := ParseTmpfsMounts([]byte(mountinfo), 100)
	if !slices.Equal(got, want) || more != 0 {
		t.Errorf("got %q, %d more\nwant %q", got, more, want)
	}
	got, more = ParseTmpfsMounts([]byte(mountinfo), 2)
	if !slices.Equal(got, want[:2]) || more != len(want)-2 {
		t.Errorf("max 2: got %q, %d more", got, more)
	}
}

// TestTmpfsMountsTree reads self/mountinfo of a tree that is not procfs.
func TestTmpfsMountsTree(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "self", "mountinfo"), []byte(mountinfo), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	got, _, err := TmpfsMounts(fs)
	if err != nil || len(got) != 6 {
		t.Errorf("TmpfsMounts = %q, %v", got, err)
	}
}

// TestTmpfsLive mounts a tmpfs with a hostile name (as root; skipped
// otherwise), writes 1 MiB to it, and finds it in this process's
// mountinfo with at least that much used.
func TestTmpfsLive(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "a b\nc")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("memwho-test", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := Open(DefaultRoot)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	mounts, more, err := TmpfsMounts(fs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(mounts, dir) && more == 0 {
		t.Fatalf("%q not among %q", dir, mounts)
	}
	used, err := TmpfsUsed(dir)
	if err != nil || used < 1<<20 || used > 2<<20 {
		t.Errorf("TmpfsUsed = %d, %v; want about 1 MiB", used, err)
	}
	if _, err := TmpfsUsed(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a tmpfs") && !strings.Contains(err.Error(), "statfs") {
		t.Errorf("TmpfsUsed of a directory on the temp file system: %v", err)
	}
}

func FuzzParseTmpfsMounts(f *testing.F) {
	f.Add([]byte(mountinfo))
	f.Add([]byte("1 1 0:1 / \\ rw - tmpfs t rw\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		mounts, more := ParseTmpfsMounts(b, 3)
		if len(mounts) > 3 || more < 0 {
			t.Fatalf("%d mounts, %d more", len(mounts), more)
		}
		for _, m := range mounts {
			if len(m) > len(b) {
				t.Fatalf("mount point %q longer than the input", m)
			}
		}
	})
}

// TestTmpfsUsedSymlinkedParent is the planted link: a
// user who owns the directory above a tmpfs mount point renames it (the
// mount moves with it) and leaves a symbolic link in its place to
// another tmpfs's directory of the same name. mountinfo still names the
// old path; its figure must not be the other tmpfs's.
func TestTmpfsUsedSymlinkedParent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	root := t.TempDir()
	mount := func(dir string, size int) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("memwho-test", dir, "tmpfs", 0, "size=8m"); err != nil {
			t.Skipf("mount tmpfs: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
		if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mount(filepath.Join(root, "x", "m"), 1<<20)
	mount(filepath.Join(root, "other", "m"), 3<<20)
	path := filepath.Join(root, "x", "m")
	if used, err := TmpfsUsed(path); err != nil || used > 2<<20 {
		t.Fatalf("before the swap: %d, %v", used, err)
	}
	if err := os.Rename(filepath.Join(root, "x"), filepath.Join(root, "x.old")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(filepath.Join(root, "x.old", "m"), unix.MNT_DETACH) })
	if err := os.Symlink(filepath.Join(root, "other"), filepath.Join(root, "x")); err != nil {
		t.Fatal(err)
	}
	if used, err := TmpfsUsed(path); err == nil {
		t.Errorf("TmpfsUsed through a planted link = %d bytes (the other tmpfs's), want an error", used)
	}
	// The mount point itself a link to a tmpfs (not what mountinfo
	// lists, but a user may race it): refused the same.
	if err := os.Symlink(filepath.Join(root, "other", "m"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if used, err := TmpfsUsed(filepath.Join(root, "link")); err == nil {
		t.Errorf("TmpfsUsed of a link = %d bytes, want an error", used)
	}
}
