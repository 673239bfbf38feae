package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/atomicfile"
	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/privilege/privtest"
	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/rogpeppe/go-internal/txtar"
	"kernel.org/pub/linux/libs/security/libcap/cap"
)

// hostileEnv turns the test binary into a process with a hostile name:
// it writes the variable's value to /proc/self/comm, prints "ready" and
// waits for its standard input to close. Any user can name a process
// anything; memwho must print such names without letting them drive the
// terminal or break JSON and CSV.
const hostileEnv = "MEMWHO_TEST_HOSTILE_COMM"

// hostileName holds an ANSI escape (red) and a newline, within the
// kernel's 15-byte limit.
const hostileName = "\x1b[31mevil\nname"

func init() {
	name, ok := os.LookupEnv(hostileEnv)
	if !ok {
		return
	}
	if err := os.WriteFile("/proc/self/comm", []byte(name), 0); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// startHostile starts a copy of the test binary named hostile-helper in
// dir (so that its program name is its task name, not the test binary's)
// under hostileName, as root, and returns its PID. It stops at cleanup.
func startHostile(t *testing.T, dir string) int {
	t.Helper()
	return startNamed(t, dir, hostileName)
}

// startNamed is startHostile for a process named name.
func startNamed(t *testing.T, dir, name string) int {
	t.Helper()
	bin := filepath.Join(dir, "hostile-helper")
	if _, err := os.Stat(bin); err != nil {
		bin = privtest.CopyExecutable(t, dir, "hostile-helper")
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), hostileEnv+"="+name)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("hostile helper: %q, %v", line, err)
	}
	return cmd.Process.Pid
}

// reportJSON is the part of memwho's JSON output the tests read.
type reportJSON struct {
	Groups []struct {
		Key      string `json:"key"`
		Pids     []int  `json:"pids"`
		RAM      int64  `json:"ram_bytes"`
		Private  int64  `json:"private_bytes"`
		Accuracy string `json:"accuracy"`
	} `json:"groups"`
	Denied int `json:"denied_processes"`
}

// checkHostileOutputs checks the three renderings of a report on the
// hostile process pid (run with --by pid -p pid).
func checkHostileOutputs(t *testing.T, pid int, table, js, cs string) {
	t.Helper()
	key := fmt.Sprintf("%s [%d]", hostileName, pid)
	if strings.ContainsAny(table, "\x1b") {
		t.Errorf("table holds a raw ESC byte:\n%q", table)
	}
	if want := fmt.Sprintf(`\x1b[31mevil\nname [%d]`, pid); !strings.Contains(table, want) {
		t.Errorf("table lacks the escaped name %s:\n%s", want, table)
	}
	if n := strings.Count(table, "\n"); n != 4 {
		t.Errorf("table has %d lines, want 4 (header, row, rule, total):\n%s", n, table)
	}
	var r reportJSON
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatalf("JSON output does not parse: %v\n%s", err, js)
	}
	if len(r.Groups) != 1 || r.Groups[0].Key != key {
		t.Errorf("JSON groups = %+v, want one with key %q", r.Groups, key)
	}
	if strings.ContainsAny(js, "\x1b") || strings.Count(js, "\n") != 1 {
		t.Errorf("JSON output holds a raw ESC or newline: %q", js)
	}
	recs, err := csv.NewReader(strings.NewReader(cs)).ReadAll()
	if err != nil {
		t.Fatalf("CSV output does not parse: %v\n%s", err, cs)
	}
	found := false
	for _, rec := range recs {
		if len(rec) > 1 && strings.Contains(rec[1], `\x1b[31mevil\nname`) {
			found = true
		}
	}
	if !found || strings.ContainsAny(cs, "\x1b") {
		t.Errorf("CSV lacks the escaped name or holds a raw ESC:\n%q", cs)
	}
}

