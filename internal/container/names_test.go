package container

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	idWeb    = "bae9bc2df07a1e918fa1ec026b1d3ff618affb334710107de813f66fee79cb63"
	idDB     = "937416fc084f19de60c9419b6d4342f025d6f1ee9746fe0dd6608907efe746f1"
	idDevbox = "7b0e5275fe55b5e7cc4bed116599dea9dbf205a21fcc52aafdb89f0e29728ad4"
	idDNS    = "b0497e1db699319b41d2df7a46d9e6848654d673c0807a7d8b258473ee0f168b"
	idNginx  = "b4f5ea4e2d724a0152ee92a72c0155f7fe8edcc5d36bb64d92db7cffedd22e3c"
	idEvil   = "d9eb64f71a3de2422bf56d7924bf5e923c9a4f1fa21c6d3aa487d6c54b48e409"
)

// copyTree copies testdata/root into a temporary directory that a test
// may then change (FIFOs and symlinks are not kept in the repository).
func copyTree(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS("testdata/root")); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestNames(t *testing.T) {
	n := NewNames("testdata/root")
	for _, tc := range []struct{ path, want string }{
		{"/system.slice/sshd.service", "host"},
		{"/system.slice/docker-" + idWeb + ".scope", "web"},
		{"/docker/" + idWeb, "web"},
		{"/machine.slice/libpod-" + idDB + ".scope/container", "db"},
		// A bare id: docker has none, podman does.
		{"/" + idDB, "db"},
		{"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + idDevbox + ".scope", "devbox (uid 1000)"},
		// Alice's id in the system's cgroups: not hers, the system has
		// no such container.
		{"/machine.slice/libpod-" + idDevbox + ".scope", idDevbox[:12]},
		// The system's container id in a user's cgroups: resolved
		// from that user's state only.
		{"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + idDB + ".scope", idDB[:12] + " (uid 1000)"},
		// A user absent from etc/passwd.
		{"/user.slice/user-4242.slice/user@4242.service/libpod-" + idDB + ".scope", idDB[:12] + " (uid 4242)"},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3d274242_8ee0_11e9_a8a6_1e68d864ef1a.slice/cri-containerd-" + idDNS + ".scope", "kube-system/coredns-5d78c9869d-abcde/coredns"},
		{"/kubepods/besteffort/pod3d274242-8ee0-11e9-a8a6-1e68d864ef1a/" + idDNS, "kube-system/coredns-5d78c9869d-abcde/coredns"},
		// No log for the container (a pod's sandbox): the pod's name
		// and the short id.
		{"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod90d81341_92de_11e7_8cf2_507b9d4141fa.slice/crio-" + idNginx + ".scope", "default/nginx-7c5ddbdf54-x2x9q/" + idNginx[:12]},
		// An unknown pod.
		{"/kubepods.slice/kubepods-pod00000000_0000_0000_0000_000000000000.slice/cri-containerd-" + idNginx + ".scope", idNginx[:12]},
		{"/machine.slice/systemd-nspawn@debian.service/payload", "debian"},
		{`/machine.slice/machine-web\x2d1.scope`, "web-1"},
		{"/lxc.payload.web1", "web1"},
	} {
		if got := n.Key(tc.path); got != tc.want {
			t.Errorf("Key(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestNamesNoRoot(t *testing.T) {
	n := NewNames("")
	if got := n.Key("/system.slice/docker-" + idWeb + ".scope"); got != idWeb[:12] {
		t.Errorf("no root: %q, want the short id", got)
	}
}

func TestRootFor(t *testing.T) {
	for _, tc := range []struct{ proc, want string }{
		{"/proc", "/"},
		{"/proc/", "/"},
		{"/host/proc", "/host"},
		{"testdata/root/proc", "testdata/root"},
		{"v1", ""},
		{"/tmp/x", ""},
	} {
		if got := RootFor(tc.proc); got != tc.want {
			t.Errorf("RootFor(%q) = %q, want %q", tc.proc, got, tc.want)
		}
	}
}

// TestNamesHostile: what another user controls never reaches anything
// but a name, and never makes memwho block, read a large file or follow
// a link. Each case is an attack docs/safe.md lists.
func TestNamesHostile(t *testing.T) {
	rootless := func(uid, id string) string {
		return "/user.slice/user-" + uid + ".slice/user@" + uid + ".service/user.slice/libpod-" + id + ".scope"
	}
	store := "home/mallory/.local/share/containers/storage/overlay-containers/containers.json"

	t.Run("control characters in a name", func(t *testing.T) {
		// Returned as the bytes the file holds: the renderers escape
		// them (report.Sanitize), as they do for process names.
		n := NewNames("testdata/root")
		got := n.Key(rootless("1001", idEvil))
		if want := "\x1b[2J\x1b[31mroot\a\nfake line\u202e (uid 1001)"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("symlinked containers.json", func(t *testing.T) {
		root := copyTree(t)
		p := filepath.Join(root, store)
		os.Remove(p)
		// Mallory points her state at Alice's (or any file she could
		// not read herself): not followed.
		target := filepath.Join(root, "home/alice/.local/share/containers/storage/overlay-containers/containers.json")
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		if got := NewNames(root).Key(rootless("1001", idDevbox)); got != idDevbox[:12]+" (uid 1001)" {
			t.Errorf("got %q: a symlink was followed", got)
		}
	})
	t.Run("symlinked directory on the way", func(t *testing.T) {
		root := copyTree(t)
		dir := filepath.Join(root, "home/mallory/.local/share/containers/storage/overlay-containers")
		os.RemoveAll(dir)
		if err := os.Symlink(filepath.Join(root, "home/alice/.local/share/containers/storage/overlay-containers"), dir); err != nil {
			t.Fatal(err)
		}
		if got := NewNames(root).Key(rootless("1001", idDevbox)); got != idDevbox[:12]+" (uid 1001)" {
			t.Errorf("got %q: a symlink was followed", got)
		}
	})
	// The runtime's own directory in the home, or a directory above it,
	// a symlink (second review, docs/safe.md): a reader with more rights
	// than Mallory (root running memwho or the agent) would read Alice's
	// state, or the system's, as Mallory's.
	for _, link := range []struct{ at, to string }{
		{"home/mallory/.local/share/containers", "home/alice/.local/share/containers"},
		{"home/mallory/.local/share", "home/alice/.local/share"},
		{"home/mallory/.local", "home/alice/.local"},
		{"home/mallory/.local/share/containers/storage", "home/alice/.local/share/containers/storage"},
	} {
		t.Run("symlinked "+strings.TrimPrefix(link.at, "home/mallory/"), func(t *testing.T) {
			root := copyTree(t)
			at := filepath.Join(root, link.at)
			if err := os.RemoveAll(at); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(root, link.to), at); err != nil {
				t.Fatal(err)
			}
			if got := NewNames(root).Key(rootless("1001", idDevbox)); got != idDevbox[:12]+" (uid 1001)" {
				t.Errorf("got %q: a symlink in the home was followed", got)
			}
		})
	}
	t.Run("FIFO", func(t *testing.T) {
		root := copyTree(t)
		p := filepath.Join(root, store)
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan string)
		go func() { done <- NewNames(root).Key(rootless("1001", idEvil)) }()
		select {
		case got := <-done:
			if got != idEvil[:12]+" (uid 1001)" {
				t.Errorf("got %q", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("blocked on a FIFO")
		}
	})
	t.Run("huge file", func(t *testing.T) {
		root := copyTree(t)
		p := filepath.Join(root, store)
		// Valid JSON, 2 MiB: the name is in it, past the cap.
		pad := strings.Repeat(" ", 2<<20)
		body := `[` + pad + `{"id":"` + idEvil + `","names":["big"]}]`
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := NewNames(root).Key(rootless("1001", idEvil)); got != idEvil[:12]+" (uid 1001)" {
			t.Errorf("got %q: a file over MaxStateFile was read", got)
		}
	})
	t.Run("symlink to /dev/zero", func(t *testing.T) {
		root := copyTree(t)
		p := filepath.Join(root, store)
		os.Remove(p)
		if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
		if got := NewNames(root).Key(rootless("1001", idEvil)); got != idEvil[:12]+" (uid 1001)" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("not a regular file", func(t *testing.T) {
		root := copyTree(t)
		p := filepath.Join(root, store)
		os.Remove(p)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if got := NewNames(root).Key(rootless("1001", idEvil)); got != idEvil[:12]+" (uid 1001)" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("malformed JSON", func(t *testing.T) {
		root := copyTree(t)
		if err := os.WriteFile(filepath.Join(root, store), []byte(`[{"id":"`+idEvil+`","names":["x"`), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := NewNames(root).Key(rootless("1001", idEvil)); got != idEvil[:12]+" (uid 1001)" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("home outside the root", func(t *testing.T) {
		// etc/passwd's home is taken beneath the root, "/.." being
		// "/" there.
		dir := t.TempDir()
		root := filepath.Join(dir, "root")
		if err := os.CopyFS(root, os.DirFS("testdata/root")); err != nil {
			t.Fatal(err)
		}
		outside := filepath.Join(dir, "escape/.local/share/containers/storage/overlay-containers")
		if err := os.MkdirAll(outside, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(outside, "containers.json"), []byte(`[{"id":"`+idEvil+`","names":["escaped"]}]`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("mallory:x:1001:1001::/../escape:/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := NewNames(root).Key(rootless("1001", idEvil)); got != idEvil[:12]+" (uid 1001)" {
			t.Errorf("got %q", got)
		}
	})
}

// TestNamesCache: each file is read once per MaxAge, then again.
func TestNamesCache(t *testing.T) {
	root := copyTree(t)
	n := NewNames(root)
	now := time.Unix(1000, 0)
	n.now = func() time.Time { return now }
	path := "/system.slice/docker-" + idWeb + ".scope"
	if got := n.Key(path); got != "web" {
		t.Fatalf("got %q", got)
	}
	cfg := filepath.Join(root, "var/lib/docker/containers", idWeb, "config.v2.json")
	if err := os.WriteFile(cfg, []byte(`{"Name":"/renamed"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := n.Key(path); got != "web" {
		t.Errorf("within MaxAge: %q, want the cached web", got)
	}
	now = now.Add(n.MaxAge)
	if got := n.Key(path); got != "renamed" {
		t.Errorf("after MaxAge: %q, want renamed", got)
	}
}

// TestNamesUserRights: with a capability effective, nothing is read.
func TestNamesUserRights(t *testing.T) {
	defer func(f func() error) { userRights = f }(userRights)
	userRights = func() error { return errors.New("a capability is effective") }
	n := NewNames("testdata/root")
	if got := n.Key("/system.slice/docker-" + idWeb + ".scope"); got != idWeb[:12] {
		t.Errorf("with a capability effective: %q, want the short id", got)
	}
	if got := n.Key("/machine.slice/systemd-nspawn@debian.service"); got != "debian" {
		t.Errorf("names from the path need no file: %q", got)
	}
}
