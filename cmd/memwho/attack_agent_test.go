package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/memwho/memwho/internal/container"
	"github.com/memwho/memwho/internal/privilege/privtest"
	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot/snapserve"
)

// The attacks of the second adversarial review (docs/safe.md, "A second
// adversarial review (2026-11-23)"): the split into memwho and
// memwho-agent, the agent snapshot client, the snapshot socket and the
// container names. Each runs against the capability-installed binary as
// the unprivileged test user and asserts that the attack fails.

// hostileContainerID is the container id of the hostile rootless container.
const hostileContainerID = "2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e"

// hostileContainerName is what a hostile user names their container: a screen
// clear, an OSC title, BEL, a right-to-left override and a newline.
const hostileContainerName = "\x1b[2J\x1b]0;pwn\x07rev2\u202eevil\nfake"

// capState is one thread's CapPrm, CapEff and Uid line
// (privtest.TaskCaps).
type capState = [3]string

// blockedWrite runs c (which ends by executing memwho) with descriptor
// fd (1 or 2) on a pipe that is already full and, once a thread of the
// process sits in write(fd, ...), returns every thread's state; then it
// drains the pipe and returns what came and the exit code. Unlike
// capsAtWrite it asserts nothing and accepts a failing exit.
func blockedWrite(t *testing.T, fd int, c *exec.Cmd) (map[string]capState, string, int) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(p[0]), "pipe-r"), os.NewFile(uintptr(p[1]), "pipe-w")
	defer r.Close()
	syscall.SetNonblock(p[1], true)
	chunk := make([]byte, 4096)
	for {
		if _, err := syscall.Write(p[1], chunk); err != nil {
			break
		}
	}
	syscall.SetNonblock(p[1], false)
	var other bytes.Buffer
	if fd == 1 {
		c.Stdout, c.Stderr = w, &other
	} else {
		c.Stdout, c.Stderr = &other, w
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
	want := fmt.Sprintf("%d 0x%x ", syscall.SYS_WRITE, fd)
	deadline := time.Now().Add(2 * time.Minute)
	var tasks map[string]capState
	for {
		if inSyscall(pid, want) {
			var err error
			if tasks, err = privtest.TaskCaps(pid); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			c.Process.Kill()
			go drain()
			c.Wait()
			t.Fatalf("%v never blocked writing to fd %d; other output %q", c.Args, fd, other.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	go drain()
	err := c.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	b := bytes.TrimLeft(<-done, "\x00") // the fill
	return tasks, other.String() + string(b), code
}

// wantNoCaps fails unless every thread in tasks holds no capability and
// only the user's ids.
func (e *privEnv) wantNoCaps(t *testing.T, what string, tasks map[string]capState) {
	t.Helper()
	wantUID := strings.TrimSpace(strings.Repeat(strconv.Itoa(e.user.UID)+" ", 4))
	for tid, v := range tasks {
		if v[0] != "0000000000000000" || v[1] != "0000000000000000" || v[2] != wantUID {
			t.Errorf("%s: thread %s at the blocked write: CapPrm %s CapEff %s Uid %s, want none and %s", what, tid, v[0], v[1], v[2], wantUID)
		}
	}
	if len(tasks) == 0 {
		t.Errorf("%s: no thread checked", what)
	}
}

// plantAgent moves the installed memwho-agent aside (as root: only root
// can) until the test ends, and lets write put something in its place.
func (e *privEnv) plantAgent(t *testing.T, write func(path string) error) {
	t.Helper()
	agent := filepath.Join(filepath.Dir(e.bin), agentBinary)
	saved := agent + ".planted-saved"
	if err := os.Rename(agent, saved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Rename(saved, agent); err != nil {
			t.Errorf("restore %s: %v", agent, err)
		}
	})
	if write != nil {
		if err := write(agent); err != nil {
			t.Fatal(err)
		}
	}
}

// agentProbeScript is planted as memwho-agent: it prints what the exec
// gave it, as seen by itself ($$ is the process memwho became).
const agentProbeScript = `#!/bin/sh
echo "ARGC $#"
for a in "$@"; do printf 'ARG %s\n' "$a"; done
env | sed 's/^/ENV /'
grep -E '^(Uid|Gid|CapInh|CapPrm|CapEff|CapAmb|NoNewPrivs|Groups)' /proc/$$/status | sed 's/^/ST /'
echo FDS; ls -l /proc/$$/fd; echo ENDFDS
`

// fdSection returns "FD TARGET" for each line of `ls -l /proc/PID/fd`
// output between the lines begin and end of out.
func fdSection(out, begin, end string) []string {
	var fds []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case line == begin:
			in = true
		case line == end:
			in = false
		case in:
			l, target, ok := strings.Cut(line, " -> ")
			if f := strings.Fields(l); ok && len(f) > 0 {
				fds = append(fds, f[len(f)-1]+" "+target)
			}
		}
	}
	return fds
}

