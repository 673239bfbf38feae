package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRpmPayloadRelative: the payload's paths are relative, as
// rpmbuild writes them, so that "rpm2cpio x.rpm | cpio -id" extracts into
// the current directory (and not into /, as rpmlint and people run it).
func TestRpmPayloadRelative(t *testing.T) {
	for _, tool := range []string{"rpm2cpio", "cpio", "rpm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (scripts/test.sh installs rpm and cpio)", tool)
		}
	}
	rpm := filepath.Join(lintPackages(t), rpmName)
	names := run(t, "sh", "-c", "rpm2cpio "+rpm+" | cpio --quiet -t")
	n := 0
	for _, name := range strings.Fields(names) {
		n++
		if !strings.HasPrefix(name, "./") {
			t.Errorf("payload path %q is not relative", name)
		}
	}
	if n < 20 {
		t.Errorf("payload lists %d paths: %s", n, names)
	}
	dir := t.TempDir()
	c := exec.Command("sh", "-c", "rpm2cpio "+rpm+" | cpio --quiet -id")
	c.Dir = dir
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("rpm2cpio | cpio -id: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "usr/bin/memwho-agent")); err != nil {
		t.Errorf("not extracted under the current directory: %v", err)
	}
	// rpm checks the digests this repository's rewrite of nfpm's rpm
	// (rpmfix.go) computes.
	if out := run(t, "rpm", "-K", rpm); !strings.Contains(out, "digests OK") {
		t.Errorf("rpm -K: %s", out)
	}
	q := run(t, "rpm", "-qp", "--qf", "%{LICENSE}\n[%{REQUIREFLAGS:deptype} %{REQUIRENAME}\n][order %{ORDERNAME}\n]", rpm)
	for _, want := range []string{"Apache-2.0 AND", "MIT", "pre shadow-utils", "rpmlib(FileCaps)", "rpmlib(PayloadFilesHavePrefix)", "order systemd"} {
		if !strings.Contains(q, want) {
			t.Errorf("rpm -qp: no %q in\n%s", want, q)
		}
	}
}

// TestRpmRootInstall installs the rpm for real with rpm --root into a
// scratch root file system (no rpm-based distribution can be installed
// here: only Debian's archive is reachable). The root holds what the
// scriptlets run in it need: /bin/sh, getent, groupadd and useradd with
// their libraries, copied from this machine. Checks the files, owners,
// modes and capabilities that rpm itself set (%attr, %caps, no %post),
// rpm -V, the scriptlets' effects on install, upgrade and erase, and that
// erase keeps the user and group.
func TestRpmRootInstall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("rpm --root runs the scriptlets in a chroot: needs root")
	}
	for _, tool := range []string{"rpm", "getcap", "ldd", "groupadd", "useradd", "getent"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	rpm := filepath.Join(lintPackages(t), rpmName)
	root := t.TempDir()
	makeRoot(t, root)
	run(t, "rpm", "--root", root, "--initdb")
	// --nodeps: the root's rpm database knows no shadow-utils.
	out := run(t, "rpm", "--root", root, "-i", "--nodeps", rpm)
	if !strings.Contains(out, "usermod -aG memwho USER") {
		t.Errorf("%%post did not say how to add a member: %q", out)
	}
	gid := lookup(t, root, "group", "memwho")
	uid := lookup(t, root, "passwd", "memwho")
	check := func(t *testing.T) {
		checkPath(t, root, "/usr/bin/memwho", 0, gid, 0o750)
		checkPath(t, root, "/usr/bin/memwho-agent", 0, 0, 0o755)
		checkPath(t, root, "/var/lib/memwho", uid, gid, 0o750|os.ModeDir)
		checkPath(t, root, "/usr/share/licenses/memwho/copyright", 0, 0, 0o644)
		checkPath(t, root, "/usr/share/licenses/memwho/LICENSE", 0, 0, 0o644)
		checkPath(t, root, "/usr/lib/sysusers.d/memwho.conf", 0, 0, 0o644)
		checkPath(t, root, "/usr/lib/systemd/system/memwho-record.service", 0, 0, 0o644)
		if caps := run(t, "getcap", filepath.Join(root, "usr/bin/memwho")); !strings.Contains(caps, "cap_dac_read_search,cap_sys_ptrace=ep") {
			t.Errorf("getcap: %q, want cap_dac_read_search,cap_sys_ptrace=ep", caps)
		}
		// Verify: sizes, digests, modes, owners, capabilities as the
		// package says (a %post chmod or setcap would show here).
		if b, err := exec.Command("rpm", "--root", root, "-V", "memwho").CombinedOutput(); err != nil || len(b) != 0 {
			t.Errorf("rpm -V: %v\n%s", err, b)
		}
		for _, q := range []struct{ args, want string }{
			{"-qf /usr/share/doc/memwho", "memwho-"},
			{"-qf /usr/share/licenses/memwho", "memwho-"},
			{"-qf /var/lib/memwho", "memwho-"},
			{"-qd memwho", "/usr/share/man/man1/memwho.1.gz"},
			{"-qL memwho", "/usr/share/licenses/memwho/copyright"},
		} {
			if got := run(t, "rpm", append([]string{"--root", root}, strings.Fields(q.args)...)...); !strings.Contains(got, q.want) {
				t.Errorf("rpm %s: %q, want %q in it", q.args, got, q.want)
			}
		}
	}
	t.Run("installed", check)

	// An upgrade (the same package again): %pre finds the user and group.
	run(t, "rpm", "--root", root, "-U", "--replacepkgs", "--nodeps", rpm)
	t.Run("upgraded", check)
	if g := lookup(t, root, "group", "memwho"); g != gid {
		t.Errorf("the upgrade made the group again: gid %d, was %d", g, gid)
	}

	run(t, "rpm", "--root", root, "-e", "memwho")
	for _, p := range []string{"/usr/bin/memwho", "/usr/share/doc/memwho", "/var/lib/memwho", "/usr/share/licenses/memwho"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("left after the erase: %s", p)
		}
	}
	// Fedora: a package never removes its user or group (files they own
	// may outlive it, and a reused id would inherit them).
	lookup(t, root, "group", "memwho")
	lookup(t, root, "passwd", "memwho")
}

