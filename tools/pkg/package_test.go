package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// testVersion is what the test packages are stamped with.
const testVersion = "0.0.1~pkgtest"

// The packages' file names: the release is 1.
const (
	debName = "memwho_" + testVersion + "-1_amd64.deb"
	rpmName = "memwho-" + testVersion + "-1.x86_64.rpm"
)

// buildPackages runs scripts/package.sh into a fresh directory and returns
// it. Each build takes about 10 s (two static binaries, then nfpm).
// Extra environment variables (such as GOCACHE) go to the script.
func buildPackages(t *testing.T, formats string, env ...string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go command: %v", err)
	}
	out := t.TempDir()
	c := exec.Command("../../scripts/package.sh", testVersion)
	c.Env = append(append(os.Environ(), "OUT="+out, "FORMATS="+formats), env...)
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("scripts/package.sh: %v\n%s", err, b)
	}
	return out
}

func sha(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// TestReproducible builds the packages twice, seconds apart (every
// timestamp comes from SOURCE_DATE_EPOCH, the commit time), and compares
// their bytes. With MEMWHO_PKG_COLD=1 the second build starts from an
// empty Go build cache, so the binaries are compiled again too (164 s in
// all on 2 shared cores, against about 20 s).
func TestReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the packages twice (about 20 s)")
	}
	a := buildPackages(t, "deb,rpm")
	var env []string
	if os.Getenv("MEMWHO_PKG_COLD") == "1" {
		env = append(env, "GOCACHE="+t.TempDir())
	}
	b := buildPackages(t, "deb,rpm", env...)
	for _, name := range []string{debName, rpmName} {
		x, y := sha(t, filepath.Join(a, name)), sha(t, filepath.Join(b, name))
		if x != y {
			t.Errorf("%s: two builds differ: sha256 %s and %s", name, x, y)
		} else {
			t.Logf("%s: sha256 %s both times", name, x)
		}
	}
}

// run runs a command and fails the test on error, returning its output.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	b, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
	return string(b)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

const (
	pkgName  = "memwho"
	bin      = "/usr/bin/memwho"
	testUser = "memwho-pkgtest" // not the memwho-test of cmd/memwho's tests
)