// checkAgentExec attacks the exec of memwho-agent (memwho serve,
// record, leaks, export) in the install e (capabilities or setuid).
func (e *privEnv) checkAgentExec(t *testing.T) {
	secret := e.secret(t)

	// What memwho-agent is given: environment, arguments, descriptors,
	// capabilities, ids, no_new_privs. A planted probe shows it from
	// the inside.
	t.Run("agent: what memwho-agent is given", func(t *testing.T) {
		e.plantAgent(t, func(p string) error { return os.WriteFile(p, []byte(agentProbeScript), 0o755) })
		env := []string{
			"LD_PRELOAD=/nonexistent/evil.so", "LD_LIBRARY_PATH=/nonexistent", "GODEBUG=inittrace=1",
			"GOTRACEBACK=crash", "SSL_CERT_FILE=" + secret, "PGPASSFILE=" + secret, "TZ=" + secret,
			"TERM=../../" + secret, "ZONEINFO=/root", "BASH_ENV=" + secret, "ENV=" + secret,
			"MEMWHO_DB=own.db", "LANG=C.UTF-8",
		}
		for _, cmd := range []string{"serve", "record", "leaks", "export"} {
			// The shell lists its own descriptors (BASE) and then
			// becomes memwho: the probe may hold those and nothing else.
			out, code := e.runSh(t, env, `exec 9</etc/hostname; echo BASE; ls -l /proc/$$/fd; echo ENDBASE; exec "$M" `+cmd+` --once -- '-x' "$(printf 'a\nb')"`)
			logRun(t, cmd, out, code)
			if code != 0 || !strings.Contains(out, "ARGC 5") {
				t.Fatalf("%s: the probe did not run with memwho's arguments: exit %d\n%s", cmd, code, out)
			}
			if !strings.Contains(out, "ARG "+cmd+"\nARG --once\nARG --\nARG -x\nARG a\nb\n") {
				t.Errorf("%s: arguments changed on the way:\n%s", cmd, out)
			}
			// The user's environment, as they gave it: memwho-agent
			// runs with their rights alone, as if they had started it
			// (the process that executes it holds nothing). Only
			// GOTRACEBACK is the Go runtime's after the exec that
			// gained privilege (its secure mode).
			for _, kv := range env {
				if strings.HasPrefix(kv, "GOTRACEBACK=") {
					kv = "GOTRACEBACK=none"
				}
				if !strings.Contains(out, "\nENV "+kv+"\n") {
					t.Errorf("%s: memwho-agent lacks %q of the user's environment", cmd, kv)
				}
			}
			for _, want := range []string{
				"ST CapInh:\t0000000000000000", "ST CapPrm:\t0000000000000000", "ST CapEff:\t0000000000000000",
				"ST CapAmb:\t0000000000000000", "ST NoNewPrivs:\t1",
				fmt.Sprintf("ST Uid:\t%d\t%d\t%d\t%d", e.user.UID, e.user.UID, e.user.UID, e.user.UID),
				fmt.Sprintf("ST Gid:\t%d\t%d\t%d\t%d", e.user.GID, e.user.GID, e.user.GID, e.user.GID),
			} {
				if !strings.Contains(out, want) {
					t.Errorf("%s: memwho-agent runs with more than the user's rights: want %q", cmd, strings.ReplaceAll(want, "\t", " "))
				}
			}
			base := map[string]bool{}
			for _, rest := range fdSection(out, "BASE", "ENDBASE") {
				base[rest] = true
			}
			for _, rest := range fdSection(out, "FDS", "ENDFDS") {
				// What the user's shell held is the user's; the probe's
				// shell opens the script itself. Nothing of memwho's may
				// survive the exec: no epoll, pidfd, socket or procfs
				// directory.
				if base[rest] || strings.HasSuffix(rest, agentBinary) {
					continue
				}
				t.Errorf("%s: memwho-agent inherited descriptor %s", cmd, rest)
			}
			if !base["9 /etc/hostname"] || !slices.Contains(fdSection(out, "FDS", "ENDFDS"), "9 /etc/hostname") {
				t.Errorf("%s: premise: the user's descriptor 9 did not reach the probe", cmd)
			}
		}
	})

	// memwho-agent missing: the error is written with nothing held (a
	// full stderr parks the process).
	t.Run("agent: memwho-agent missing, stderr full", func(t *testing.T) {
		e.plantAgent(t, nil)
		for _, cmd := range []string{"serve", "record", "leaks", "export"} {
			tasks, out, code := blockedWrite(t, 2, e.cmd(cmd, "--once"))
			logRun(t, cmd, out, code)
			e.wantNoCaps(t, cmd, tasks)
			if code == 0 || !strings.Contains(out, "not installed beside") {
				t.Errorf("%s without memwho-agent: exit %d: %s", cmd, code, out)
			}
		}
	})

	// memwho-agent that is not executable, a directory, a dangling
	// symlink, a symlink to a root-only file: one error, nothing held.
	t.Run("agent: broken memwho-agent", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			plant func(p string) error
		}{
			{"not executable", func(p string) error { return os.WriteFile(p, []byte("#!/bin/sh\necho RAN\n"), 0o644) }},
			{"a directory", func(p string) error { return os.Mkdir(p, 0o755) }},
			{"a dangling symlink", func(p string) error { return os.Symlink("/nonexistent/memwho-agent", p) }},
			{"a symlink to a root-only script", func(p string) error {
				s := filepath.Join(e.closedDir(t, "closed-agent"), "agent")
				if err := os.WriteFile(s, []byte("#!/bin/sh\necho RAN\n"), 0o755); err != nil {
					return err
				}
				return os.Symlink(s, p)
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e.plantAgent(t, func(p string) error {
					t.Cleanup(func() { os.RemoveAll(p) })
					return tc.plant(p)
				})
				tasks, out, code := blockedWrite(t, 2, e.cmd("serve", "--once"))
				logRun(t, tc.name, out, code)
				e.wantNoCaps(t, tc.name, tasks)
				if code == 0 || strings.Contains(out, "RAN") {
					t.Errorf("memwho-agent %s: exit %d: %s", tc.name, code, out)
				}
			})
		}
	})

	// memwho-agent replaced (by root's mistake) with a program that
	// would gain privilege: setuid root, or file capabilities. memwho
	// runs it with no_new_privs, so it gains nothing: `memwho export
	// SECRET` runs `cat export SECRET` as the user.
	t.Run("agent: setuid or capability memwho-agent gains nothing", func(t *testing.T) {
		cat, err := exec.LookPath("cat")
		if err != nil {
			t.Skip("no cat")
		}
		for _, tc := range []struct {
			name string
			caps string
		}{{"setuid root", ""}, {"cap_dac_read_search file capability", "cap_dac_read_search,cap_dac_override+ep"}} {
			t.Run(tc.name, func(t *testing.T) {
				e.plantAgent(t, func(p string) error {
					if err := privtest.CopyFile(cat, p, 0o755); err != nil {
						return err
					}
					if tc.caps == "" {
						return os.Chmod(p, os.ModeSetuid|0o755)
					}
					if out, err := exec.Command("setcap", tc.caps, p).CombinedOutput(); err != nil {
						return fmt.Errorf("setcap: %v: %s", err, out)
					}
					return nil
				})
				// Premise: run directly (without memwho) by the user,
				// the planted program does read the secret.
				{
					c := exec.Command("setpriv", "--reuid="+e.user.Name, "--regid="+strconv.Itoa(e.user.GID), "--init-groups", "--", "sh", "-c", `exec "$0" "$1"`, filepath.Join(filepath.Dir(e.bin), agentBinary), secret)
					if b, _ := c.CombinedOutput(); !strings.Contains(string(b), secretText) {
						t.Errorf("premise: the planted %s did not read the secret when run directly: %s", tc.name, b)
					}
				}
				for _, cmd := range []string{"export", "leaks", "serve", "record"} {
					out, code := e.runSh(t, nil, `exec "$M" `+cmd+` `+secret)
					logRun(t, cmd, out, code)
					if strings.Contains(out, secretText) {
						t.Errorf("memwho %s through a %s memwho-agent printed the root-only file", cmd, tc.name)
					}
					if !strings.Contains(out, "ermission denied") {
						t.Errorf("memwho %s: want cat's permission denied (the planted program ran as the user): %s", cmd, out)
					}
				}
			})
		}
	})

	// The exec'd memwho-agent is an ordinary process of the user's: the
	// user may inspect it, and it holds nothing worth having.
	t.Run("agent: the running memwho-agent holds nothing", func(t *testing.T) {
		own := e.ownDir(t, "hostile-agent")
		sock := filepath.Join(own, "run", "m.sock")
		c := e.cmd("serve", "--socket", sock)
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { c.Process.Signal(syscall.SIGTERM); c.Wait() }()
		deadline := time.Now().Add(time.Minute)
		for {
			if _, err := os.Stat(sock); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("serve never created its socket: %s", out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		tasks, err := privtest.TaskCaps(c.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		e.wantNoCaps(t, "running serve", tasks)
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", c.Process.Pid))
		if filepath.Base(exe) != agentBinary {
			t.Errorf("running serve is %s, want %s", exe, agentBinary)
		}
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.Process.Pid))
		for _, want := range []string{"NoNewPrivs:\t1", "CapAmb:\t0000000000000000", "CapInh:\t0000000000000000"} {
			if !strings.Contains(string(st), want) {
				t.Errorf("running serve: want %q in its status", want)
			}
		}
		// The user may read its memory (it is dumpable again): nothing
		// of memwho's privileged run survived the exec.
		got, code := e.runSh(t, nil, fmt.Sprintf(`head -c 16 /proc/%d/environ >/dev/null && echo READABLE`, c.Process.Pid))
		logRun(t, "read environ of the running agent", got, code)
		if !strings.Contains(got, "READABLE") {
			t.Logf("note: the user cannot read the running agent's environ: %s", got)
		}
	})
}

