package main

// Serve's check of the open-file limit against its listeners, with the
// agent run as a process of its own under prlimit (attacks tabled in
// docs/safe.md).

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/proc/proctest"
	"golang.org/x/sys/unix"
)

// builtAgent returns this test binary under the name memwho-agent (a
// symlink in a temporary directory), which runs as the agent; it skips
// without prlimit, which every test using it runs the agent under.
func builtAgent(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("skipping: prlimit not installed (util-linux)")
	}
	bin := filepath.Join(t.TempDir(), "memwho-agent")
	if err := os.Symlink(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// serveUnderLimit runs memwho-agent serve (this test binary, by that name)
// under prlimit --nofile=nofile with args, until it says it serves
// snapshots, and returns its stderr; the agent is stopped at the test's
// end. It skips without prlimit.
func serveUnderLimit(t *testing.T, nofile string, args ...string) *syncBuffer {
	t.Helper()
	bin := builtAgent(t)
	var stderr syncBuffer
	cmd := exec.Command("prlimit", append([]string{"--nofile=" + nofile, bin, "serve"}, args...)...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "serving snapshots"); {
		select {
		case <-exited:
			t.Fatalf("serve exited:\n%s", stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
	}
	return &stderr
}

// TestServeSoftLimitRaised: a soft limit under what the listeners
// need and a hard limit above it (prlimit --nofile=100:HARD, as a shell's
// ulimit -Sn would leave it) starts: the Go runtime raises the soft
// limit to the hard one before the check, and the check reads it then.
// HARD is this process's hard limit, at most 4096: a container can hold
// it at 1024, and only CAP_SYS_RESOURCE may raise it.
func TestServeSoftLimitRaised(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	hard := min(rl.Max, 4096)
	// --socket and --listen at 64 each, the snapshot socket, the walk.
	if need := uint64(2*(1+64+1) + 9 + 16); hard < need {
		t.Skipf("skipping: the hard open-file limit %d is under the %d the listeners need", hard, need)
	}
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	dir := t.TempDir()
	serveUnderLimit(t, "100:"+strconv.FormatUint(hard, 10), "--proc", root, "--conns=false", "--socket", filepath.Join(dir, "m.sock"), "--listen", "127.0.0.1:0", "--no-auth")
}

// TestListenersFullAtLimit: the open-file limit exactly what the
// check lets pass (the listeners' share, what serve holds before it
// listens, and 16), every slot of both
// metrics listeners and of the snapshot socket taken, walks every 100 ms:
// the walks still read every process, and a scrape is answered.
func TestListenersFullAtLimit(t *testing.T) {
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	dir := t.TempDir()
	sock, snap := filepath.Join(dir, "m.sock"), filepath.Join(dir, "snapshot.sock")
	const maxConns = 4
	files := 2*(1+maxConns+1) + 1 + 8 + openAlready(t, root)
	stderr := serveUnderLimit(t, strconv.Itoa(files+16), "--proc", root, "--conns=false", "--min-interval", "100ms",
		"--socket", sock, "--listen", "127.0.0.1:0", "--no-auth", "--max-connections", strconv.Itoa(maxConns))
	m := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/metrics`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no TCP address in:\n%s", stderr.String())
	}
	addr := m[1]
	dial := func(network, a string) {
		c, err := net.DialTimeout(network, a, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	for range maxConns {
		dial("tcp", addr)
		dial("unix", sock)
	}
	for range 8 {
		dial("unix", snap) // each held up to 2 s, asking nothing
	}
	time.Sleep(300 * time.Millisecond) // walks meanwhile
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v\n%s", err, stderr.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		"\nmemwho_group_processes{group=\"helper\"} 3\n",
		"\nmemwho_skipped_processes{reason=\"broken\"} 0\n",
		"\nmemwho_walk_errors_total 0\n",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", strings.TrimSpace(want))
		}
	}
	t.Log(regexp.MustCompile(`(?m)^process_(open|max)_fds .*$`).FindAllString(string(body), -1))
	if t.Failed() {
		t.Logf("metrics:\n%s\nstderr:\n%s", body, stderr.String())
	}
}

// openAlready returns how many descriptors serve holds before it
// listens, run as this test does (the standard three, the Go runtime's
// poller and cgroup files, and whatever this test inherited), read from
// its refusal at a limit of 20.
func openAlready(t *testing.T, root string) int {
	t.Helper()
	bin := builtAgent(t)
	out, _ := exec.Command("prlimit", "--nofile=20:20", bin, "serve", "--proc", root, "--conns=false", "--socket", filepath.Join(t.TempDir(), "m.sock")).CombinedOutput()
	m := regexp.MustCompile(`, (\d+) are open already and the walk needs 16 more`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no refusal naming the descriptors open at limit 20:\n%s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	if n < 3 {
		t.Fatalf("%d open already, want at least the standard three", n)
	}
	return n
}

// TestInheritedRefused: serve started with 40 descriptors left
// open by its parent (cmd.ExtraFiles) at a limit that fits the listeners,
// what it holds anyway and the walk's 16, but not the 40: refused before
// any socket exists, naming the 40 more open. Before, only the listeners
// counted, and the 40 came out of the walk's share. What it holds anyway
// is read from a first run's refusal (openAlready).
func TestInheritedRefused(t *testing.T) {
	bin := builtAgent(t)
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	dir := t.TempDir()
	sock := filepath.Join(dir, "m.sock")
	// serve runs for at most 1.5 s; still running then, it was accepted
	// (a refusal comes before any walk, in milliseconds).
	run := func(limit, extra int) (string, error) {
		l := strconv.Itoa(limit)
		cmd := exec.Command("prlimit", "--nofile="+l+":"+l, bin, "serve", "--proc", root, "--conns=false", "--socket", sock)
		for range extra {
			f, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd.ExtraFiles = append(cmd.ExtraFiles, f)
		}
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			return stderr.String(), err
		case <-time.After(1500 * time.Millisecond):
			cmd.Process.Kill()
			<-done
			return stderr.String(), nil
		}
	}
	openRE := regexp.MustCompile(`the listeners may hold 75 descriptors, (\d+) are open already and the walk needs 16 more`)
	open := func(out string) int {
		m := openRE.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no refusal naming the descriptors open:\n%s", out)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	// The socket, its 64 connections and one waiting, the snapshot
	// socket's 1+8: 75.
	base := openAlready(t, root)
	limit := 75 + base + 16
	out, err := run(limit, 40)
	if err == nil {
		t.Fatalf("40 inherited at limit %d: accepted\n%s", limit, out)
	}
	// The 40 land on descriptors 3 to 42, over any this test inherited
	// there, so up to base-3 of the base may be gone.
	if n := open(out); n < 40+3 || n > base+40 {
		t.Errorf("40 inherited: %d open already, want %d to %d", n, 43, base+40)
	}
	if _, err := os.Stat(sock); err == nil {
		t.Error("the socket exists after the refusal")
	}
	if out, err := run(limit, 0); err != nil {
		t.Fatalf("none inherited at limit %d: %v\n%s", limit, err, out)
	}
}