// TestHostileNameLive renders a real process named with an escape
// sequence and a newline, in this process (any user can do this).
func TestHostileNameLive(t *testing.T) {
	dir := t.TempDir()
	pid := startHostile(t, dir)
	var out [3]string
	for i, format := range []string{"", "--json", "--csv"} {
		args := []string{"--by", "pid", "-p", strconv.Itoa(pid)}
		if format != "" {
			args = append(args, format)
		}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
			t.Fatalf("memwho %v: exit %d: %s", args, code, stderr.String())
		}
		out[i] = stdout.String()
	}
	checkHostileOutputs(t, pid, out[0], out[1], out[2])
}

// TestOpenInputOutput: without extra privilege the openers are plain
// opens (the privileged behaviour is tested in internal/privilege and in
// TestPrivilegedInstall).
func TestOpenInputOutput(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out")
	f, err := atomicfile.CreateAsUser(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("x"))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	in, err := privilege.OpenInput(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(in)
	in.Close()
	if string(b) != "x" {
		t.Errorf("read back %q, want %q", b, "x")
	}
	if _, err := privilege.OpenInput(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("privilege.OpenInput of a missing file: %v, want not exist", err)
	}
}

// TestScanPolicy: what each command keeps is decided on its parsed
// configuration. (The test binary's exec gained no privilege, so serve
// and record keep what an admin's ambient capabilities would give them;
// TestPrivilegedInstall checks that they keep nothing from the
// file-capability binary.)
func TestScanPolicy(t *testing.T) {
	// Both, with or without --conns: pagemap (mode 0400), by which a
	// large process is read without stalling it, needs
	// CAP_DAC_READ_SEARCH.
	both := []cap.Value{cap.SYS_PTRACE, cap.DAC_READ_SEARCH}
	tests := []struct {
		cmd   string
		conns bool
		want  []cap.Value
	}{
		{"report", false, both},
		{"report", true, both},
		{"watch", false, both},
		{"watch", true, both},
		{"serve", true, both},
		{"serve", false, both},
		{"record", false, both},
		{"record", true, both},
		{"export", false, nil},
		{"leaks", false, nil},
		{"help", false, nil},
		{"no-such-command", true, nil},
	}
	for _, tt := range tests {
		if got := privilege.ScanPolicy(tt.cmd, tt.conns); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("privilege.ScanPolicy(%q, %v) = %v, want %v", tt.cmd, tt.conns, got, tt.want)
		}
	}
}

// privEnv is a privileged install made for one test.
type privEnv struct {
	user   privtest.User
	dir    string // public scratch directory
	bin    string // the installed memwho
	target int    // PID of a root-owned process with a hostile name
}

