package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// checkReaderAttacked is the independent adversarial pass on the reader
// of issue 27 (docs/safe.md, "The reader, attacked independently"): a
// member of the group, and a user who is not one, against the installed
// binary. The reader's own tests (internal/reader) hold the attacks that
// need no install.
func (e *privEnv) checkReaderAttacked(t *testing.T) {
	t.Run("reader attacked: only the reader makes a capability effective", e.checkOnlyReaderEffective)
	t.Run("reader attacked: memwho traced by the member gains nothing", e.checkTracedGainsNothing)
	t.Run("reader attacked: a user outside the group", e.checkNonMember)
	t.Run("reader attacked: memwho killed at any moment of its reader's start", e.checkKilledDuringStart)
	t.Run("reader attacked: the dynamic loader's variables", e.checkLoaderVariables)
	t.Run("reader attacked: other spellings of /proc are walked as the user", e.checkProcSpellings)
	t.Run("reader attacked: a reader by hand without standard descriptors", e.checkReaderNoStdio)
	t.Run("reader attacked: stopped while its reader is stopped", e.checkStopWhileReaderStopped)
	t.Run("reader attacked: the member changes its reader's limits", e.checkReaderLimits)
	t.Run("reader attacked: no_new_privs set by the member", e.checkNoNewPrivs)
}

// checkReaderLimits: the reader's ids are the member's, who may change
// its resource limits while it runs (prlimit(1)): fewer descriptors cost
// the member's own view processes, a CPU limit of 0 kills the reader,
// and memwho ends with one error line. Nothing else is reached.
func (e *privEnv) checkReaderLimits(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit is missing (Debian package util-linux)")
	}
	own := e.ownDir(t, "limits")
	out, code := e.runSh(t, nil, `cd `+own+`
"$M" watch --plain --interval 0.1 --agent-socket '' >/dev/null 2>err & p=$!
i=0; r=; while [ -z "$r" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); r=$(cat /proc/$p/task/*/children 2>/dev/null | tr -d ' \n'); done
sleep 0.3; prlimit --pid $r --nofile=8:8 && echo "nofile lowered"
sleep 0.5; prlimit --pid $r --cpu=0:0 && echo "cpu lowered"
wait $p; echo "exit $?"; cat err`)
	logRun(t, "the reader's limits changed", out, code)
	if !strings.Contains(out, "nofile lowered") || !strings.Contains(out, "exit 1") || !strings.Contains(out, "memwho: error: scan: the reader ended without a word") {
		t.Errorf("the reader's limits changed by the member: want its end as one error line, exit 1:\n%s", out)
	}
}

// checkNoNewPrivs: with no_new_privs set by the member (setpriv
// --no-new-privs, or any seccomp filter of theirs, which needs it) the
// exec gains nothing: memwho is a plain program, starts no reader and
// shows another user's process as an estimate.
func (e *privEnv) checkNoNewPrivs(t *testing.T) {
	out, code := e.runSh(t, nil, fmt.Sprintf(`setpriv --no-new-privs "$M" --by pid -p %d --json 2>&1`, e.target))
	logRun(t, "no_new_privs", out, code)
	if exactFor(out, e.target) || !strings.Contains(out, `"accuracy":"estimate"`) {
		t.Errorf("memwho under the member's no_new_privs:\n%s", out)
	}
}