// hostileSnapshot is what a hostile agent (any socket the user points
// --agent-socket at) serves: escapes in every string, out-of-range
// looking numbers.
func hostileSnapshot() *sample.Snapshot {
	esc := "\x1b]0;pwn\x07\x1b[31m\u202erev2\x9b31m"
	cg := "/user.slice/user-999.slice/user@999.service/" + esc + "/libpod-" + hostileContainerID + ".scope"
	// Hostile, yet what a sampler could write (snapshot.Check): PIDs
	// ascending from 1, no negative count, private and shared adding
	// up to RAM, RAM and swap summing under 2^63 (seventeenth review).
	// The implausible one is implausibleSnapshot.
	huge := uint64(math.MaxInt64) - 1<<62 - 2
	return &sample.Snapshot{
		Time: time.Now(),
		Procs: []sample.Process{
			{PID: 1, PPID: math.MaxInt32, Name: esc + "\nforged row,1,2,3", Comm: esc, Exe: "../../etc/" + esc, Script: "\"},{\"key\":\"forged\"", UID: math.MaxUint32, UIDKnown: true, Cgroup: cg, SystemdCgroup: cg, RAM: huge, Private: huge - 1<<20, Shared: 1 << 20, Swap: math.MaxInt64 - 1<<62, Conns: math.MaxUint32},
			{PID: 2, Name: string([]byte{0xff, 0xfe, 0}), Comm: "", UIDKnown: true, Cgroup: "/" + strings.Repeat("a/", 2000), RAM: 1},
			{PID: math.MaxInt32, Name: "=HYPERLINK(\"http://evil\")", Comm: "x", UID: 0, UIDKnown: true, Cgroup: "/docker/" + hostileContainerID, RAM: 1 << 62, Private: 1 << 62, Swap: 1 << 62},
		},
		Kernel: math.MaxInt32, Malformed: 3,
		Meminfo:   sample.Meminfo{MemTotal: math.MaxUint64, MemAvailable: math.MaxUint64, SwapTotal: 1, SwapFree: math.MaxUint64},
		MeminfoOK: true, ConnsOK: true,
	}
}