// installPrivileged builds memwho, installs it with
// scripts/install-privileged.sh (extra options: setuid) into a fresh
// prefix, and starts a root-owned target process. It skips when the
// machine cannot do this (not root, capabilities outside the bounding
// set, no setcap or setpriv, a filesystem without extended attributes).
func installPrivileged(t *testing.T, extra ...string) *privEnv {
	t.Helper()
	privtest.RequireRoot(t)
	privtest.RequireCaps(t, int(cap.SYS_PTRACE), int(cap.DAC_READ_SEARCH), int(cap.SETUID), int(cap.SETGID))
	for _, tool := range []string{"setpriv", "setcap", "groupadd", "usermod"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is missing (Debian packages util-linux, libcap2-bin, passwd)", tool)
		}
	}
	// go test puts its own go command first in PATH.
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build memwho: %v", err)
	}
	e := &privEnv{user: privtest.EnsureUser(t), dir: privtest.PublicDir(t)}
	if ok, why := privtest.SetcapWorks(e.dir); !ok && len(extra) == 0 {
		t.Skipf("file capabilities unavailable: %s", why)
	}
	built := filepath.Join(e.dir, "memwho.build")
	if old := os.Getenv("MEMWHO_PRIVTEST_BINARY"); old != "" {
		// Another build (an older commit) to show that the attacks
		// succeeded against it: see docs/safe.md.
		if err := privtest.CopyFile(old, built, 0o755); err != nil {
			t.Fatal(err)
		}
	} else {
		build := exec.Command(gobin, "build", "-trimpath", "-o", built, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	// memwho-agent, found beside the binary by the install script: the
	// serve and record attacks go through memwho's exec of it.
	build := exec.Command(gobin, "build", "-trimpath", "-o", filepath.Join(e.dir, "memwho-agent"), "../memwho-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build memwho-agent: %v\n%s", err, out)
	}
	prefix := filepath.Join(e.dir, "prefix")
	const group = "memwho-testgrp"
	args := append([]string{"--prefix", prefix, "--group", group, "--add-user", e.user.Name}, extra...)
	install := exec.Command("../../scripts/install-privileged.sh", append(args, built)...)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("install-privileged.sh: %v\n%s", err, out)
	} else {
		t.Logf("%s", out)
	}
	t.Cleanup(func() {
		out, err := exec.Command("../../scripts/uninstall-privileged.sh", "--prefix", prefix, "--group", group, "--remove-group").CombinedOutput()
		if err != nil {
			t.Errorf("uninstall-privileged.sh: %v\n%s", err, out)
		}
	})
	e.bin = filepath.Join(prefix, "bin", "memwho")
	st, err := os.Stat(e.bin)
	if err != nil {
		t.Fatal(err)
	}
	wantMode := os.FileMode(0o750)
	if len(extra) > 0 {
		wantMode |= os.ModeSetuid
	}
	if st.Mode()&(os.ModePerm|os.ModeSetuid) != wantMode {
		t.Errorf("installed mode %v, want %v", st.Mode(), wantMode)
	}
	e.target = startHostile(t, e.dir)
	return e
}

// cmd returns memwho args run as the test user (with the groups from
// /etc/group, so the install group counts).
func (e *privEnv) cmd(args ...string) *exec.Cmd {
	full := append([]string{"--reuid=" + e.user.Name, "--regid=" + strconv.Itoa(e.user.GID), "--init-groups", "--", e.bin}, args...)
	c := exec.Command("setpriv", full...)
	c.Env = []string{"PATH=/usr/bin:/bin", "NO_COLOR=1", "HOME=/nonexistent"}
	c.Dir = e.dir
	return c
}

// run runs memwho as the test user and returns stdout, stderr and the
// exit code.
func (e *privEnv) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	c := e.cmd(args...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// rollup reads the Pss and Private figures (bytes) of pid as root.
func rollup(t *testing.T, pid int) (pss, private int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "Pss:":
			pss = n << 10
		case "Private_Clean:", "Private_Dirty:":
			private += n << 10
		}
	}
	return pss, private
}

// pssSlack is how far a process's Pss may move while nothing in it
// changes, because other processes map or unmap pages it shares.
const pssSlack = 64 << 10