// checkOnlyReaderEffective traces every command the member may run (as
// root, whose tracing takes nothing from the exec) and checks that no
// process but a reader ever makes CAP_SYS_PTRACE or CAP_DAC_READ_SEARCH
// effective. The setuid install's start-up raises CAP_SETUID for its
// switch to the real user (privilege.Setup): not one of these.
func (e *privEnv) checkOnlyReaderEffective(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is missing (Debian package strace)")
	}
	own := e.ownDir(t, "only-reader")
	snap := filepath.Join(own, "a.snap")
	runs := [][]string{
		{"--by", "pid", "-p", strconv.Itoa(e.target)},
		{"--conns", "--json", "--agent-socket", ""},
		{"watch", "--plain", "--count", "2", "--interval", "0.1", "--agent-socket", ""},
		{"watch", "--plain", "--conns", "--count", "1", "--agent-socket", ""},
		{"snapshot", "-o", snap, "--agent-socket", ""},
		{"diff", snap, snap},
		{"--sandbox", "--by", "pid"},
		{"version"}, {"help"}, {"completion", "bash"}, {"nosuch"},
		{"serve", "--once", "--listen", "127.0.0.1:0"},
		{"--proc", "/proc/", "--by", "pid"},
	}
	for _, args := range runs {
		c := e.cmd(args...)
		trace := filepath.Join(e.dir, "only-reader.trace")
		c.Args = append([]string{strace, "-f", "-qq", "-o", trace, "-e", "trace=execve,capset,clone,clone3,fork,vfork"}, c.Args...)
		c.Path = strace
		c.Dir = own
		out, _ := c.CombinedOutput()
		b, err := os.ReadFile(trace)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		readers, bad := effectiveOutsideReader(string(b))
		for _, l := range bad {
			t.Errorf("memwho %v: a process other than the reader made a capability effective:\n%s", args, l)
		}
		t.Logf("memwho %v: %d reader(s)", args, readers)
	}
}

var (
	straceLine   = regexp.MustCompile(`^(\d+) +(.*)$`)
	straceResult = regexp.MustCompile(`= (\d+)$`)
)

// effectiveOutsideReader reads strace -f output and returns the number of
// readers started and the capset lines of memwho's processes, other than
// a reader, that make CAP_SYS_PTRACE or CAP_DAC_READ_SEARCH effective.
// Threads are mapped to their process through the clone calls
// (CLONE_THREAD). The setuid install's start-up, still root, lowers the
// exec's full set (privilege.Setup, through CAP_SETUID): a set that
// holds CAP_SETUID is that, not counted; none of memwho's own ever
// holds it.
func effectiveOutsideReader(trace string) (readers int, bad []string) {
	tgid := map[string]string{}
	group := func(tid string) string {
		if g, ok := tgid[tid]; ok {
			return g
		}
		return tid
	}
	pending := map[string]string{} // tid: the call it waits in
	kind := map[string]string{}    // tgid: "memwho", "reader", "agent"
	for _, line := range strings.Split(trace, "\n") {
		m := straceLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		tid, call := m[1], m[2]
		if strings.HasPrefix(call, "<... ") {
			call = pending[tid] + call
			delete(pending, tid)
		} else if strings.HasSuffix(call, "<unfinished ...>") {
			pending[tid] = strings.TrimSuffix(call, "<unfinished ...>")
			continue
		}
		switch {
		case strings.HasPrefix(call, "clone"), strings.HasPrefix(call, "fork"), strings.HasPrefix(call, "vfork"):
			r := straceResult.FindStringSubmatch(call)
			if r == nil {
				continue
			}
			if strings.Contains(call, "CLONE_THREAD") {
				tgid[r[1]] = group(tid)
			} else if _, ok := kind[r[1]]; !ok {
				// Unless its exec was printed first: the child
				// runs before its parent's clone returns.
				tgid[r[1]] = r[1]
				kind[r[1]] = kind[group(tid)]
			}
		case strings.HasPrefix(call, "execve("):
			if !strings.HasSuffix(call, "= 0") {
				continue
			}
			switch {
			case strings.Contains(call, `"__reader"`):
				kind[group(tid)] = "reader"
				readers++
			case strings.Contains(call, "memwho-agent"):
				kind[group(tid)] = "agent"
			case strings.Contains(call, "/bin/memwho"):
				kind[group(tid)] = "memwho"
			}
		case strings.HasPrefix(call, "capset("):
			k := kind[group(tid)]
			if k == "" {
				continue // setpriv, before it executes memwho
			}
			eff := call[strings.Index(call, "effective="):]
			eff = eff[:strings.IndexAny(eff, ",}")]
			if k != "reader" && !strings.Contains(eff, "CAP_SETUID") && (strings.Contains(eff, "CAP_SYS_PTRACE") || strings.Contains(eff, "CAP_DAC_READ_SEARCH")) {
				bad = append(bad, k+": "+line)
			}
		}
	}
	return readers, bad
}

