package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestUnitsVerify checks the systemd units as the .deb installs them
// with systemd-analyze verify (the agent's path pointed at the packaged
// binary, extracted beside them), and that the recorder and the hourly
// export work together as shipped: the same user, the same database, a
// state directory the export may write (SQLite writes -shm beside a
// database in WAL mode even to read it).
func TestUnitsVerify(t *testing.T) {
	for _, tool := range []string{"systemd-analyze", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	root := t.TempDir()
	run(t, "dpkg-deb", "-x", filepath.Join(lintPackages(t), debName), root)
	units := filepath.Join(root, "usr/lib/systemd/system")
	dir := t.TempDir()
	text := map[string]string{}
	var paths []string
	for _, u := range []string{"memwho.service", "memwho-record.service", "memwho-export.service", "memwho-export.timer"} {
		b, err := os.ReadFile(filepath.Join(units, u))
		if err != nil {
			t.Fatal(err)
		}
		text[u] = string(b)
		s := strings.ReplaceAll(string(b), "/usr/bin/memwho-agent", filepath.Join(root, "usr/bin/memwho-agent"))
		p := filepath.Join(dir, u)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := exec.Command("systemd-analyze", append([]string{"verify"}, paths...)...).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}

	key := func(unit, k string) []string {
		var v []string
		for _, l := range strings.Split(text[unit], "\n") {
			if val, ok := strings.CutPrefix(l, k+"="); ok {
				v = append(v, val)
			}
		}
		return v
	}
	for _, k := range []string{"User", "Group", "StateDirectory", "StateDirectoryMode"} {
		r, e := key("memwho-record.service", k), key("memwho-export.service", k)
		if len(r) != 1 || strings.Join(r, " ") != strings.Join(e, " ") {
			t.Errorf("%s: recorder %q, export %q: want one, the same", k, r, e)
		}
	}
	if ro := key("memwho-export.service", "ReadOnlyPaths"); strings.Contains(strings.Join(ro, " "), "/var/lib/memwho") {
		t.Errorf("the export may not write /var/lib/memwho (ReadOnlyPaths=%s): SQLite cannot create -shm", ro)
	}
	db := regexp.MustCompile(`--db (\S+)`)
	r := db.FindStringSubmatch(text["memwho-record.service"])
	e := db.FindStringSubmatch(text["memwho-export.service"])
	if r == nil || e == nil || r[1] != e[1] || !strings.HasPrefix(r[1], "/var/lib/memwho/") {
		t.Errorf("recorder --db %q, export --db %q: want the same file in the state directory", r, e)
	}
}