// checkExact runs --by pid --json on the root-owned target as the test
// user and compares with smaps_rollup read by root around the run.
func (e *privEnv) checkExact(t *testing.T, extra ...string) {
	t.Helper()
	pss1, priv1 := rollup(t, e.target)
	stdout, stderr, code := e.run(t, append([]string{"--by", "pid", "-p", strconv.Itoa(e.target), "--json"}, extra...)...)
	pss2, priv2 := rollup(t, e.target)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r reportJSON
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("JSON: %v\n%s", err, stdout)
	}
	if len(r.Groups) != 1 {
		t.Fatalf("want one group, got %+v", r.Groups)
	}
	g := r.Groups[0]
	if g.Accuracy != "exact" || r.Denied != 0 {
		t.Fatalf("accuracy %q, %d denied: the capability did not reach smaps_rollup (stderr %q)", g.Accuracy, r.Denied, stderr)
	}
	// The target is idle, but its Pss still moves while memwho runs:
	// the shared pages it maps (libc, the loader) are divided among
	// every process mapping them at that instant, and the test's own
	// setpriv maps and unmaps them. Accept the range root saw, widened
	// by pssSlack. An RSS-based estimate would be off by far more: it
	// counts every shared page in full.
	if g.RAM+pssSlack < min(pss1, pss2) || g.RAM > max(pss1, pss2)+pssSlack {
		t.Errorf("ram_bytes %d, smaps_rollup Pss read by root %d and %d (±%d)", g.RAM, pss1, pss2, pssSlack)
	}
	// Private moves less, but the target is a Go program whose runtime
	// may touch or return a few pages of its own at any time (once, with
	// 3000 other processes running, by 24 KiB in the middle of the run).
	if g.Private+pssSlack < min(priv1, priv2) || g.Private > max(priv1, priv2)+pssSlack {
		t.Errorf("private_bytes %d, smaps_rollup Private_* read by root %d and %d (±%d)", g.Private, priv1, priv2, pssSlack)
	}
	if stderr != "" {
		t.Errorf("unexpected stderr: %q", stderr)
	}
}

// checkRefused runs args as the test user and expects exit code code,
// nothing on stdout and exactly one error line matching want.
func (e *privEnv) checkRefused(t *testing.T, code int, want string, args ...string) {
	t.Helper()
	stdout, stderr, got := e.run(t, args...)
	if got != code {
		t.Errorf("memwho %v: exit %d, want %d (stderr %q)", args, got, code, stderr)
	}
	if stdout != "" {
		t.Errorf("memwho %v: stdout %q, want nothing", args, stdout)
	}
	if n := strings.Count(stderr, "memwho: error:"); n != 1 || !strings.Contains(stderr, want) {
		t.Errorf("memwho %v: stderr %q, want one error line with %q", args, stderr, want)
	}
}

// checkDroppedAtWrite runs a report with stdout on a pipe that is already
// full, so that memwho's first write blocks; while it is blocked, every
// thread of the process must hold no capability and only the user's ids.
// No test hook in memwho is involved: this is the installed binary.
func (e *privEnv) checkDroppedAtWrite(t *testing.T) {
	t.Helper()
	out, fill := e.capsAtWrite(t, 1, "--by", "pid", "-p", strconv.Itoa(e.target))
	if len(out) < fill || !strings.Contains(string(out[fill:]), strconv.Itoa(e.target)) {
		t.Errorf("report after the fill lacks the target:\n%s", out[min(fill, len(out)):])
	}
}

// capsAtWrite runs memwho args as the test user with descriptor fd (1 or
// 2) on a pipe that is already full, and while its first write there
// blocks, checks that every thread holds no capability and only the
// user's ids. It returns what the pipe received and how much of it was
// the fill.
func (e *privEnv) capsAtWrite(t *testing.T, fd int, args ...string) ([]byte, int) {
	t.Helper()
	return e.capsAtWriteCmd(t, fd, e.cmd(args...), args...)
}