// implausibleSnapshot is what the second review served before
// snapshot.Check: a PID of -1, PIDs out of order,
// negative counts, parts over their RAM. memwho now refuses it with a
// note and walks /proc.
func implausibleSnapshot() *sample.Snapshot {
	s := hostileSnapshot()
	s.Procs[0].PID, s.Procs[2].PID = -1, 0
	s.Procs[1].Private = 2
	s.Gone, s.Broken = -5, -1
	return s
}

// serveSnapshot serves what latest returns on a socket of mode 0666 in
// a new directory of e.dir, and returns the socket's path.
func (e *privEnv) serveSnapshot(t *testing.T, name string, latest snapserve.Latest) string {
	t.Helper()
	sock := filepath.Join(mustMkdir(t, filepath.Join(e.dir, name)), "snapshot.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(sock, 0o666)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		snapserve.Serve(ctx, ln, latest)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return sock
}

// serveRaw answers every connection on a 0666 socket in a new directory
// of e.dir with answer (after reading the request byte).
func (e *privEnv) serveRaw(t *testing.T, name string, answer []byte) string {
	t.Helper()
	sock := filepath.Join(mustMkdir(t, filepath.Join(e.dir, name)), "snapshot.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(sock, 0o666)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var b [1]byte
			c.Read(b[:])
			c.Write(answer)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return sock
}

// checkAgentAttacks is the attacks on the capability
// install (called from checkAttacks).
func (e *privEnv) checkAgentAttacks(t *testing.T) {
	e.checkAgentExec(t)
	secret := e.secret(t)

	// A snapshot socket the user cannot reach: mode 0666, but in a
	// root-only 0700 directory. With CAP_DAC_READ_SEARCH effective the
	// lookup would pass; memwho connects before anything is effective.
	t.Run("agent: --agent-socket behind a closed directory", func(t *testing.T) {
		closed := e.closedDir(t, "closed-agent-sock")
		sock, _ := startAgentIn(t, closed, agentSnapshot(time.Now()))
		os.Chmod(sock, 0o666)
		for _, args := range []string{
			"--agent-socket " + sock + " --by pid --csv",
			"--agent-socket " + sock + " --by pid --csv --conns",
			"watch --plain --count 1 --agent-socket " + sock + " --by pid",
			"watch --plain --count 1 --conns --agent-socket " + sock + " --by pid",
		} {
			out, code := e.runSh(t, nil, `exec "$M" `+args+` 2>&1`)
			if strings.Contains(out, "from-agent") || strings.Contains(out, "figures from memwho-agent") {
				t.Errorf("memwho %s read the agent behind a 0700 directory (exit %d):\n%s", args, code, out)
			}
		}
		// Positive control: the same socket in a public directory.
		open := mustMkdir(t, filepath.Join(e.dir, "open-agent-sock"))
		sock2, _ := startAgentIn(t, open, agentSnapshot(time.Now()))
		os.Chmod(sock2, 0o666)
		if out, _ := e.runSh(t, nil, `exec "$M" --agent-socket `+sock2+` --by pid --csv 2>&1`); !strings.Contains(out, "from-agent") {
			t.Errorf("positive control: the reachable agent was not used:\n%s", out)
		}
	})

	// A hostile server the user runs (or any socket they point memwho
	// at): every string escaped, every output parseable, no crash. A
	// snapshot dated in the future is not taken for a fresh one.
	t.Run("agent: implausible agent snapshot", func(t *testing.T) {
		snap := implausibleSnapshot()
		sock := e.serveSnapshot(t, "implausible-agent", func() (*sample.Snapshot, time.Time, bool) { return snap, snap.Time, true })
		for _, args := range []string{"--by pid --csv", "--system --json", "watch --plain --count 1"} {
			line := `exec "$M" --agent-socket ` + sock + ` ` + args + ` 2>&1`
			if rest, ok := strings.CutPrefix(args, "watch "); ok {
				line = `exec "$M" watch --agent-socket ` + sock + ` ` + rest + ` 2>&1`
			}
			out, code := e.runSh(t, nil, line)
			if code != 0 || !strings.Contains(out, "not using memwho-agent: malformed snapshot: ") || strings.Contains(out, "from memwho-agent,") {
				t.Errorf("memwho %s with an implausible snapshot: exit %d:\n%s", args, code, out)
			}
		}
	})

	t.Run("agent: hostile agent snapshot", func(t *testing.T) {
		snap := hostileSnapshot()
		sock := e.serveSnapshot(t, "hostile-agent", func() (*sample.Snapshot, time.Time, bool) { return snap, snap.Time, true })
		for _, args := range []string{
			"", "--json", "--csv", "--by pid", "--by pid --json", "--by pid --csv", "--by user", "--by user --json",
			"--by cgroup", "--by cgroup --csv", "--by container", "--by container --json", "--by unit", "--by slice",
			"--system", "--system --json", "--conns --by pid", "--swap --total", "-p 4294967295",
			"watch --plain --count 2 --interval 0.2", "watch --plain --count 2 --interval 0.2 --by container",
			"watch --plain --count 1 --by pid --conns",
		} {
			line := `exec "$M" --agent-socket ` + sock + ` ` + args + ` 2>&1`
			if rest, ok := strings.CutPrefix(args, "watch "); ok {
				line = `exec "$M" watch --agent-socket ` + sock + ` ` + rest + ` 2>&1`
			}
			out, code := e.runSh(t, nil, line)
			logRun(t, args, out, code)
			// 3: --total of estimates (cli.ExitEstimate).
			if code != 0 && code != 1 && !(code == 3 && strings.Contains(args, "--total")) {
				t.Errorf("memwho %s: exit %d (a crash?):\n%s", args, code, out)
			}
			if !strings.Contains(out, "figures from memwho-agent") && !strings.Contains(args, "-p ") {
				t.Errorf("memwho %s: the hostile snapshot was not used (premise):\n%s", args, out)
			}
			if i := strings.IndexAny(out, "\x1b\x07\u202e\u009b\x00"); i >= 0 {
				t.Errorf("memwho %s: raw control at %d: %q", args, i, out[max(0, i-40):min(len(out), i+40)])
			}
			if !utf8.ValidString(out) {
				t.Errorf("memwho %s: invalid UTF-8 in the output", args)
			}
			if strings.Contains(out, "\nforged row") {
				t.Errorf("memwho %s: a name broke a line:\n%s", args, out)
			}
			body := strings.Join(strings.Split(out, "\n")[1:], "\n") // past the "figures from" note
			switch {
			case strings.HasSuffix(args, "--json"):
				var v any
				if err := json.Unmarshal([]byte(body), &v); err != nil {
					t.Errorf("memwho %s: JSON does not parse: %v\n%s", args, err, body)
				}
				if strings.Contains(body, `"key":"forged"`) {
					t.Errorf("memwho %s: a name forged a JSON field", args)
				}
			case strings.HasSuffix(args, "--csv"):
				recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
				if err != nil {
					t.Errorf("memwho %s: CSV does not parse: %v\n%s", args, err, body)
				}
				for _, r := range recs {
					if len(r) != len(recs[0]) {
						t.Errorf("memwho %s: a record of %d fields, header %d", args, len(r), len(recs[0]))
					}
				}
			}
		}
	})

	t.Run("agent: agent snapshot dated in the future", func(t *testing.T) {
		snap := agentSnapshot(time.Now().Add(50 * 365 * 24 * time.Hour))
		sock := e.serveSnapshot(t, "future-agent", func() (*sample.Snapshot, time.Time, bool) { return snap, snap.Time, true })
		for _, args := range []string{"--by pid", "--by pid --max-age 0.5", "watch --plain --count 1 --by pid"} {
			line := `exec "$M" --agent-socket ` + sock + ` ` + args + ` 2>&1`
			if rest, ok := strings.CutPrefix(args, "watch "); ok {
				line = `exec "$M" watch --agent-socket ` + sock + ` ` + rest + ` 2>&1`
			}
			out, code := e.runSh(t, nil, line)
			logRun(t, args, out, code)
			if strings.Contains(out, "from-agent") || !strings.Contains(out, "in the future") {
				t.Errorf("memwho %s took a snapshot dated 50 years ahead for a fresh one:\n%s", args, out)
			}
		}
	})

	// Every failure path of the agent client: the report's note (after
	// the walk dropped everything), the "figures from" line, and the
	// watch that loses its agent, with stderr on a full pipe.
	t.Run("agent: agent notes with stderr full", func(t *testing.T) {
		garbage := e.serveRaw(t, "garbage-agent", []byte("memwho? no: garbage"))
		huge := e.serveRaw(t, "huge-agent", append([]byte("MWSN\x01\xff\xff\xff\x7f"), make([]byte, 1024)...))
		good, _ := startAgentIn(t, mustMkdir(t, filepath.Join(e.dir, "good-agent")), agentSnapshot(time.Now()))
		os.Chmod(good, 0o666)
		stale, _ := startAgentIn(t, mustMkdir(t, filepath.Join(e.dir, "stale-agent")), agentSnapshot(time.Now().Add(-time.Hour)))
		os.Chmod(stale, 0o666)
		for _, args := range [][]string{
			{"--agent-socket", garbage, "--by", "pid", "-p", "1"},
			{"--agent-socket", garbage, "--conns", "--by", "pid", "-p", "1"},
			{"--agent-socket", huge, "--by", "pid", "-p", "1"},
			{"--agent-socket", stale, "--conns", "--by", "pid", "-p", "1"},
			{"--agent-socket", good, "--by", "pid"},
			{"watch", "--plain", "--count", "1", "--agent-socket", good},
		} {
			tasks, out, code := blockedWrite(t, 2, e.cmd(args...))
			logRun(t, strings.Join(args, " "), out, code)
			e.wantNoCaps(t, strings.Join(args, " "), tasks)
		}
	})

	// The watch's note about an unusable agent is written before the
	// engine takes its capabilities: with stderr full, memwho waits
	// holding both permitted, none effective (as every frame of a watch
	// that walks /proc is written with CAP_SYS_PTRACE effective).
	t.Run("agent: watch's agent note with stderr full", func(t *testing.T) {
		garbage := e.serveRaw(t, "garbage-agent-w", []byte("garbage"))
		tasks, out, code := blockedWrite(t, 2, e.cmd("watch", "--plain", "--count", "1", "--agent-socket", garbage))
		logRun(t, "watch garbage agent", out, code)
		for tid, v := range tasks {
			if v[1] != "0000000000000000" {
				t.Errorf("thread %s writes the note with capabilities effective: CapEff %s", tid, v[1])
			}
			if p, _ := strconv.ParseUint(v[0], 16, 64); p&^(1<<19|1<<2) != 0 {
				t.Errorf("thread %s writes the note with CapPrm %s", tid, v[0])
			}
		}
	})

	// The agent stops answering in the middle of a watch: the watch ends
	// with one error, holding nothing (it gave everything up when it
	// chose the agent), and never walks /proc with privilege instead.
	t.Run("agent: agent gone in the middle of a watch", func(t *testing.T) {
		var calls atomic.Int32
		snap := agentSnapshot(time.Now())
		sock := e.serveSnapshot(t, "dying-agent", func() (*sample.Snapshot, time.Time, bool) {
			if calls.Add(1) > 1 {
				return nil, time.Time{}, false
			}
			return snap, time.Now(), true
		})
		tasks, out, code := blockedWrite(t, 2, e.cmd("watch", "--plain", "--count", "3", "--interval", "0.2", "--agent-socket", sock, "--by", "pid"))
		logRun(t, "watch, agent gone", out, code)
		e.wantNoCaps(t, "watch, agent gone", tasks)
		calls.Store(0)
		stdout, stderr, code := e.run(t, "watch", "--plain", "--count", "3", "--interval", "0.2", "--agent-socket", sock, "--by", "pid")
		if code != 1 || !strings.Contains(stderr, "--fresh walks /proc") || strings.Contains(stdout, "hostile-helper") {
			t.Errorf("watch whose agent went away: exit %d, want 1 and one error; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})

	// A slow client holds the agent's connections: memwho times out in
	// a second and walks /proc itself. Run against memwho-agent serve
	// started by the user (no capability; its own socket).
	t.Run("agent: slow clients against the snapshot socket", func(t *testing.T) {
		own := e.ownDir(t, "hostile-slow")
		sock := filepath.Join(own, "run", "m.sock")
		snapSock := filepath.Join(own, "run", "snapshot.sock")
		c := e.cmd("serve", "--socket", sock)
		var log bytes.Buffer
		c.Stdout, c.Stderr = &log, &log
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { c.Process.Signal(syscall.SIGTERM); c.Wait() }()
		deadline := time.Now().Add(time.Minute)
		for {
			if _, err := os.Stat(snapSock); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("serve never created %s: %s", snapSock, log.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		st, err := os.Lstat(snapSock)
		if err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o660 {
			t.Errorf("snapshot socket: %v %v, want a socket of mode 0660", st.Mode(), err)
		}
		// Another user (not the socket's owner, not in its group).
		c2 := exec.Command("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", "sh", "-c", `exec "$0" --agent-socket "$1" --by pid --csv 2>&1`, e.bin, snapSock)
		if b, _ := c2.CombinedOutput(); strings.Contains(string(b), "figures from memwho-agent") {
			t.Errorf("a user outside the group read the snapshot socket:\n%s", b)
		}
		// 64 idle clients (the agent serves 8 at a time).
		var idle []net.Conn
		defer func() {
			for _, ic := range idle {
				ic.Close()
			}
		}()
		for range 64 {
			ic, err := net.Dial("unix", snapSock)
			if err != nil {
				break
			}
			idle = append(idle, ic)
		}
		start := time.Now()
		out, code := e.runSh(t, nil, `exec "$M" --agent-socket `+snapSock+` --by pid --csv 2>&1 >/dev/null`)
		logRun(t, "report while slow clients hold the agent", out, code)
		if code != 0 || time.Since(start) > 30*time.Second {
			t.Errorf("report while the agent is held by slow clients: exit %d after %v:\n%s", code, time.Since(start), out)
		}
		for _, ic := range idle {
			ic.Close()
		}
		idle = nil
		// The agent recovers once they are gone.
		deadline = time.Now().Add(30 * time.Second)
		for {
			out, _ := e.runSh(t, nil, `exec "$M" --agent-socket `+snapSock+` --by pid --csv 2>&1 >/dev/null`)
			if strings.Contains(out, "figures from memwho-agent") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the agent never answered again after the slow clients left:\n%s\n%s", out, log.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	// hidepid=2 on /proc (a private mount namespace): the snapshot
	// socket shows the group what the agent sees. An agent started as the
	// shipped unit starts it (its own user, ambient capabilities) drops
	// them under the hiding mount, so root's process stays hidden; an
	// agent run as root sees, and shows, everything (docs/report.md
	// calls the group a choice to make on such a host).
	t.Run("agent: hidepid and the agent's snapshot socket", func(t *testing.T) {
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("unshare (util-linux) is missing")
		}
		agent := filepath.Join(filepath.Dir(e.bin), agentBinary)
		target := strconv.Itoa(e.target)
		gid := strconv.Itoa(e.user.GID)
		for _, tc := range []struct {
			name, as string
			shows    bool
		}{
			{"agent as its own user with ambient capabilities (the shipped unit)",
				"setpriv --reuid=nobody --regid=" + gid + " --clear-groups --inh-caps=+sys_ptrace,+dac_read_search --ambient-caps=+sys_ptrace,+dac_read_search --", false},
			{"agent as root", "", true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				dir := mustMkdir(t, filepath.Join(e.dir, "hp-agent-"+strconv.FormatBool(tc.shows)))
				if tc.as != "" {
					os.Chown(dir, 65534, -1)
				}
				sock := filepath.Join(dir, "m.sock")
				script := `mount -t proc -o hidepid=2 proc /proc || exit 99
` + tc.as + ` ` + agent + ` serve --socket ` + sock + ` --socket-group ` + gid + ` >` + dir + `/agent.log 2>&1 &
agent=$!
i=0; while [ ! -S ` + dir + `/snapshot.sock ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done
sleep 1
setpriv --reuid=` + e.user.Name + ` --regid=` + gid + ` --init-groups -- ` + e.bin + ` --agent-socket ` + dir + `/snapshot.sock --by pid --json 2>&1
kill $agent; wait`
				c := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script)
				c.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "NO_COLOR=1"}
				c.Dir = e.dir
				out, err := c.CombinedOutput()
				if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 99 {
					t.Skipf("cannot mount a hidepid procfs here: %s", out)
				}
				log, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
				logRun(t, tc.name, string(out)+"\nagent: "+string(log), 0)
				if !strings.Contains(string(out), "figures from memwho-agent") {
					t.Fatalf("premise: the report did not come from the agent:\n%s\nagent log:\n%s", out, log)
				}
				if got := strings.Contains(string(out), `"pids":[`+target+`]`); got != tc.shows {
					t.Errorf("root's process %s shown: %v, want %v:\n%s", target, got, tc.shows, out)
				}
			})
		}
	})

	e.checkContainerNameAttacks(t, secret)
}

// checkContainerNameAttacks attacks container naming with the test user's
// own rootless state (~/.local/share/containers) and a real process in a
// cgroup of the user's systemd instance named like a podman container.
func (e *privEnv) checkContainerNameAttacks(t *testing.T, secret string) {
	home := fmt.Sprintf("/home/%s", e.user.Name)
	if b, err := exec.Command("getent", "passwd", e.user.Name).Output(); err == nil {
		if f := strings.Split(strings.TrimSpace(string(b)), ":"); len(f) >= 6 && filepath.IsAbs(f[5]) {
			home = f[5]
		}
	}
	if _, err := os.Stat(home); err == nil {
		t.Logf("%s exists: the container attacks need a home of the test's own", home)
		return
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Logf("cannot make %s: %v", home, err)
		return
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	os.Chown(home, e.user.UID, e.user.GID)

	// Inside a container whose scope the cgroup namespace shows (a
	// privileged podman container, scripts/fresh-machine.sh), every
	// process here, the planted one too, is named by that outer
	// container: memwho takes the first container in a path.
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		if _, sd, err := proc.CgroupPaths(b); err == nil {
			if ref, ok := container.Parse(string(sd)); ok {
				t.Logf("the tests run inside container %s: container attacks skipped", ref.Short())
				return
			}
		}
	}
	// A root process in .../user@UID.service/hostile.slice/libpod-ID.scope
	// in every hierarchy that takes it.
	pid := startRootScript(t, mustMkdir(t, filepath.Join(e.dir, "hostile-ctr")), "ctr.sh", 0)
	rel := fmt.Sprintf("user.slice/user-%d.slice/user@%d.service/hostile.slice/libpod-%s.scope", e.user.UID, e.user.UID, hostileContainerID)
	var made []string
	t.Cleanup(func() {
		for _, d := range made {
			root := d[:len(d)-len(rel)]
			os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
			for p := d; len(p) >= len(root) && p != filepath.Clean(root); p = filepath.Dir(p) {
				if os.Remove(p) != nil {
					break
				}
			}
		}
	})
	for _, h := range []string{"memory", "pids", "systemd", "unified", ""} {
		root := filepath.Join("/sys/fs/cgroup", h)
		if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
			continue
		}
		d := filepath.Join(root, rel)
		if err := os.MkdirAll(d, 0o755); err != nil {
			continue
		}
		made = append(made, d)
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			t.Logf("move into %s: %v", d, err)
		}
	}
	if len(made) == 0 {
		t.Logf("cannot create cgroups here: container attacks skipped")
		return
	}
	short := hostileContainerID[:12]
	storage := filepath.Join(home, ".local/share/containers/storage")
	json1 := func(name string) []byte {
		b, _ := json.Marshal([]map[string]any{{"id": hostileContainerID, "names": []string{name}}})
		return b
	}
	// asUser writes the tree as the test user would (owned by them).
	chownAll := func() {
		filepath.Walk(home, func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				os.Lchown(p, e.user.UID, e.user.GID)
			}
			return nil
		})
	}
	reset := func() {
		os.RemoveAll(filepath.Join(home, ".local"))
		mustMkdir(t, filepath.Join(storage, "overlay-containers"))
	}
	// show runs args as the test user and returns the output.
	show := func(args string) string {
		out, code := e.runSh(t, nil, `exec timeout 60 "$M" `+args+` 2>&1`)
		logRun(t, args, out, code)
		if code == 124 {
			t.Errorf("memwho %s blocked", args)
		}
		if i := strings.IndexAny(out, "\x1b\x07\u202e"); i >= 0 {
			t.Errorf("memwho %s: raw control at %d: %q", args, i, out[max(0, i-40):min(len(out), i+40)])
		}
		return out
	}

	t.Run("agent: hostile rootless container name", func(t *testing.T) {
		reset()
		if err := os.WriteFile(filepath.Join(storage, "overlay-containers/containers.json"), json1(hostileContainerName), 0o644); err != nil {
			t.Fatal(err)
		}
		chownAll()
		out := show("--fresh --by container -p " + strconv.Itoa(pid))
		if !strings.Contains(out, `rev2\u202eevil\nfake (uid `+strconv.Itoa(e.user.UID)+`)`) {
			t.Errorf("report --by container: want the escaped name with its owner:\n%s", out)
		}
		out = show("--fresh --by container --json -p " + strconv.Itoa(pid))
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Errorf("JSON: %v\n%s", err, out)
		}
		// watch holds no capability (its reader does): it names the
		// container as the report does, escaped, with its owner.
		for _, args := range []string{"watch --fresh --plain --count 2 --interval 0.2 --by container", "watch --fresh --plain --count 1 --conns --by container"} {
			out = show(args)
			if !strings.Contains(out, `rev2\u202eevil\nfake (uid `+strconv.Itoa(e.user.UID)+`)`) {
				t.Errorf("%s: want the escaped name with its owner:\n%s", args, out)
			}
		}
	})

	// The same state reached through links the user plants: each to a
	// root-only file or directory naming the container SECRET. With
	// CAP_DAC_READ_SEARCH (watch --conns) they would be readable.
	closed := e.closedDir(t, "hostile-closed-storage")
	mustMkdir(t, filepath.Join(closed, "overlay-containers"))
	if err := os.WriteFile(filepath.Join(closed, "overlay-containers/containers.json"), json1(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	secretJSON := filepath.Join(closed, "secret.json")
	os.WriteFile(secretJSON, json1(secretText), 0o600)
	for _, tc := range []struct {
		name  string
		plant func() error
	}{
		{"containers.json a symlink to a root-only file", func() error {
			return os.Symlink(secretJSON, filepath.Join(storage, "overlay-containers/containers.json"))
		}},
		{"containers.json a hard link to a root-only file", func() error {
			// protected_hardlinks stops the user; root plants it to
			// show the open is made with the user's rights.
			return os.Link(secretJSON, filepath.Join(storage, "overlay-containers/containers.json"))
		}},
		{"overlay-containers a symlink into a 0700 directory", func() error {
			os.Remove(filepath.Join(storage, "overlay-containers"))
			return os.Symlink(filepath.Join(closed, "overlay-containers"), filepath.Join(storage, "overlay-containers"))
		}},
		{"storage itself a symlink into a 0700 directory", func() error {
			os.RemoveAll(storage)
			return os.Symlink(closed, storage)
		}},
		{"containers.json a FIFO", func() error {
			return syscall.Mkfifo(filepath.Join(storage, "overlay-containers/containers.json"), 0o666)
		}},
		{"containers.json of 3 MiB", func() error {
			b := json1(secretText)
			b = append(b[:len(b)-1], []byte(","+strings.Repeat(`{"id":"x","names":["y"]},`, 3<<20/26)+`{"id":"z","names":["z"]}]`)...)
			return os.WriteFile(filepath.Join(storage, "overlay-containers/containers.json"), b, 0o644)
		}},
		{"containers.json a symlink to /dev/zero", func() error {
			return os.Symlink("/dev/zero", filepath.Join(storage, "overlay-containers/containers.json"))
		}},
	} {
		t.Run("agent: "+tc.name, func(t *testing.T) {
			reset()
			chownAll() // before the plant: a hard link's owner is its target's
			if err := tc.plant(); err != nil {
				t.Fatal(err)
			}
			for _, args := range []string{
				"--fresh --by container -p " + strconv.Itoa(pid),
				"--fresh --conns --by container -p " + strconv.Itoa(pid),
				"watch --fresh --plain --count 1 --conns --by container",
			} {
				out := show(args)
				if strings.Contains(out, secretText) {
					t.Errorf("memwho %s named the container from a root-only file:\n%s", args, out)
				}
				if strings.Contains(tc.name, "3 MiB") && !strings.Contains(out, short) {
					t.Errorf("memwho %s: want the short id:\n%s", args, out)
				}
			}
		})
	}
}
