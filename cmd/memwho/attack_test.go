package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/proc/proctest"
)

// The attacks of docs/safe.md ("Tried attacks"), each run against the
// capability-installed binary as the unprivileged test user. Every one of
// them read or blocked something before the boundary was rebuilt.

// secretText is what a root-only file holds; no output may show it.
const secretText = "SECRET-TOKEN-4711"

// fakeTree unpacks the basic fixture into a new directory of e.dir and
// returns it with the PIDs it holds.
func (e *privEnv) fakeTree(t *testing.T, name string) (string, []string) {
	t.Helper()
	dir := mustMkdir(t, filepath.Join(e.dir, name))
	if err := proctest.Unpack(mustArchive(t, "basic"), dir); err != nil {
		t.Fatal(err)
	}
	pids, _ := filepath.Glob(filepath.Join(dir, "[0-9]*"))
	if len(pids) == 0 {
		t.Fatal("fixture has no processes")
	}
	return dir, pids
}

// secret writes a root-only file holding secretText and returns its path.
func (e *privEnv) secret(t *testing.T) string {
	t.Helper()
	p := filepath.Join(e.dir, "secret-"+strconv.Itoa(time.Now().Nanosecond()))
	if err := os.WriteFile(p, []byte(secretText+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// linkAll replaces file name of every process directory with a symlink
// to target.
func linkAll(t *testing.T, pids []string, name, target string) {
	t.Helper()
	for _, p := range pids {
		f := filepath.Join(p, name)
		os.Remove(f)
		if err := os.Symlink(target, f); err != nil {
			t.Fatal(err)
		}
	}
}

// runSh runs a shell command line as the test user, with memwho as $M
// and extra environment variables, and returns its combined output and
// exit code.
func (e *privEnv) runSh(t *testing.T, env []string, script string) (string, int) {
	t.Helper()
	c := e.cmd()
	// e.cmd runs setpriv ... -- memwho; run a shell instead, with memwho
	// in $M.
	c.Args = append(c.Args[:len(c.Args)-1], "/bin/sh", "-c", script)
	c.Path = c.Args[0]
	if p, err := exec.LookPath(c.Args[0]); err == nil {
		c.Path = p
	}
	c.Env = append(append(c.Env, "M="+e.bin), env...)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	done := make(chan error, 1)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- c.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		// Only a hang guard: a blocked memwho is the failure.
		c.Process.Kill()
		<-done
		t.Fatalf("%s: still running after 2 minutes (blocked?)\n%s", script, out.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

func (e *privEnv) checkAttacks(t *testing.T) {
	secret := e.secret(t)

	// Finding 1: a fake process directory the user opened on a spare
	// descriptor, read through /proc/self/fd: it lives on procfs and
	// lists numbers, so "7" looks like a process.
	t.Run("fake root through /proc/self/fd", func(t *testing.T) {
		_, pids := e.fakeTree(t, "fdroot")
		linkAll(t, pids, "comm", secret)
		for _, args := range []string{
			"--conns --proc /proc/self/fd --by pid",
			"--proc /proc/self/fd --by pid --json",
			"--proc /proc/self/fd/7 --by pid",
			"watch --plain --count 1 --proc /proc/self/fd --by pid",
			"watch --plain --count 1 --conns --proc /proc/self/fd/7",
			"serve --once --proc /proc/self/fd",
		} {
			out, _ := e.runSh(t, nil, "exec 7<"+pids[0]+" && exec \"$M\" "+args)
			if strings.Contains(out, secretText) {
				t.Errorf("memwho %s printed the root-only file:\n%s", args, out)
			}
		}
	})
	// Finding 1, second form: a link through a procfs magic link
	// (/proc/PID/cwd of a root process) into a directory only its
	// permissions protect.
	t.Run("magic link through /proc/PID/cwd", func(t *testing.T) {
		closed := mustMkdir(t, filepath.Join(e.dir, "closed"))
		os.Chmod(closed, 0o700)
		if err := os.WriteFile(filepath.Join(closed, "note"), []byte(secretText+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		sleeper := exec.Command("sleep", "600")
		sleeper.Dir = closed
		if err := sleeper.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
		fake, pids := e.fakeTree(t, "magic")
		linkAll(t, pids, "comm", fmt.Sprintf("/proc/%d/cwd/note", sleeper.Process.Pid))
		for _, args := range []string{
			"--proc /proc/self/fd --by pid",
			"--proc /proc/self/fd --by pid --conns",
			"watch --plain --count 1 --proc /proc/self/fd",
			"serve --once --proc /proc/self/fd",
			"--proc " + fake + " --by pid",
		} {
			out, _ := e.runSh(t, nil, "exec 7<"+pids[0]+" && exec \"$M\" "+args)
			if strings.Contains(out, secretText) {
				t.Errorf("memwho %s read through a magic link:\n%s", args, out)
			}
		}
	})
	// Finding 2: the environment and "--" as a flag's value got past a
	// check made on argv before flag parsing.
	t.Run("MEMWHO_PROC and -- as a value", func(t *testing.T) {
		fake, pids := e.fakeTree(t, "argv")
		linkAll(t, pids, "comm", secret)
		// The agent names a process from status, and from comm when
		// status cannot be parsed.
		linkAll(t, pids, "status", secret)
		own := mustMkdir(t, filepath.Join(e.dir, "own-argv"))
		os.Chown(own, e.user.UID, e.user.GID)
		for _, tc := range []struct {
			env    []string
			script string
		}{
			{[]string{"MEMWHO_PROC=" + fake}, `exec "$M" serve --once`},
			{[]string{"MEMWHO_PROC=" + fake}, `exec "$M" --by pid`},
			{nil, `exec "$M" serve --once --listen -- --proc ` + fake},
			{nil, `exec "$M" watch --plain --count 1 --filter -- --proc ` + fake},
			{nil, `exec "$M" watch --plain --count 1 --by pid --filter -- --proc ` + fake},
			{nil, `exec "$M" record --once --db ` + own + `/h.db --host -- --proc ` + fake},
			{nil, `exec "$M" --filter -- --proc ` + fake + ` --by pid`},
		} {
			out, _ := e.runSh(t, tc.env, tc.script)
			if strings.Contains(out, secretText) {
				t.Errorf("%v %s printed the root-only file:\n%s", tc.env, tc.script, out)
			}
		}
		if b, err := os.ReadFile(filepath.Join(own, "h.db")); err == nil && bytes.Contains(b, []byte(secretText)) {
			t.Errorf("record stored the root-only file in its database")
		}
	})
	// Finding 3: hidepid on the real /proc is honoured by every
	// scanning command, not by report alone. The mount is made in a
	// mount namespace of the test's own, so the host's /proc is untouched.
	t.Run("hidepid on /proc, every command", func(t *testing.T) {
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("unshare (util-linux) is missing")
		}
		own := mustMkdir(t, filepath.Join(e.dir, "own-hidepid"))
		os.Chown(own, e.user.UID, e.user.GID)
		target := strconv.Itoa(e.target)
		for _, args := range []string{
			"--by pid --json",
			"watch --plain --count 1 --by pid",
			"serve --once --top-processes 1000",
			"record --once -v --db " + own + "/h.db",
		} {
			c := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
				`mount -t proc -o hidepid=2 proc /proc && exec setpriv --reuid=`+e.user.Name+` --regid=`+strconv.Itoa(e.user.GID)+` --init-groups -- `+e.bin+" "+args)
			c.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "NO_COLOR=1"}
			c.Dir = e.dir
			out, err := c.CombinedOutput()
			if err != nil && bytes.Contains(out, []byte("mount:")) {
				t.Skipf("cannot mount a hidepid procfs here: %s", out)
			}
			s := string(out)
			if strings.Contains(s, `"pids":[`+target+`]`) || strings.Contains(s, "["+target+"]") || strings.Contains(s, `pid="`+target+`"`) {
				t.Errorf("hidepid=2: memwho %s showed root's process %s:\n%s", args, target, s)
			}
		}
		// record: nothing of the target in the database either.
		if b, err := os.ReadFile(filepath.Join(own, "h.db")); err == nil && bytes.Contains(b, []byte(hostileName[:4])) {
			t.Logf("note: the database mentions %q (another process of that name?)", hostileName[:4])
		}
	})
	// The agent and history commands keep no capability when started
	// from the file-capability binary: their figures would reach other
	// users, their files would be opened with privilege.
	t.Run("serve and record hold no capability", func(t *testing.T) {
		e.checkNoCapsAtWrite(t, 1, "serve", "--once", "--conns=false")
		own := mustMkdir(t, filepath.Join(e.dir, "own-rec"))
		os.Chown(own, e.user.UID, e.user.GID)
		e.checkNoCapsAtWrite(t, 2, "record", "--count", "2", "--interval", "10ms", "-v", "--db", filepath.Join(own, "h.db"))
	})
	// Finding 6: non-regular files in a tree never block, never grow
	// memory without bound.
	t.Run("FIFO in a tree", func(t *testing.T) {
		fake, pids := e.fakeTree(t, "fifo")
		for _, p := range pids {
			for _, f := range []string{"comm", "smaps_rollup", "status"} {
				os.Remove(filepath.Join(p, f))
				if err := syscall.Mkfifo(filepath.Join(p, f), 0o666); err != nil {
					t.Fatal(err)
				}
			}
		}
		out, _ := e.runSh(t, nil, `exec "$M" --proc `+fake+` --by pid`)
		t.Logf("%s", out)
	})
	t.Run("symlinks to /dev/zero", func(t *testing.T) {
		fake, pids := e.fakeTree(t, "zero")
		linkAll(t, pids, "smaps_rollup", "/dev/zero")
		linkAll(t, pids, "comm", "/dev/zero")
		c := e.cmd("--proc", fake, "--by", "pid")
		out, _ := c.CombinedOutput()
		if rss := c.ProcessState.SysUsage().(*syscall.Rusage).Maxrss; rss > 64<<10 {
			t.Errorf("peak RSS %d KiB reading /dev/zero links:\n%s", rss, out)
		}
	})
	t.Run("huge Pss", func(t *testing.T) {
		fake, pids := e.fakeTree(t, "huge")
		for i, p := range pids {
			v := "18014398509481983" // 2^54-1 kB: wraps uint64 in bytes times 1024
			if i%2 == 1 {
				v = "4398046511103" // just under the 4 PiB cap
			}
			body := fmt.Sprintf("00400000-7fff00000000 ---p 00000000 00:00 0 [rollup]\nRss: %s kB\nPss: %s kB\nPrivate_Dirty: %s kB\nSwapPss: 0 kB\n", v, v, v)
			if err := os.WriteFile(filepath.Join(p, "smaps_rollup"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		stdout, stderr, code := e.run(t, "--proc", fake, "--by", "pid", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var r struct {
			Groups []struct {
				RAM uint64 `json:"ram_bytes"`
			} `json:"groups"`
			Total struct {
				RAM uint64 `json:"ram_bytes"`
			} `json:"total"`
		}
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("JSON: %v\n%s", err, stdout)
		}
		for _, g := range r.Groups {
			if g.RAM > r.Total.RAM {
				t.Errorf("a row (%d) is larger than the total (%d): the sum wrapped", g.RAM, r.Total.RAM)
			}
		}
	})
	t.Run("directory in place of smaps_rollup", func(t *testing.T) {
		fake, pids := e.fakeTree(t, "dir")
		for _, p := range pids {
			os.Remove(filepath.Join(p, "smaps_rollup"))
			os.Remove(filepath.Join(p, "smaps"))
			mustMkdir(t, filepath.Join(p, "smaps_rollup"))
		}
		_, stderr, code := e.run(t, "--proc", fake, "--by", "pid")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if strings.Contains(stderr, "permission denied") {
			t.Errorf("a directory in place of smaps_rollup reported as permission denied: %s", stderr)
		}
	})
	// Finding 4 and 6, through the installed binary: history and export
	// run as the user, create 0600 files, refuse foreign databases and
	// neutralise what a hostile name could do to a terminal or a
	// spreadsheet.
	t.Run("history files and hostile names out", func(t *testing.T) {
		own := mustMkdir(t, filepath.Join(e.dir, "own-hist"))
		os.Chown(own, e.user.UID, e.user.GID)
		db := filepath.Join(own, "h.db")
		if _, stderr, code := e.run(t, "record", "--once", "--db", db); code != 0 {
			t.Fatalf("record: exit %d: %s", code, stderr)
		}
		for _, f := range []string{db, db + "-wal", db + "-shm"} {
			if st, err := os.Stat(f); err == nil && st.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %v, want 0600", f, st.Mode().Perm())
			}
		}
		stdout, stderr, code := e.run(t, "export", "--db", db)
		if code != 0 {
			t.Fatalf("export: exit %d: %s", code, stderr)
		}
		if strings.ContainsAny(stdout, "\x1b\u202e") || !strings.Contains(stdout, `\x1b[31mevil\nname`) {
			t.Errorf("export of the hostile name is not neutralised:\n%s", grepLines(stdout, "evil"))
		}
		out := filepath.Join(own, "out.csv")
		if _, stderr, code := e.run(t, "export", "--db", db, "-o", out); code != 0 {
			t.Fatalf("export -o: exit %d: %s", code, stderr)
		} else if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o600 || int(st.Sys().(*syscall.Stat_t).Uid) != e.user.UID {
			t.Errorf("export -o: %v %v, want a 0600 file of the user", st, err)
		}
		// (Other programs' SQLite files are refused: the store tests.)
		empty := filepath.Join(own, "empty.db")
		for _, cmd := range []string{"leaks", "export"} {
			_, stderr, code := e.run(t, cmd, "--db", empty)
			if code == 0 {
				t.Errorf("%s on a missing database: exit 0", cmd)
			}
			if _, err := os.Stat(empty); err == nil {
				t.Errorf("%s created %s: %s", cmd, empty, stderr)
			}
		}
		stdout, stderr, code = e.run(t, "leaks", "--db", db, "--json", "--min-growth", "0")
		if code != 0 {
			t.Errorf("leaks --json: exit %d: %s", code, stderr)
		}
		if strings.ContainsRune(stdout, '\u202e') || strings.Contains(stdout, "\x1b") {
			t.Errorf("leaks --json passes raw controls (exit %d, %s):\n%s", code, stderr, stdout)
		}
	})
	t.Run("--walk-budget NaN", func(t *testing.T) {
		e.checkRefused(t, cli.ExitUsage, "--walk-budget", "serve", "--once", "--walk-budget", "NaN")
	})
	// The split into two binaries: memwho executes memwho-agent from its
	// own directory. A user who makes memwho run from a directory they
	// own (a hard link, where protected_hardlinks is off; a symlink) and
	// plants a memwho-agent there must get a program that runs as
	// themselves with no capability, nothing more.
	t.Run("planted memwho-agent beside a link to memwho", func(t *testing.T) {
		own := e.ownDir(t, "planted")
		probe := filepath.Join(own, "caps")
		fake := "#!/bin/sh\ngrep -E '^(Uid|CapPrm|CapEff|CapAmb|NoNewPrivs)' /proc/self/status > " + probe + "\n"
		agentPath := filepath.Join(own, "memwho-agent")
		if err := os.WriteFile(agentPath, []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(agentPath, e.user.UID, e.user.GID)
		// As root, the hard link protected_hardlinks would refuse the
		// user: the worst case, a file with the capabilities in the
		// user's directory.
		hard := filepath.Join(own, "memwho")
		if err := os.Link(e.bin, hard); err != nil {
			t.Skipf("cannot hard-link the installed binary: %v", err)
		}
		for _, name := range []string{"serve", "record", "leaks", "export"} {
			os.Remove(probe)
			c := e.cmd(name, "--help")
			c.Path, c.Args = "/usr/bin/setpriv", append(c.Args[:len(c.Args)-3], hard, name, "--help")
			out, _ := c.CombinedOutput()
			b, err := os.ReadFile(probe)
			if err != nil {
				t.Fatalf("%s: the planted program did not run (%v): %s", name, err, out)
			}
			st := string(b)
			for _, want := range []string{"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", fmt.Sprintf("Uid:\t%d\t%d\t%d\t%d", e.user.UID, e.user.UID, e.user.UID, e.user.UID)} {
				if !strings.Contains(st, want) {
					t.Errorf("memwho %s ran the planted memwho-agent with more than the user's rights: want %q in\n%s", name, strings.ReplaceAll(want, "\t", " "), st)
				}
			}
		}
	})
	// The agent's snapshot socket: its mode and group decide who reads
	// the agent's exact figures. memwho connects before any capability
	// is effective, so --agent-socket cannot reach a socket the user
	// could not connect to themselves.
	t.Run("agent snapshot socket the user may not open", func(t *testing.T) {
		sock, _ := startAgentIn(t, mustMkdir(t, filepath.Join(e.dir, "agent")), agentSnapshot(time.Now()))
		for _, tc := range []struct {
			mode os.FileMode
			want bool
		}{{0o600, false}, {0o666, true}} {
			if err := os.Chmod(sock, tc.mode); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := e.run(t, "--agent-socket", sock, "--by", "pid", "--csv")
			if got := strings.Contains(out, "from-agent"); got != tc.want || code != 0 {
				t.Errorf("socket mode %v: agent's figures shown %v, want %v (exit %d)\n%s%s", tc.mode, got, tc.want, code, out, errOut)
			}
		}
	})
	// The security review's attacks (docs/safe.md, "An adversarial review").
	e.checkInstallAttacks(t)
	e.checkAgentAttacks(t)
	e.checkFileAttacks(t)
	e.checkWatchAttacks(t)
	e.checkTempNameAttacks(t)
	e.checkFileLimitAttacks(t)
}

// checkNoCapsAtWrite runs memwho args as the test user with descriptor
// fd (1 or 2) on a full pipe, and checks that while its first write there
// blocks, no thread holds a capability.
func (e *privEnv) checkNoCapsAtWrite(t *testing.T, fd int, args ...string) {
	t.Helper()
	e.capsAtWrite(t, fd, args...)
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