// capsAtWriteCmd is capsAtWrite for a command c that ends by executing
// memwho (args) in the process it starts.
func (e *privEnv) capsAtWriteCmd(t *testing.T, fd int, c *exec.Cmd, args ...string) ([]byte, int) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(p[0]), "pipe-r"), os.NewFile(uintptr(p[1]), "pipe-w")
	defer r.Close()
	// Fill the pipe through a non-blocking write end, then make it
	// blocking again before memwho inherits it.
	syscall.SetNonblock(p[1], true)
	fill := 0
	chunk := make([]byte, 4096)
	for {
		n, err := syscall.Write(p[1], chunk)
		if n > 0 {
			fill += n
		}
		if err != nil {
			break
		}
	}
	syscall.SetNonblock(p[1], false)

	var stderr bytes.Buffer
	if fd == 1 {
		c.Stdout, c.Stderr = w, &stderr
	} else {
		c.Stdout, c.Stderr = &stderr, w
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	pid := c.Process.Pid
	done := make(chan []byte, 1)
	drain := func() {
		b, _ := io.ReadAll(r)
		done <- b
	}
	defer func() {
		if c.ProcessState == nil {
			c.Process.Kill()
			c.Wait()
		}
	}()

	// Wait (without a timing assertion: a generous bound only stops a
	// hung test) until a thread sits in write(1, ...).
	want := fmt.Sprintf("%d 0x%x ", syscall.SYS_WRITE, fd)
	deadline := time.Now().Add(2 * time.Minute)
	for !inSyscall(pid, want) {
		if time.Now().After(deadline) {
			go drain()
			c.Wait()
			t.Fatalf("memwho %v never blocked writing to fd %d; other output %q", args, fd, stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	tasks, err := privtest.TaskCaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	wantUid := strings.Repeat(strconv.Itoa(e.user.UID)+" ", 4)
	wantUid = wantUid[:len(wantUid)-1]
	for tid, v := range tasks {
		if v[0] != "0000000000000000" || v[1] != "0000000000000000" {
			t.Errorf("thread %s at the first write: CapPrm %s CapEff %s, want 0", tid, v[0], v[1])
		}
		if v[2] != wantUid {
			t.Errorf("thread %s at the first write: Uid %s, want %s", tid, v[2], wantUid)
		}
	}
	t.Logf("memwho %v: %d threads checked at the first write", args, len(tasks))
	go drain()
	if err := c.Wait(); err != nil {
		t.Fatalf("memwho %v: %v; other output %q", args, err, stderr.String())
	}
	return <-done, fill
}

// inSyscall reports whether a thread of pid is in the system call whose
// /proc/PID/task/TID/syscall line starts with prefix.
func inSyscall(pid int, prefix string) bool {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "syscall"))
		if err == nil && strings.HasPrefix(string(b), prefix) {
			return true
		}
	}
	return false
}

