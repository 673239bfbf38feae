package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSystemdLive installs the .deb in a Debian root file system
// (debootstrap) run by a real systemd in a podman container
// (--systemd=always), enables and starts the agent, the recorder and the
// export timer as an admin would, runs the export against the
// recorder's history as the units ship it (only its upload replaced by
// standard output), then removes and purges the package and checks that
// nothing is left. Needs root, podman with runc, debootstrap and Debian's
// archive (scripts/test.sh installs the tools); about 3 minutes, most of
// it debootstrap. Podman's state stays in the test's own directories.
func TestSystemdLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a Debian root file system (about 3 minutes)")
	}
	if os.Geteuid() != 0 {
		t.Skip("debootstrap and podman need root")
	}
	for _, tool := range []string{"podman", "runc", "debootstrap"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (scripts/test.sh installs it)", tool)
		}
	}
	deb := filepath.Join(lintPackages(t), debName)
	rootfs := t.TempDir()
	mirror := os.Getenv("MEMWHO_DEBIAN_MIRROR")
	if mirror == "" {
		mirror = "http://deb.debian.org/debian"
	}
	start := time.Now()
	if b, err := exec.Command("debootstrap", "--variant=minbase", "--include=systemd,systemd-sysv,dbus,libcap2-bin,passwd",
		"bookworm", rootfs, mirror).CombinedOutput(); err != nil {
		t.Skipf("debootstrap cannot make a Debian root here: %v\n%s", err, lastLines(b, 5))
	}
	t.Logf("debootstrap: %s", time.Since(start).Round(time.Second))
	b, err := os.ReadFile(deb)
	if err != nil {
		t.Fatal(err)
	}
	// Not in /tmp: --systemd=always mounts a tmpfs there.
	if err := os.WriteFile(filepath.Join(rootfs, "root/memwho.deb"), b, 0o644); err != nil {
		t.Fatal(err)
	}

	state := t.TempDir()
	global := []string{"--root", filepath.Join(state, "storage"), "--runroot", filepath.Join(state, "run"),
		"--tmpdir", filepath.Join(state, "tmp"), "--storage-driver", "vfs", "--events-backend", "none"}
	podman := func(args ...string) (string, error) {
		b, err := exec.Command("podman", append(global, args...)...).CombinedOutput()
		return string(b), err
	}
	t.Cleanup(func() { podman("system", "reset", "--force") })
	image := "localhost/memwho-systemd-test:1"
	tar := exec.Command("sh", append([]string{"-c", `root=$1 image=$2; shift 2; tar -C "$root" -c . | podman "$@" import - "$image"`, "sh", rootfs, image}, global...)...)
	if b, err := tar.CombinedOutput(); err != nil {
		t.Fatalf("podman import: %v\n%s", err, b)
	}
	name := fmt.Sprintf("memwho-systemd-%d", os.Getpid())
	if out, err := podman("run", "-d", "--name", name, "--runtime", "runc", "--systemd=always", "--network", "none",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1000:1000", image, "/sbin/init"); err != nil {
		t.Fatalf("podman run --systemd=always: %v\n%s", err, out)
	}
	t.Cleanup(func() { podman("rm", "-f", "-t", "0", name) })
	sh := func(script string) string {
		t.Helper()
		out, err := podman("exec", name, "sh", "-c", script)
		if err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		return strings.TrimSpace(out)
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		out, _ := podman("exec", name, "systemctl", "is-system-running")
		if s := strings.TrimSpace(out); s == "running" || s == "degraded" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("systemd did not start: %s", out)
		}
		time.Sleep(time.Second)
	}

	t.Log(sh("dpkg -i /root/memwho.deb 2>&1 | tail -2"))
	sh("systemctl enable --now memwho.service memwho-record.service memwho-export.timer 2>&1")
	time.Sleep(3 * time.Second)
	if got := sh("systemctl is-active memwho.service memwho-record.service memwho-export.timer"); got != "active\nactive\nactive" {
		t.Fatalf("units: %q\n%s", got, sh("journalctl --no-pager -n 40"))
	}
	if got := sh("stat -c '%U:%G %a' /run/memwho/memwho.sock /var/lib/memwho /var/lib/memwho/history.db"); got != "memwho:memwho 660\nmemwho:memwho 750\nmemwho:memwho 600" {
		t.Errorf("socket, history directory and database: %q", got)
	}
	if got := sh("systemctl list-timers --no-pager --all memwho-export.timer"); !strings.Contains(got, "memwho-export.service") {
		t.Errorf("list-timers: %s", got)
	}

	// The export as shipped (user, sandbox, state directory), printing
	// instead of uploading: first while the recorder writes, then with
	// the recorder stopped, when only history.db is left and reading it
	// needs -shm created beside it.
	sh(`mkdir -p /etc/systemd/system/memwho-export.service.d && printf '[Service]\nExecStart=\nExecStart=/usr/bin/memwho-agent export --db /var/lib/memwho/history.db --since 2020-01-01T00:00:00Z\n' >/etc/systemd/system/memwho-export.service.d/stdout.conf && systemctl daemon-reload`)
	for _, phase := range []string{"recording", "recorder stopped"} {
		if phase == "recorder stopped" {
			sh("systemctl stop memwho-record.service")
			if got := sh("ls /var/lib/memwho"); got != "history.db" {
				t.Logf("after the recorder stopped: %s", got)
			}
		}
		out, err := podman("exec", name, "systemctl", "start", "memwho-export.service")
		// This run's output only: its invocation id.
		journal := sh("journalctl --no-pager -o cat _SYSTEMD_INVOCATION_ID=$(systemctl show -p InvocationID --value memwho-export.service)")
		if err != nil || !strings.Contains(journal, ",program,") {
			t.Errorf("%s: the export failed or exported nothing: %v %s\n%s", phase, err, out, lastLines([]byte(journal), 10))
		}
	}
	sh("rm -r /etc/systemd/system/memwho-export.service.d && systemctl daemon-reload")

	sh("dpkg --remove memwho >/dev/null")
	if got, _ := podman("exec", name, "systemctl", "is-active", "memwho.service", "memwho-record.service", "memwho-export.timer"); strings.Contains(got, "active\n") && !strings.Contains(got, "inactive") {
		t.Errorf("running after the removal: %s", got)
	}
	sh("dpkg --purge memwho >/dev/null")
	if left := sh("find /etc/systemd /var/lib/systemd /var/lib/memwho /run/memwho -name '*memwho*' 2>/dev/null; true"); left != "" {
		t.Errorf("left after the purge:\n%s", left)
	}
	// The system user and group stay (Debian's practice, and the rpm's).
	if kept := sh("getent passwd memwho >/dev/null && getent group memwho >/dev/null && echo kept; true"); kept != "kept" {
		t.Errorf("the user or group memwho is gone after the purge: %q", kept)
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