// makeRoot lays out a root file system in which rpm's scriptlets run:
// the shell and the account tools with their libraries, and the account
// files with root alone.
func makeRoot(t *testing.T, root string) {
	t.Helper()
	var files []string
	for _, tool := range []string{"sh", "getent", "groupadd", "useradd"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skip(err)
		}
		files = append(files, p)
		for _, f := range strings.Fields(run(t, "ldd", p)) {
			if strings.HasPrefix(f, "/") {
				files = append(files, f)
			}
		}
	}
	for _, f := range files {
		real, err := filepath.EvalSymlinks(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(real)
		if err != nil {
			t.Fatal(err)
		}
		for _, dst := range []string{f, "/bin/" + filepath.Base(f)} {
			if !strings.Contains(f, "/bin/") && dst != f {
				continue
			}
			writeFile(t, filepath.Join(root, dst), b, 0o755)
		}
	}
	for name, text := range map[string]string{
		"etc/passwd":        "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group":         "root:x:0:\n",
		"etc/shadow":        "root:*:19000:0:99999:7:::\n",
		"etc/gshadow":       "root:*::\n",
		"etc/nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\ngshadow: files\n",
		"etc/login.defs":    "SYS_UID_MIN 100\nSYS_UID_MAX 999\nSYS_GID_MIN 100\nSYS_GID_MAX 999\nUID_MIN 1000\nGID_MIN 1000\n",
	} {
		writeFile(t, filepath.Join(root, name), []byte(text), 0o644)
	}
	// The scriptlets redirect to /dev/null.
	os.MkdirAll(filepath.Join(root, "dev"), 0o755)
	if err := syscall.Mknod(filepath.Join(root, "dev/null"), syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(root, "etc/shadow"), 0o600)
	os.Chmod(filepath.Join(root, "etc/gshadow"), 0o600)
}

func writeFile(t *testing.T, path string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, mode); err != nil {
		t.Fatal(err)
	}
}

// lookup returns the id of name in root's /etc/passwd or /etc/group.
func lookup(t *testing.T, root, db, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "etc", db))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ":")
		if len(f) > 2 && f[0] == name {
			id, err := strconv.Atoi(f[2])
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
	}
	t.Fatalf("no %s %s in the root:\n%s", db, name, bytes.TrimSpace(b))
	return -1
}

func checkPath(t *testing.T, root, path string, uid, gid int, mode os.FileMode) {
	t.Helper()
	st, err := os.Lstat(filepath.Join(root, path))
	if err != nil {
		t.Error(err)
		return
	}
	sys := st.Sys().(*syscall.Stat_t)
	if int(sys.Uid) != uid || int(sys.Gid) != gid {
		t.Errorf("%s: owner %d:%d, want %d:%d", path, sys.Uid, sys.Gid, uid, gid)
	}
	if got := st.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeDir); got != mode {
		t.Errorf("%s: mode %v, want %v", path, got, mode)
	}
}