// TestPrivilegedInstall is the acceptance test for the
// file-capability install: root installs memwho for a group, an
// unprivileged member runs it.
func TestPrivilegedInstall(t *testing.T) {
	e := installPrivileged(t)

	t.Run("exact PSS of a root process", func(t *testing.T) { e.checkExact(t) })

	t.Run("hostile name", func(t *testing.T) {
		var out [3]string
		for i, format := range []string{"--by", "--json", "--csv"} {
			args := []string{"--by", "pid", "-p", strconv.Itoa(e.target)}
			if format != "--by" {
				args = append(args, format)
			}
			stdout, stderr, code := e.run(t, args...)
			if code != 0 {
				t.Fatalf("memwho %v: exit %d: %s", args, code, stderr)
			}
			out[i] = stdout
		}
		checkHostileOutputs(t, e.target, out[0], out[1], out[2])
	})

	t.Run("capabilities gone at the first write", e.checkDroppedAtWrite)

	e.checkUserPaths(t)

	t.Run("fake tree with a symlink to a secret", func(t *testing.T) {
		// A tree the user can read, with every process's comm pointing
		// at a file only root may read.
		fake := mustMkdir(t, filepath.Join(e.dir, "fake"))
		if err := proctest.Unpack(mustArchive(t, "basic"), fake); err != nil {
			t.Fatal(err)
		}
		secret := filepath.Join(e.dir, "secret")
		if err := os.WriteFile(secret, []byte("SECRET-TOKEN\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		comms, _ := filepath.Glob(filepath.Join(fake, "[0-9]*", "comm"))
		if len(comms) == 0 {
			t.Fatal("fixture has no comm files")
		}
		for _, c := range comms {
			os.Remove(c)
			if err := os.Symlink(secret, c); err != nil {
				t.Fatal(err)
			}
		}
		// Premise: read with privilege, the secret becomes a name.
		var rootOut, rootErr bytes.Buffer
		run(context.Background(), []string{"--proc", fake, "--by", "pid"}, &rootOut, &rootErr)
		if !strings.Contains(rootOut.String(), "SECRET-TOKEN") {
			t.Logf("as root the secret does not show (naming changed?): %s", rootOut.String())
		}
		stdout, stderr, _ := e.run(t, "--proc", fake, "--by", "pid")
		if strings.Contains(stdout+stderr, "SECRET") {
			t.Errorf("the user read a root-only file through a fake tree:\n%s%s", stdout, stderr)
		}
	})

	t.Run("hidepid with the group's gid=", func(t *testing.T) {
		// The admin's choice: gid= lets the group see everything, and
		// then the figures are exact. (hidepid without it: checkAttacks.)
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("unshare (util-linux) is missing")
		}
		c := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
			fmt.Sprintf(`mount -t proc -o hidepid=2,gid=%d proc /proc && exec setpriv --reuid=%s --regid=%d --init-groups -- %s --by pid -p %d --json`,
				e.user.GID, e.user.Name, e.user.GID, e.bin, e.target))
		c.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "NO_COLOR=1"}
		out, err := c.Output()
		if err != nil {
			t.Skipf("cannot run in a mount namespace with a hidepid procfs: %v", err)
		}
		if !strings.Contains(string(out), `"accuracy":"exact"`) {
			t.Errorf("hidepid=2,gid=the user's group: figures not exact:\n%s", out)
		}
	})

	t.Run("--html and --svg", e.checkPages)

	t.Run("attacks", e.checkAttacks)

	e.checkReader(t)
	e.checkReaderAttacked(t)

	t.Run("sandbox", func(t *testing.T) {
		stdout, stderr, code := e.run(t, "--sandbox", "--by", "pid", "-p", strconv.Itoa(e.target), "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		// Linux 6.18 refuses smaps_rollup to a Landlock-confined
		// process holding only CAP_SYS_PTRACE; memwho must say so
		// rather than show estimates silently.
		if !strings.Contains(stdout, `"accuracy":"exact"`) && !strings.Contains(stderr, "--sandbox blocks") {
			t.Errorf("sandboxed run shows estimates without the sandbox warning:\n%s\n%s", stdout, stderr)
		}
		t.Logf("sandboxed: %s", stderr)
	})
}

// checkUserPaths: every path the user names is opened as the user.
func (e *privEnv) checkUserPaths(t *testing.T) {
	private := filepath.Join(e.dir, "private")
	os.Mkdir(private, 0o700)
	// A valid procfs tree, but behind a directory only root may open.
	if err := proctest.Unpack(mustArchive(t, "basic"), mustMkdir(t, filepath.Join(private, "proc"))); err != nil {
		t.Fatal(err)
	}
	rootFile := filepath.Join(e.dir, "root-file")
	os.WriteFile(rootFile, []byte("keep\n"), 0o644)
	etcX := "/etc/memwho-test-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { os.Remove(etcX) })

	t.Run("--proc root-only directory", func(t *testing.T) {
		e.checkRefused(t, cli.ExitUsage, "--proc: "+filepath.Join(private, "proc")+": permission denied", "--proc", filepath.Join(private, "proc"))
	})
	// A profile would be written by the privileged binary: refused
	// outright, whatever the path, before anything is created.
	for _, p := range []string{etcX, filepath.Join(private, "y"), rootFile, "/root/memwho-test-" + strconv.Itoa(os.Getpid())} {
		for _, flag := range []string{"--cpuprofile", "--memprofile"} {
			t.Run(flag+" "+p, func(t *testing.T) {
				e.checkRefused(t, cli.ExitUsage, "not available in the privileged install", flag, p)
				if p == rootFile {
					if b, _ := os.ReadFile(rootFile); string(b) != "keep\n" {
						t.Errorf("root-owned file was changed: %q", b)
					}
				} else if _, err := os.Lstat(p); err == nil {
					os.Remove(p)
					t.Errorf("%s was created", p)
				}
			})
		}
	}
}

