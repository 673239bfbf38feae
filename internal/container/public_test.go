package container

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNamesPublic: names others read (the agent's) come only from state
// they could read themselves. Alice's rootless storage closed to others
// (0700, hers, as podman makes it) leaves the short id under Public,
// whoever reads it (root: issue 27, finding 2); opened to all, or read
// for oneself (Public unset), it gives her container's name. The
// system's state stays readable: root's, or the test runner's and open
// to all.
func TestNamesPublic(t *testing.T) {
	root := copyTree(t)
	// t.TempDir makes its directories 0700: open them to all, as / is.
	for _, d := range []string{root, filepath.Dir(root)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	storage := filepath.Join(root, "home/alice/.local/share/containers")
	if os.Geteuid() == 0 {
		// As podman leaves it: the owner's, closed to others.
		filepath.Walk(storage, func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				err = os.Chown(p, 1000, 1000)
			}
			return err
		})
	}
	rootless := "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + idDevbox + ".scope"
	system := "/machine.slice/libpod-" + idDB + ".scope/container"
	kube := "/kubepods/besteffort/pod3d274242-8ee0-11e9-a8a6-1e68d864ef1a/" + idDNS
	check := func(public bool, want string) {
		t.Helper()
		n := NewNames(root)
		n.Public = public
		if got := n.Key(rootless); got != want {
			t.Errorf("Public %v, storage %v: %q, want %q", public, mode(t, storage), got, want)
		}
		if got := n.Key(system); got != "db" {
			t.Errorf("Public %v: the system's container is %q, want db", public, got)
		}
		if got := n.Key(kube); got != "kube-system/coredns-5d78c9869d-abcde/coredns" {
			t.Errorf("Public %v: the pod's container is %q", public, got)
		}
	}
	check(true, "devbox (uid 1000)")
	if err := os.Chmod(storage, 0o700); err != nil {
		t.Fatal(err)
	}
	check(false, "devbox (uid 1000)")
	check(true, idDevbox[:12]+" (uid 1000)")
	// Closed higher up: the home itself.
	os.Chmod(storage, 0o755)
	if err := os.Chmod(filepath.Join(root, "home/alice"), 0o700); err != nil {
		t.Fatal(err)
	}
	check(true, idDevbox[:12]+" (uid 1000)")
	// The file alone closed to others.
	os.Chmod(filepath.Join(root, "home/alice"), 0o755)
	if err := os.Chmod(filepath.Join(storage, "storage/overlay-containers/containers.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	check(true, idDevbox[:12]+" (uid 1000)")
}

func mode(t *testing.T, path string) os.FileMode {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}