// TestDebInstall installs the .deb on this machine, runs memwho as a
// member and as a non-member of the group memwho, upgrades the package
// over itself, purges it and checks that nothing is left but the user and
// group memwho (kept, as Debian's packages keep their system users), which
// it then removes itself. It needs root, dpkg, setcap/getcap, setpriv and
// useradd, and a machine where memwho is neither installed nor has a user
// or group (so that the ones it removes are the package's): it skips
// otherwise.
func TestDebInstall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("installs a package: needs root")
	}
	for _, tool := range []string{"dpkg", "dpkg-deb", "setcap", "getcap", "setpriv", "useradd", "userdel"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is missing (Debian packages dpkg, libcap2-bin, util-linux, passwd)", tool)
		}
	}
	if exec.Command("dpkg-query", "-W", pkgName).Run() == nil {
		t.Skip("a memwho package is installed (or half-removed) on this machine: not touching it")
	}
	if _, err := user.LookupGroup("memwho"); err == nil {
		t.Skip("the group memwho exists already: the test removes the one the package makes, and this one is not")
	}
	if _, err := user.Lookup("memwho"); err == nil {
		t.Skip("the user memwho exists already: the test removes the one the package makes, and this one is not")
	}
	deb := filepath.Join(buildPackages(t, "deb"), debName)

	// What the package holds, and which of its directories exist before
	// the install: after the purge, exactly those may remain.
	var paths []string
	preexisting := map[string]bool{}
	for _, f := range strings.Fields(run(t, "sh", "-c", "dpkg-deb --fsys-tarfile "+deb+" | tar -t")) {
		p := filepath.Clean(strings.TrimPrefix(f, "."))
		if p == "/" {
			continue
		}
		paths = append(paths, p)
		preexisting[p] = exists(p)
	}
	if len(paths) < 10 {
		t.Fatalf("package lists only %v", paths)
	}

	target := exec.Command("sleep", "600") // a root process to measure
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Process.Kill(); target.Wait() })

	t.Cleanup(func() {
		// Whatever happened, leave no package, no test user, and not
		// the user and group the package made (none existed before).
		exec.Command("userdel", testUser).Run()
		if exec.Command("dpkg-query", "-W", pkgName).Run() == nil {
			if b, err := exec.Command("dpkg", "--purge", pkgName).CombinedOutput(); err != nil {
				t.Errorf("cleanup: dpkg --purge: %v\n%s", err, b)
			}
		}
		exec.Command("userdel", "memwho").Run()
		exec.Command("groupdel", "memwho").Run()
	})
	t.Logf("%s", run(t, "dpkg", "-i", deb))
	checkInstalled(t)

	exec.Command("userdel", testUser).Run() // a leftover of a killed run
	run(t, "useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--groups", "memwho", testUser)
	u, err := user.Lookup(testUser)
	if err != nil {
		t.Fatal(err)
	}
	member := []string{"--reuid=" + u.Uid, "--regid=" + u.Gid, "--init-groups"}
	// nobody, in no group but nogroup: not a member.
	nonMember := []string{"--reuid=65534", "--regid=65534", "--clear-groups"}

	checkRuns := func(t *testing.T) {
		t.Run("member sees exact figures of a root process", func(t *testing.T) {
			checkExact(t, member, target.Process.Pid)
		})
		t.Run("non-member cannot run it", func(t *testing.T) {
			stdout, stderr, err := setpriv(nonMember, "--by", "pid")
			if err == nil || !strings.Contains(stderr, "Permission denied") || stdout != "" {
				t.Errorf("as nobody: err %v, stdout %q, stderr %q; want exec refused (0750)", err, stdout, stderr)
			}
		})
	}
	t.Run("installed", checkRuns)

	// Upgrade over itself: dpkg unpacks a fresh root:root 0750 binary
	// without capabilities; postinst must set everything again.
	t.Logf("%s", run(t, "dpkg", "-i", deb))
	checkInstalled(t)
	t.Run("reinstalled", checkRuns)

	run(t, "userdel", testUser)
	t.Logf("%s", run(t, "dpkg", "--purge", pkgName))
	if b, err := exec.Command("dpkg-query", "-W", pkgName).CombinedOutput(); err == nil {
		t.Errorf("dpkg still knows the package after the purge: %s", b)
	}
	if m, _ := filepath.Glob("/var/lib/dpkg/info/" + pkgName + ".*"); len(m) > 0 {
		t.Errorf("dpkg metadata left: %v", m)
	}
	for _, p := range paths {
		if !preexisting[p] && exists(p) {
			t.Errorf("left after the purge: %s", p)
		}
	}
	if _, err := user.LookupGroup("memwho"); err != nil {
		t.Errorf("the group memwho is gone after the purge (%v): system users and groups are kept", err)
	}
	if _, err := user.Lookup("memwho"); err != nil {
		t.Errorf("the user memwho is gone after the purge (%v): system users and groups are kept", err)
	}
	if b, err := exec.Command("dpkg-statoverride", "--list", bin).CombinedOutput(); err == nil {
		t.Errorf("a statoverride of %s is left after the purge: %s", bin, b)
	}
}

// checkInstalled checks owners, modes and capabilities after dpkg -i.
func checkInstalled(t *testing.T) {
	t.Helper()
	g, err := user.LookupGroup("memwho")
	if err != nil {
		t.Fatalf("no group memwho after the install: %v", err)
	}
	if _, err := user.Lookup("memwho"); err != nil {
		t.Errorf("no user memwho (memwho.service runs as it): %v", err)
	}
	caps := strings.TrimSpace(run(t, "getcap", bin))
	want := os.FileMode(0o750)
	if caps == "" {
		// postinst fell back to setuid root: the filesystem has no
		// extended attributes.
		want |= os.ModeSetuid
		t.Logf("no file capabilities on %s: setuid fallback", bin)
	} else if !strings.Contains(caps, "cap_dac_read_search,cap_sys_ptrace=p") {
		t.Errorf("getcap: %q, want cap_dac_read_search,cap_sys_ptrace=p", caps)
	}
	checkFile(t, bin, 0, g.Gid, want)
	// dpkg applies the owner and mode at every unpack (an upgrade never
	// leaves the binary runnable by everyone, even for a moment).
	if so := strings.Fields(run(t, "dpkg-statoverride", "--list", bin)); !slices.Equal(so, []string{"root", "memwho", "750", bin}) {
		t.Errorf("dpkg-statoverride --list %s: %q, want root memwho 750", bin, so)
	}
	checkFile(t, "/usr/bin/memwho-agent", 0, "0", 0o755)
	for _, f := range []string{
		"/usr/share/man/man1/memwho.1.gz",
		"/usr/share/bash-completion/completions/memwho",
		"/usr/share/zsh/vendor-completions/_memwho",
		"/usr/share/fish/vendor_completions.d/memwho.fish",
		"/usr/lib/systemd/system/memwho-export.timer",
		"/usr/lib/sysusers.d/memwho.conf",
		"/usr/share/doc/memwho/copyright",
		"/usr/share/doc/memwho/changelog.Debian.gz",
		"/usr/share/doc/memwho/agent.md",
		"/usr/share/lintian/overrides/memwho",
	} {
		checkFile(t, f, 0, "0", 0o644)
	}
	for _, unit := range []string{"memwho.service", "memwho-record.service", "memwho-export.service"} {
		b, err := os.ReadFile("/usr/lib/systemd/system/" + unit)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("ExecStart=")) || bytes.Contains(b, []byte("ExecStart=/usr/local")) || !bytes.Contains(b, []byte("/usr/bin/memwho-agent ")) {
			t.Errorf("%s does not run /usr/bin/memwho-agent", unit)
		}
	}
	if v := run(t, bin, "version"); !strings.Contains(v, testVersion) {
		t.Errorf("memwho version: %q, want %s", v, testVersion)
	}
	if v := run(t, "/usr/bin/memwho-agent", "version"); !strings.Contains(v, testVersion) {
		t.Errorf("memwho-agent version: %q, want %s", v, testVersion)
	}
}