// checkTracedGainsNothing: the member runs memwho under their own strace
// (ptrace from its first instruction). The kernel gives an exec it
// traces no privilege (LSM_UNSAFE_PTRACE), so memwho is a plain
// program: it starts no reader and shows another user's process as an
// estimate.
func (e *privEnv) checkTracedGainsNothing(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace is missing (Debian package strace)")
	}
	own := e.ownDir(t, "traced")
	out, code := e.runSh(t, nil, fmt.Sprintf(`cd %s && strace -f -qq -o trace -e trace=execve "$M" --by pid -p %d --json 2>/dev/null; echo; grep -c __reader trace`, own, e.target))
	logRun(t, "memwho under the member's strace", out, code)
	if exactFor(out, e.target) {
		t.Errorf("memwho traced by the member read another user's process exactly:\n%s", out)
	}
	if !strings.HasSuffix(strings.TrimSpace(out), "\n0") {
		t.Errorf("memwho traced by the member started a reader:\n%s", out)
	}
}

// readerOf waits for the reader memwho pid started, after its exec
// (before it, the child is memwho's vfork, and memwho waits in its
// fork), and returns its pid.
func readerOf(t *testing.T, pid int) int {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, p := range children(pid) {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); bytes.Contains(b, []byte("__reader")) {
				return p
			}
		}
	}
	t.Fatalf("memwho %d started no reader", pid)
	return 0
}

// checkNonMember: a user outside the install's group can neither run
// memwho (nor its reader) by its path or through /proc/PID/exe of a
// member's memwho, nor signal, inspect or read the member's reader.
func (e *privEnv) checkNonMember(t *testing.T) {
	c := e.cmd("watch", "--plain", "--interval", "3600", "--agent-socket", "")
	c.Stdout, c.Stderr = nil, nil
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { c.Process.Kill(); c.Wait() }()
	r, m := readerOf(t, c.Process.Pid), c.Process.Pid
	script := fmt.Sprintf(`%[1]s __reader --parent=$$ </dev/null; echo "path $?"
/proc/%[2]d/exe __reader --parent=$$ </dev/null; echo "exe $?"
kill -STOP %[3]d; echo "signal $?"
ls /proc/%[3]d/fd >/dev/null; echo "fd $?"
cat /proc/%[3]d/environ >/dev/null; echo "environ $?"
grep -q CapEff /proc/%[3]d/status; echo "status $?"`, e.bin, m, r)
	// nobody, with no supplementary group.
	nc := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "/bin/sh", "-c", script)
	nc.Env = []string{"PATH=/usr/bin:/bin"}
	var out bytes.Buffer
	nc.Stdout, nc.Stderr = &out, &out
	nc.Run()
	t.Logf("as nobody:\n%s", out.String())
	for _, want := range []string{"path 126", "exe 126", "signal 1", "fd 2", "environ 1", "status 0"} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("a user outside the group: want %q:\n%s", want, out.String())
		}
	}
	if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r)); strings.Contains(string(st), ") T ") {
		t.Errorf("a user outside the group stopped the member's reader")
	}
}

// checkKilledDuringStart: memwho SIGKILLed at every moment of its
// reader's start (before the fork, during the exec, before the reader
// asks to die with its parent, while it waits for its options) leaves no
// reader behind: the reader dies with it, or finds its parent gone.
func (e *privEnv) checkKilledDuringStart(t *testing.T) {
	own := e.ownDir(t, "killed-start")
	out, code := e.runSh(t, nil, `cd `+own+`
i=0; pids=""
while [ $i -lt 80 ]; do
  "$M" watch --plain --interval 3600 --agent-socket '' >/dev/null 2>&1 &
  p=$!; pids="$pids $p"
  sleep $(printf 0.%03d $((i % 40)))
  kill -9 $p; wait $p 2>/dev/null
  i=$((i+1))
done
sleep 1
for f in /proc/[0-9]*/cmdline; do
  c=$(tr '\0' ' ' 2>/dev/null <$f) || continue
  for p in $pids; do
    case "$c" in *"__reader --parent=$p "*) echo "LEFT $f: $c" ;; esac
  done
done 2>/dev/null
echo done`)
	logRun(t, "memwho killed during its reader's start", out, code)
	if strings.Contains(out, "LEFT") || !strings.Contains(out, "done") {
		t.Errorf("a reader outlived the memwho that started it:\n%s", out)
	}
}