// checkPages: --html and --svg are allowed in the privileged install,
// created with the user's rights (refused where the user may not
// create, owned by the user where they may), and hold the exact figures
// of a root process, its hostile name escaped.
func (e *privEnv) checkPages(t *testing.T) {
	private := mustMkdir(t, filepath.Join(e.dir, "pages-private"))
	os.Chmod(private, 0o700)
	etcX := "/etc/memwho-test-page-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { os.Remove(etcX) })
	for _, flag := range []string{"--html", "--svg"} {
		for _, p := range []string{etcX, filepath.Join(private, "x")} {
			t.Run(flag+" "+p, func(t *testing.T) {
				e.checkRefused(t, cli.ExitFailure, "permission denied", flag, p, "-p", strconv.Itoa(e.target))
				if _, err := os.Lstat(p); err == nil {
					os.Remove(p)
					t.Errorf("%s was created", p)
				}
			})
		}
	}
	mine := mustMkdir(t, filepath.Join(e.dir, "pages-mine"))
	if err := os.Chown(mine, e.user.UID, e.user.GID); err != nil {
		t.Fatal(err)
	}
	page, img := filepath.Join(mine, "p.html"), filepath.Join(mine, "p.svg")
	pss1, _ := rollup(t, e.target)
	_, stderr, code := e.run(t, "--by", "pid", "-p", strconv.Itoa(e.target), "--html", page, "--svg", img)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	pss2, _ := rollup(t, e.target)
	ramTotal := regexp.MustCompile(`data-metric="ram" data-bytes="([0-9]+)"`)
	for _, p := range []string{page, img} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != e.user.UID {
			t.Errorf("%s is owned by uid %d, want the user's %d", p, st.Uid, e.user.UID)
		}
		b, _ := os.ReadFile(p)
		// The target's Pss moves a little while memwho runs (see
		// checkExact); an estimate would count shared pages in full.
		m := ramTotal.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s has no RAM treemap", p)
		}
		ram, _ := strconv.ParseInt(string(m[1]), 10, 64)
		if ram+pssSlack < min(pss1, pss2) || ram > max(pss1, pss2)+pssSlack || strings.Contains(string(b), "data-estimate") {
			t.Errorf("%s: RAM %d bytes, smaps_rollup Pss read by root %d and %d (±%d)", p, ram, pss1, pss2, pssSlack)
		}
		for _, c := range b {
			if c < 0x20 && c != '\n' {
				t.Errorf("%s holds the control byte %#x", p, c)
				break
			}
		}
	}
}

// TestPrivilegedSetuid: an admin chose setuid root anyway. memwho must
// become the real user at once, keep only what the scan needs and then
// drop it, and open user paths as the user.
func TestPrivilegedSetuid(t *testing.T) {
	e := installPrivileged(t, "--setuid")
	t.Run("exact PSS of a root process", func(t *testing.T) { e.checkExact(t) })
	t.Run("capabilities and root gone at the first write", e.checkDroppedAtWrite)
	e.checkUserPaths(t)
	// From the security review (docs/safe.md, "An adversarial review").
	t.Run("review: running watch is not the user's to inspect", e.checkWatchInspect)
	// The second review (docs/safe.md, "A second adversarial review").
	e.checkReview2Exec(t)
	t.Run("review: --sandbox warning written with capabilities", func(t *testing.T) {
		e.capsAtWrite(t, 2, "--sandbox", "--conns", "--by", "pid")
	})
	e.checkReader(t)
	e.checkReaderAttacked(t)
}

func mustArchive(t *testing.T, name string) *txtar.Archive {
	t.Helper()
	a, err := txtar.ParseFile(filepath.Join("../../internal/proc/testdata", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustMkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
