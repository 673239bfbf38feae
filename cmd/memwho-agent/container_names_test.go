package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestServeContainerNamesPublic: the agent publishes a container's name
// only from state its readers could read themselves. Run as root on a
// host where alice keeps her rootless podman storage closed (0700, as
// podman makes it), its labels named her container, which the socket's
// group, reading alice's storage with their own rights, cannot (issue
// 27, finding 2). Now they show the short id, as the member's own
// memwho --by container does; the system's containers keep their
// names.
func TestServeContainerNamesPublic(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.CopyFS(root, os.DirFS("../../internal/container/testdata/root")); err != nil {
		t.Fatal(err)
	}
	a, err := txtar.ParseFile("../../internal/proc/testdata/containers.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if err := proctest.Unpack(a, filepath.Join(root, "proc")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(dir), dir, root} {
		os.Chmod(d, 0o755)
	}
	storage := filepath.Join(root, "home/alice/.local/share/containers")
	if os.Geteuid() == 0 {
		filepath.Walk(storage, func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				err = os.Chown(p, 1000, 1000)
			}
			return err
		})
	}
	serve := func() string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args := []string{"serve", "--once", "--proc", filepath.Join(root, "proc"), "--by", "container"}
		if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
			t.Fatalf("memwho-agent %v: exit %d: %s", args, code, stderr.String())
		}
		return stdout.String()
	}
	// Premise: open to all, the name is everybody's.
	if out := serve(); !strings.Contains(out, `"devbox (uid 1000)"`) {
		t.Fatalf("alice's storage open to all: no devbox label:\n%s", out)
	}
	if err := os.Chmod(storage, 0o700); err != nil {
		t.Fatal(err)
	}
	out := serve()
	if strings.Contains(out, "devbox") || !strings.Contains(out, `"7b0e5275fe55 (uid 1000)"`) {
		t.Errorf("alice's storage closed: want the short id, not her container's name:\n%s", out)
	}
	if !strings.Contains(out, `"db"`) || !strings.Contains(out, `"web"`) {
		t.Errorf("the system's containers lost their names:\n%s", out)
	}
}