// checkLoaderVariables: memwho is a static binary, so the dynamic
// loader's variables reach nothing (no library is preloaded, no audit
// module loaded, no debug output), and the figures stay exact.
func (e *privEnv) checkLoaderVariables(t *testing.T) {
	own := e.ownDir(t, "loader")
	out, code := e.runSh(t, nil, fmt.Sprintf(`LD_PRELOAD=%[1]s/x.so LD_AUDIT=%[1]s/x.so LD_DEBUG=all LD_LIBRARY_PATH=%[1]s "$M" --by pid -p %[2]d --json`, own, e.target))
	logRun(t, "LD_*", out, code)
	if !exactFor(out, e.target) || strings.Contains(out, "x.so") || strings.Contains(out, "calling init") {
		t.Errorf("with the loader's variables set:\n%s", out)
	}
}

// checkProcSpellings: only the kernel's /proc, spelled exactly, is the
// reader's; every other spelling of it is a tree the user named, walked
// in memwho with the user's own rights (estimates for another user's
// process, no reader started).
func (e *privEnv) checkProcSpellings(t *testing.T) {
	for _, dir := range []string{"/proc/", "//proc", "/proc/.", "/proc/self/..", "/proc/1/root/proc"} {
		stdout, stderr, code := e.run(t, "--proc", dir, "--by", "pid", "-p", strconv.Itoa(e.target), "--json")
		t.Logf("--proc %s: exit %d: %s", dir, code, stderr)
		if exactFor(stdout, e.target) {
			t.Errorf("--proc %s read another user's process exactly:\n%s", dir, stdout)
		}
	}
}

// checkReaderNoStdio: a reader started by hand with its standard
// descriptors closed (the runtime opens /dev/null in their place after
// a privileged exec) reads no options and ends quietly; with its options
// but no standard output it writes into /dev/null.
func (e *privEnv) checkReaderNoStdio(t *testing.T) {
	out, code := e.runSh(t, nil, `env -i "$M" __reader --parent=$$ <&- >&- 2>&-; echo "closed $?"
echo --once | env -i "$M" __reader --parent=$$ >&- 2>&-; echo "no stdout $?"`)
	logRun(t, "reader without standard descriptors", out, code)
	if !strings.Contains(out, "closed 0\n") || !strings.Contains(out, "no stdout 0\n") {
		t.Errorf("a reader without standard descriptors:\n%s", out)
	}
}

// checkStopWhileReaderStopped: the member stops the reader (SIGSTOP)
// while memwho waits for it, then stops memwho, alone or with its
// process group (the reader in it). memwho ends within its second, as
// any command does, with the word every command uses for it
// ("interrupted"), not an error of the reader's: it said "stopped while
// waiting for the reader", or that the reader ended (killed by the
// group's signal).
func (e *privEnv) checkStopWhileReaderStopped(t *testing.T) {
	own := e.ownDir(t, "stopped")
	for _, tc := range []struct {
		args  []string
		group bool
		want  string // in standard error; "" wants none
	}{
		{[]string{"snapshot", "-o", filepath.Join(own, "s"), "--agent-socket", ""}, false, "interrupted"},
		{[]string{"snapshot", "-o", filepath.Join(own, "s"), "--agent-socket", ""}, true, "interrupted"},
		{[]string{"--html", filepath.Join(own, "p.html"), "--agent-socket", ""}, false, "interrupted"},
		{[]string{"watch", "--plain", "--agent-socket", ""}, false, ""},
		{[]string{"watch", "--plain", "--agent-socket", ""}, true, ""},
	} {
		c := e.cmd(tc.args...)
		c.Dir = own
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		t.Cleanup(func() { c.Process.Kill(); <-done })
		r := readerOf(t, c.Process.Pid)
		syscall.Kill(r, syscall.SIGSTOP)
		time.Sleep(300 * time.Millisecond)
		start := time.Now()
		if tc.group {
			syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		} else {
			c.Process.Signal(syscall.SIGTERM)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			c.Process.Kill()
			<-done
			t.Errorf("%v: did not end at SIGTERM with its reader stopped", tc.args)
		}
		syscall.Kill(r, syscall.SIGKILL)
		took := time.Since(start)
		msg := stderr.String()
		t.Logf("%v (group %v): %v after %v: %q", tc.args, tc.group, c.ProcessState, took, msg)
		if took > 2*time.Second {
			t.Errorf("%v: ended %v after SIGTERM", tc.args, took)
		}
		if strings.Contains(msg, "reader") || tc.want == "" && msg != "" || tc.want != "" && !strings.Contains(msg, tc.want) {
			t.Errorf("%v (group %v): standard error %q, want %q", tc.args, tc.group, msg, tc.want)
		}
	}
}

