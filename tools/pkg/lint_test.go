package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// What lintian and rpmlint still say about the packages, each with the
// reason it is right; docs/install.md quotes these tables. A line that
// is not here fails its test, and so does one here that they no longer
// say, so that the list stays true.
var (
	lintianExpected = map[string]string{
		"W initial-upload-closes-no-bugs":                          "the package is not uploaded to Debian, so its first changelog entry closes no ITP bug",
		"I package-supports-alternative-init-but-no-init.d-script": "the units rely on systemd (ambient capabilities, sandboxing, StateDirectory); there is no sysvinit script",
		"I spelling-error-in-binary":                               "the words lintian finds (ment, mor, onthe, depending on the build) are in strings of linked modules or are bytes of machine code that strings(1) reads as text, not memwho's messages",
		"P spelling-error-in-copyright":                            "Wich is in a module's own license text, which is quoted as it is",
	}
	rpmlintExpected = map[string]string{
		"E statically-linked-binary":                  "Go binaries are static (CGO_ENABLED=0): no libc to follow, the same bytes on every distribution",
		"W position-independent-executable-suggested": "Go's default for a static executable; memwho is not built with -buildmode=pie",
		"W only-non-binary-in-usr-lib":                "the systemd units and the sysusers.d file belong in /usr/lib; the binaries are in /usr/bin",
		"W non-standard-uid":                          "/var/lib/memwho belongs to the system user memwho, which writes the history",
		"W non-standard-gid":                          "/usr/bin/memwho and /var/lib/memwho belong to the group memwho, whose members may run memwho and read the history's directory",
		"E non-standard-executable-perm":              "/usr/bin/memwho is 0750: only root and the group memwho may run the binary that has capabilities",
		"E non-readable":                              "the same 0750 /usr/bin/memwho",
		"E non-standard-dir-perm":                     "/var/lib/memwho is 0750: the history says what every process used",
		"E no-signature":                              "a distribution signs the packages it publishes with its own key; a local build is unsigned",
		"W no-manual-page-for-binary":                 "a bug of rpmlint 2.4 (it records man pages by section, not by name); memwho.1.gz and memwho-agent.1.gz are in the package",
	}
)

var (
	lintOnce sync.Once
	lintDir  string
	lintErr  string
)

// lintPackages builds both packages once for the lint tests.
func lintPackages(t *testing.T) string {
	t.Helper()
	lintOnce.Do(func() {
		d, err := os.MkdirTemp("", "memwho-lint")
		if err != nil {
			lintErr = err.Error()
			return
		}
		c := exec.Command("../../scripts/package.sh", testVersion)
		c.Env = append(os.Environ(), "OUT="+d, "FORMATS=deb,rpm")
		if b, err := c.CombinedOutput(); err != nil {
			lintErr = err.Error() + "\n" + string(b)
			return
		}
		lintDir = d
	})
	if lintErr != "" {
		t.Fatalf("scripts/package.sh: %s", lintErr)
	}
	return lintDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if lintDir != "" {
		os.RemoveAll(lintDir)
	}
	os.Exit(code)
}

// lintianLine is one line of lintian's output: severity, package, tag.
var lintianLine = regexp.MustCompile(`^([EWIPXO]): memwho(?: \w+)?: (\S+)`)

// TestLintian runs lintian (Debian's package checker, with every
// severity shown) on the .deb.
func TestLintian(t *testing.T) {
	if _, err := exec.LookPath("lintian"); err != nil {
		t.Skip("lintian is not installed (scripts/test.sh installs it)")
	}
	deb := filepath.Join(lintPackages(t), debName)
	out, err := exec.Command("lintian", "--pedantic", "--display-info", "--display-experimental", "--no-tag-display-limit", deb).CombinedOutput()
	if err != nil && len(out) == 0 {
		t.Fatalf("lintian: %v", err)
	}
	t.Logf("lintian %s:\n%s", filepath.Base(deb), out)
	checkLint(t, "lintian", string(out), lintianLine, lintianExpected)
}

var rpmlintLine = regexp.MustCompile(`^memwho\.x86_64: ([EW]): (\S+)`)

// TestRpmlint runs rpmlint with Fedora's settings (packaging/rpmlint.toml)
// on the rpm.
func TestRpmlint(t *testing.T) {
	if _, err := exec.LookPath("rpmlint"); err != nil {
		t.Skip("rpmlint is not installed (scripts/test.sh installs it)")
	}
	rpm := filepath.Join(lintPackages(t), rpmName)
	out, _ := exec.Command("rpmlint", "-c", "../../packaging/rpmlint.toml", rpm).CombinedOutput()
	t.Logf("rpmlint %s:\n%s", filepath.Base(rpm), out)
	if !strings.Contains(string(out), "1 packages and 0 specfiles checked") {
		t.Fatalf("rpmlint did not check the package")
	}
	checkLint(t, "rpmlint", string(out), rpmlintLine, rpmlintExpected)
}

func checkLint(t *testing.T, tool, out string, line *regexp.Regexp, expected map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	var unexpected []string
	for _, l := range strings.Split(out, "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		key := m[1] + " " + m[2]
		seen[key] = true
		if _, ok := expected[key]; !ok {
			unexpected = append(unexpected, l)
		}
	}
	for _, l := range unexpected {
		t.Errorf("%s says %q: fix the package, or add the tag with the reason it is right", tool, l)
	}
	var stale []string
	for k := range expected {
		if !seen[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		t.Errorf("%s no longer says %q: remove it from the expected lines (and docs/install.md)", tool, k)
	}
}
