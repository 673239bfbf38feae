// Package privtest helps tests that run memwho as an unprivileged user
// holding capabilities: it creates the user, checks that the kernel and
// the machine allow what the test needs (skipping with the reason
// otherwise) and places binaries where that user can execute them.
//
// Every helper needs root; tests call [RequireRoot] first.
package privtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// UserName is the unprivileged account the tests run memwho as. It is
// created (system account, no home, no shell) when missing and left in
// place: creating it again for every run would only churn /etc/passwd.
const UserName = "memwho-test"

// User is an account's numeric identity.
type User struct {
	Name     string
	UID, GID int
}

// RequireRoot skips the test unless it runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs memwho as another user with capabilities")
	}
}

// RequireCaps skips the test unless the bounding set holds every
// capability in names (as in /usr/include/linux/capability.h numbers):
// without them in the bounding set, exec of a binary carrying them as
// file capabilities fails with EPERM, and ambient capabilities cannot be
// raised (a container started without CAP_SYS_PTRACE, for instance).
func RequireCaps(t testing.TB, caps ...int) {
	t.Helper()
	bnd, err := statusHex("/proc/self/status", "CapBnd")
	if err != nil {
		t.Skipf("cannot read the bounding set: %v", err)
	}
	for _, c := range caps {
		if bnd&(1<<uint(c)) == 0 {
			t.Skipf("capability %d is not in this process's bounding set (CapBnd %#x): the kernel would refuse it", c, bnd)
		}
	}
}

// EnsureUser returns UserName, creating it with useradd if it does not
// exist; it skips the test when useradd is missing.
func EnsureUser(t testing.TB) User {
	t.Helper()
	if u, err := lookup(UserName); err == nil {
		return u
	}
	useradd, err := exec.LookPath("useradd")
	if err != nil {
		t.Skipf("user %s does not exist and useradd is missing (Debian package passwd)", UserName)
	}
	out, err := exec.Command(useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", UserName).CombinedOutput()
	if err != nil {
		// Another test process may have created it in the meantime.
		if u, lerr := lookup(UserName); lerr == nil {
			return u
		}
		t.Fatalf("useradd %s: %v\n%s", UserName, err, out)
	}
	u, err := lookup(UserName)
	if err != nil {
		t.Fatalf("after useradd: %v", err)
	}
	return u
}

func lookup(name string) (User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return User{}, err
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return User{}, err
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return User{}, err
	}
	return User{Name: name, UID: uid, GID: gid}, nil
}

// PublicDir returns a new directory that every user can traverse and
// read (mode 0755, root-owned), removed at the end of the test. t.TempDir
// is not enough: its parent is private to root.
func PublicDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "memwho-privtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The temporary directory itself must be traversable too.
	if st, err := os.Stat(filepath.Dir(dir)); err != nil || st.Mode().Perm()&0o001 == 0 {
		t.Skipf("%s is not traversable by other users", filepath.Dir(dir))
	}
	return dir
}

// CopyExecutable copies the running test binary into dir as name, mode
// 0755, so that another user can run it (go test keeps its binaries in a
// private directory).
func CopyExecutable(t testing.TB, dir, name string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	if err := CopyFile(self, dst, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// CopyFile copies src to dst with mode.
func CopyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// SetcapWorks reports whether file capabilities can be stored in dir's
// filesystem (tmpfs, overlayfs and some network filesystems may refuse
// the security.capability extended attribute), and why not.
func SetcapWorks(dir string) (bool, string) {
	setcap, err := exec.LookPath("setcap")
	if err != nil {
		return false, "setcap is missing (Debian package libcap2-bin)"
	}
	probe := filepath.Join(dir, ".setcap-probe")
	if err := os.WriteFile(probe, []byte("#!/bin/true\n"), 0o755); err != nil {
		return false, err.Error()
	}
	defer os.Remove(probe)
	if out, err := exec.Command(setcap, "cap_sys_ptrace+ep", probe).CombinedOutput(); err != nil {
		return false, fmt.Sprintf("setcap on %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
	}
	return true, ""
}

// TaskCaps returns, for every thread of process pid, its CapPrm and
// CapEff masks and its Uid line, keyed by thread id.
func TaskCaps(pid int) (map[string][3]string, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[string][3]string)
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name(), "status"))
		if err != nil {
			continue
		}
		var v [3]string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, val, _ := strings.Cut(sc.Text(), ":")
			switch k {
			case "CapPrm":
				v[0] = strings.TrimSpace(val)
			case "CapEff":
				v[1] = strings.TrimSpace(val)
			case "Uid":
				v[2] = strings.Join(strings.Fields(val), " ")
			}
		}
		f.Close()
		out[e.Name()] = v
	}
	return out, nil
}

func statusHex(path, key string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(line, ":")
		if k == key {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s line", path, key)
}