// TestEffectiveOutsideReader: the trace reading of
// checkOnlyReaderEffective finds a capability made effective by memwho
// or one of its threads, and not by setpriv before it executes memwho,
// by a reader or its threads, or by the setuid start-up's full set.
func TestEffectiveOutsideReader(t *testing.T) {
	const (
		full  = `{effective=1<<CAP_DAC_READ_SEARCH|1<<CAP_SETUID|1<<CAP_SYS_PTRACE, permitted=1<<CAP_DAC_READ_SEARCH|1<<CAP_SETUID|1<<CAP_SYS_PTRACE, inheritable=0}) = 0`
		two   = `{effective=1<<CAP_DAC_READ_SEARCH|1<<CAP_SYS_PTRACE, permitted=1<<CAP_DAC_READ_SEARCH|1<<CAP_SYS_PTRACE, inheritable=0}) = 0`
		none  = `{effective=0, permitted=1<<CAP_DAC_READ_SEARCH|1<<CAP_SYS_PTRACE, inheritable=0}) = 0`
		cap3  = `capset({version=_LINUX_CAPABILITY_VERSION_3, pid=0}, `
		start = "10 capset({version=_LINUX_CAPABILITY_VERSION_3, pid=10}, " + two + "\n" +
			`10 execve("/x/bin/memwho", ["/x/bin/memwho"], 0x1 /* 3 vars */) = 0` + "\n" +
			"10 " + cap3 + full + "\n" +
			"10 clone(child_stack=0x1, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_SYSVSEM|CLONE_THREAD <unfinished ...>\n" +
			"10 <... clone resumed>) = 11\n" +
			"11 " + cap3 + none + "\n" +
			"11 clone(child_stack=NULL, flags=CLONE_VM|CLONE_VFORK|SIGCHLD) = 20\n" +
			`20 execve("/proc/self/exe", ["memwho", "__reader", "--parent=10"], 0x2 /* 0 vars */ <unfinished ...>` + "\n" +
			"20 <... execve resumed>) = 0\n" +
			"20 clone(child_stack=0x1, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_SYSVSEM|CLONE_THREAD) = 21\n" +
			"21 " + cap3 + two + "\n" +
			"20 " + cap3 + two + "\n"
	)
	for _, tc := range []struct {
		trace   string
		readers int
		bad     int
	}{
		{start, 1, 0},
		{start + "11 " + cap3 + two + "\n", 1, 1},  // a thread of memwho
		{start + "10 " + cap3 + two + "\n", 1, 1},  // memwho itself
		{start + "21 " + cap3 + none + "\n", 1, 0}, // the reader lowering
		// The reader's exec printed before memwho's clone returns.
		{strings.Replace(start, "SIGCHLD) = 20\n", "SIGCHLD <unfinished ...>\n", 1) +
			"11 <... clone resumed>, parent_tid=[15]) = 20\n" + "21 " + cap3 + two + "\n", 1, 0},
	} {
		readers, bad := effectiveOutsideReader(tc.trace)
		if readers != tc.readers || len(bad) != tc.bad {
			t.Errorf("readers %d, bad %q; want %d and %d lines", readers, bad, tc.readers, tc.bad)
		}
	}
}
