package container

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/proc"
)

// TestPodmanLive runs a real podman container (as root, with runc) from an
// image holding only memwho-load, built static, and checks that its
// processes' cgroup parses as podman's and that its name is read from
// podman's containers.json. It skips when podman is not installed or the
// test does not run as root.
func TestPodmanLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a container")
	}
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("podman is not installed (apt-get install podman runc)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: rootless podman needs a user session")
	}
	// podman's state lives in this test's own directories, not the
	// system's /var/lib/containers: the test creates and removes only
	// what it made, and runs again on a machine where the system's
	// storage cannot work (its overlay driver over an overlayfs root
	// failed every later run). vfs works on every file system.
	state := t.TempDir()
	root := filepath.Join(state, "var/lib/containers/storage")
	global := []string{"--root", root, "--runroot", filepath.Join(state, "run"),
		"--tmpdir", filepath.Join(state, "tmp"), "--storage-driver", "vfs", "--events-backend", "none"}
	t.Cleanup(func() {
		// vfs layers may hold read-only directories: podman removes them.
		exec.Command(podman, append(global, "system", "reset", "--force")...).Run()
	})
	cmd := func(args ...string) *exec.Cmd { return exec.Command(podman, append(global, args...)...) }
	run := func(args ...string) string {
		t.Helper()
		out, err := cmd(args...).CombinedOutput()
		if err != nil {
			t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "load")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/memwho/memwho/tools/load")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build memwho-load: %v\n%s", err, out)
	}
	image := filepath.Join(dir, "rootfs.tar")
	writeRootfs(t, image, bin)

	tag := fmt.Sprintf("localhost/memwho-live-test:%d", os.Getpid())
	name := fmt.Sprintf("memwho-live-%d", os.Getpid())
	run("import", image, tag)
	runArgs := []string{"run", "-d", "--name", name, "--runtime", "runc", "--network", "none",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1000:1000",
		tag, "/load", "-n", "2", "-private", "1MiB"}
	if out, err := cmd(runArgs...).CombinedOutput(); err != nil {
		// podman's storage cannot work here (inside another container,
		// overlay over overlayfs needs fuse-overlayfs): nothing of
		// memwho's has run yet.
		if strings.Contains(string(out), "graph driver") || strings.Contains(string(out), "graphdriver") {
			t.Skipf("podman cannot run a container here: %s", strings.TrimSpace(string(out)))
		}
		t.Fatalf("podman %s: %v\n%s", strings.Join(runArgs, " "), err, out)
	}
	t.Cleanup(func() { cmd("rm", "-f", "-t", "0", name).Run() })
	id := run("inspect", "-f", "{{.Id}}", name)
	pid, err := strconv.Atoi(run("inspect", "-f", "{{.State.Pid}}", name))
	if err != nil || pid <= 0 {
		t.Fatalf("container pid: %v", err)
	}

	var path string
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil {
			t.Fatal(err)
		}
		_, sd, err := proc.CgroupPaths(b)
		if err != nil {
			t.Fatal(err)
		}
		path = string(sd)
		if strings.Contains(path, id) || time.Now().After(deadline) {
			t.Logf("/proc/%d/cgroup:\n%s", pid, b)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	ref, ok := Parse(path)
	if !ok || ref.Runtime != Podman || ref.ID != id {
		t.Fatalf("Parse(%q) = %+v, %v; want podman %s", path, ref, ok, id)
	}
	if got := NewNames(state).Key(path); got != name {
		t.Errorf("Key(%q) = %q, want %q", path, got, name)
	}
}

// writeRootfs writes a tar of a root file system holding bin as /load.
func writeRootfs(t *testing.T, out, bin string) {
	t.Helper()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"dev/", "proc/", "sys/", "tmp/", "etc/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: "load", Mode: 0o755, Size: int64(len(b))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