func checkFile(t *testing.T, path string, uid int, gid string, mode os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	sys := st.Sys().(*syscall.Stat_t)
	if int(sys.Uid) != uid || strconv.Itoa(int(sys.Gid)) != gid {
		t.Errorf("%s: owner %d:%d, want %d:%s", path, sys.Uid, sys.Gid, uid, gid)
	}
	if got := st.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid); got != mode {
		t.Errorf("%s: mode %v, want %v", path, got, mode)
	}
}

// setpriv runs the installed memwho with the given identity. Through a
// shell: setpriv itself still holds root's capabilities when it execs
// (they are cleared by that exec), so it would run a 0750 file for anyone.
func setpriv(ids []string, args ...string) (string, string, error) {
	argv := append(append([]string{}, ids...), "--", "/bin/sh", "-c", `exec "$0" "$@"`, bin)
	c := exec.Command("setpriv", append(argv, args...)...)
	c.Env = []string{"PATH=/usr/bin:/bin", "NO_COLOR=1", "HOME=/nonexistent"}
	c.Dir = "/"
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	return stdout.String(), stderr.String(), err
}

// pss reads Pss (bytes) of pid as root.
func pss(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n << 10
		}
	}
	t.Fatalf("no Pss in smaps_rollup of %d", pid)
	return 0
}

// pssSlack is how far an idle process's Pss may move while memwho runs:
// other processes (setpriv, memwho) map and unmap the libraries it shares.
const pssSlack = 64 << 10

// checkExact runs memwho --by pid -p pid --json with ids and compares its
// figure with smaps_rollup read by root around the run: an estimate
// (accuracy other than exact) means the capabilities did not work.
func checkExact(t *testing.T, ids []string, pid int) {
	t.Helper()
	p1 := pss(t, pid)
	stdout, stderr, err := setpriv(ids, "--by", "pid", "-p", strconv.Itoa(pid), "--json")
	p2 := pss(t, pid)
	if err != nil {
		t.Fatalf("memwho as a member: %v\n%s", err, stderr)
	}
	var r struct {
		Groups []struct {
			RAM      int64  `json:"ram_bytes"`
			Accuracy string `json:"accuracy"`
		} `json:"groups"`
		Denied int `json:"denied_processes"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("JSON: %v\n%s", err, stdout)
	}
	if len(r.Groups) != 1 {
		t.Fatalf("want one group, got %+v", r.Groups)
	}
	g := r.Groups[0]
	if g.Accuracy != "exact" || r.Denied != 0 {
		t.Fatalf("accuracy %q, %d denied: the capabilities did not reach smaps_rollup (stderr %q)", g.Accuracy, r.Denied, stderr)
	}
	if g.RAM+pssSlack < min(p1, p2) || g.RAM > max(p1, p2)+pssSlack {
		t.Errorf("ram_bytes %d, smaps_rollup Pss read by root %d and %d (±%d)", g.RAM, p1, p2, pssSlack)
	}
}
