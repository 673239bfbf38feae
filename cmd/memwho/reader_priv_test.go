package main

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/privilege/privtest"
)

// checkReader attacks the privileged install's reader and what the
// process the user talks to does around it (issue 27): the zone file the
// user's TZ and GOROOT name, a write that blocks at SIGTERM, the reader
// outliving memwho, a reader started by hand.
func (e *privEnv) checkReader(t *testing.T) {
	// Finding 1: with TZ naming a zone missing from /usr/share/zoneinfo,
	// the time package falls back to $GOROOT/lib/time/zoneinfo.zip,
	// through the runtime's own copy of the environment (which
	// os.Unsetenv did not touch), and watch --conns drew its first frame
	// with CAP_DAC_READ_SEARCH effective: a zip behind root's 0700
	// directory was loaded, its zone's offset in the header.
	t.Run("issue 27: TZ and GOROOT name a file behind root's 0700 directory", func(t *testing.T) {
		zone, err := os.ReadFile("/usr/share/zoneinfo/Asia/Kathmandu")
		if err != nil {
			t.Skipf("no zone to plant: %v", err)
		}
		goroot := e.closedDir(t, "goroot")
		mustMkdir(t, filepath.Join(goroot, "lib/time"))
		f, err := os.Create(filepath.Join(goroot, "lib/time/zoneinfo.zip"))
		if err != nil {
			t.Fatal(err)
		}
		zw := zip.NewWriter(f)
		// Stored, not deflated: the time package reads no other kind.
		w, err := zw.CreateHeader(&zip.FileHeader{Name: "Fake/Zone", Method: zip.Store})
		if err == nil {
			_, err = w.Write(zone)
		}
		if err == nil {
			err = zw.Close()
		}
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		env := []string{"TZ=Fake/Zone", "GOROOT=" + goroot}
		runs := []string{
			`"$M" watch --plain --conns --agent-socket '' --count 1 | head -1`,
			`"$M" watch --plain --agent-socket '' --count 1 | head -1`,
			`"$M" --conns --json --agent-socket '' | head -c 120`,
			`"$M" --json --agent-socket '' | head -c 120`,
		}
		// Premise: whoever may read the directory gets the zone (+05:45).
		c := exec.Command("sh", "-c", strings.ReplaceAll(runs[0], `"$M"`, e.bin))
		c.Env = append([]string{"PATH=/usr/bin:/bin", "NO_COLOR=1"}, env...)
		if out, _ := c.Output(); !strings.Contains(string(out), "+05:45") {
			t.Skipf("the planted zone does not load even for root (the time package changed?): %q", out)
		}
		for _, run := range runs {
			out, code := e.runSh(t, env, run)
			logRun(t, run, out, code)
			if strings.Contains(out, "+05:45") || strings.Contains(out, "+0545") {
				t.Errorf("%s: the zone behind root's 0700 directory was read:\n%s", run, out)
			}
		}
	})

	// The same variables naming a FIFO the user made: the zone's open
	// waits for a writer. It holds nothing while it waits, and SIGTERM
	// ends it (it parked with CapEff 0x80004 and ignored SIGTERM,
	// SIGINT and SIGHUP), its reader with it.
	t.Run("issue 27: GOROOT names a FIFO", func(t *testing.T) {
		own := e.ownDir(t, "fifo-goroot")
		lib := mustMkdir(t, filepath.Join(own, "lib/time"))
		if err := syscall.Mkfifo(filepath.Join(lib, "zoneinfo.zip"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{filepath.Join(own, "lib"), lib, filepath.Join(lib, "zoneinfo.zip")} {
			os.Chown(p, e.user.UID, e.user.GID)
		}
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			c := e.cmd("watch", "--plain", "--conns", "--agent-socket", "", "--count", "2")
			c.Env = append(c.Env, "TZ=Fake/Zone", "GOROOT="+own)
			out, err := os.CreateTemp(e.dir, "out")
			if err != nil {
				t.Fatal(err)
			}
			c.Stdout, c.Stderr = out, out
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { c.Wait(); close(done) }()
			pid := c.Process.Pid
			deadline := time.Now().Add(time.Minute)
			for !openingFIFO(pid) {
				if time.Now().After(deadline) {
					c.Process.Kill()
					<-done
					b, _ := os.ReadFile(out.Name())
					t.Fatalf("watch never opened the FIFO; output %q", b)
				}
				time.Sleep(5 * time.Millisecond)
			}
			checkNoCaps(t, pid, "watch waiting in the zone's open")
			readers := children(pid)
			syscall.Kill(pid, sig)
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				c.Process.Kill()
				<-done
				t.Fatalf("%v did not end watch waiting in the zone's open", sig)
			}
			for _, r := range readers {
				waitPidGone(t, r)
			}
			out.Close()
		}
	})

	// Finding 3: watch --plain into a pipe nobody reads stayed in its
	// write after SIGTERM, with CapEff 0x80004, until SIGKILL.
	t.Run("issue 27: watch --plain into a stalled pipe ends at SIGTERM and SIGINT", func(t *testing.T) {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			c := e.cmd("watch", "--plain", "--conns", "--agent-socket", "", "--interval", "0.05")
			d, ws := stopWhileBlockedAs(t, c, sig)
			t.Logf("%v: ended %v after %v", ws, d, sig)
		}
	})

	t.Run("issue 27: the reader ends with memwho", func(t *testing.T) {
		c := e.cmd("watch", "--plain", "--agent-socket", "", "--interval", "3600")
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		go io.Copy(io.Discard, out)
		pid := c.Process.Pid
		var readers []int
		for deadline := time.Now().Add(time.Minute); len(readers) == 0; readers = children(pid) {
			if time.Now().After(deadline) {
				t.Fatal("watch started no reader")
			}
			time.Sleep(5 * time.Millisecond)
		}
		syscall.Kill(pid, syscall.SIGKILL)
		c.Wait()
		for _, r := range readers {
			waitPidGone(t, r)
		}
	})

	// The adversarial pass of issue 27 (docs/safe.md, "The reader"):
	// the reader waiting for its options; a descriptor the user leaves
	// open; the reader stopped, or killed, by the user.
	t.Run("issue 27: a reader waiting for its options holds nothing effective", func(t *testing.T) {
		out, code := e.runSh(t, nil, `sleep 5 | env -i "$M" __reader --parent=$$ >/dev/null &
sleep 1
for p in $(pgrep -P $$); do grep -q __reader /proc/$p/cmdline 2>/dev/null && grep -E '^Cap(Prm|Eff):' /proc/$p/status | tr '\t\n' '  '; done; echo
kill %1 2>/dev/null; wait`)
		logRun(t, "reader waiting", out, code)
		f := strings.Fields(out)
		if len(f) != 4 || f[3] != "0000000000000000" {
			t.Errorf("a reader waiting for its options: %q, want nothing effective", out)
		}
	})
	t.Run("issue 27: a descriptor left open is not the reader's", func(t *testing.T) {
		own := e.ownDir(t, "own-fd")
		if err := os.WriteFile(filepath.Join(own, "kept"), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// Descriptor 3, not close-on-exec, through setpriv to memwho.
		c := e.cmd("watch", "--plain", "--interval", "3600", "--agent-socket", "")
		kept, err := os.Open(filepath.Join(own, "kept"))
		if err != nil {
			t.Fatal(err)
		}
		defer kept.Close()
		c.ExtraFiles = []*os.File{kept}
		c.Stdout = io.Discard
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { c.Process.Kill(); c.Wait() }()
		readers := []int{readerOf(t, c.Process.Pid)}
		// Wait for its first walk (the statm descriptors it keeps):
		// it has long closed what it inherited by then.
		walked := func() bool {
			ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", readers[0]))
			for _, ent := range ents {
				if link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", readers[0], ent.Name())); strings.HasSuffix(link, "/statm") {
					return true
				}
			}
			return false
		}
		for deadline := time.Now().Add(time.Minute); !walked(); {
			if time.Now().After(deadline) {
				t.Fatal("the reader never walked")
			}
			time.Sleep(10 * time.Millisecond)
		}
		ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", readers[0]))
		for _, ent := range ents {
			if link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", readers[0], ent.Name())); strings.HasSuffix(link, "/kept") {
				t.Errorf("the reader holds the user's descriptor %s -> %s", ent.Name(), link)
			}
		}
	})
	t.Run("issue 27: the reader stopped or killed by the user", func(t *testing.T) {
		own := e.ownDir(t, "own-stop")
		out, code := e.runSh(t, nil, `cd `+own+`
"$M" watch --plain --interval 0.1 --agent-socket '' >/dev/null 2>&1 & p=$!
i=0; r=; while [ -z "$r" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); r=$(cat /proc/$p/task/*/children 2>/dev/null | tr -d ' \n'); done
sleep 0.3; kill -STOP $r; sleep 0.3; kill -TERM $p; wait $p; echo "STOPPED exit $?"
sleep 0.2; [ -e /proc/$r ] && grep -q '^State:.*[TSR]' /proc/$r/status && echo "READER LEFT $r"
"$M" watch --plain --interval 0.1 --agent-socket '' >/dev/null 2>err & p=$!
i=0; r=; while [ -z "$r" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); r=$(cat /proc/$p/task/*/children 2>/dev/null | tr -d ' \n'); done
sleep 0.3; kill -KILL $r; wait $p; echo "KILLED exit $?"; cat err`)
		logRun(t, "reader stopped, killed", out, code)
		if !strings.Contains(out, "STOPPED exit 0") || strings.Contains(out, "READER LEFT") {
			t.Errorf("the reader stopped, then SIGTERM to watch: want both gone, exit 0:\n%s", out)
		}
		if !strings.Contains(out, "KILLED exit 1") || !strings.Contains(out, "memwho: error: scan: the reader ended without a word (signal: killed)") {
			t.Errorf("the reader killed: want one error line and exit 1:\n%s", out)
		}
	})

	// Anybody may start a reader by hand: it then gives them exactly the
	// snapshots memwho would show them, and refuses an environment.
	t.Run("issue 27: a reader started by hand", func(t *testing.T) {
		out, code := e.runSh(t, nil, `echo --once | env -i "$M" __reader --parent=$$ | head -c 1; echo; echo --once | env -i GOROOT=/x "$M" __reader --parent=$$ | tail -c +6; echo; echo --once | env -i "$M" __reader --parent=1 | tail -c +6`)
		logRun(t, "reader by hand", out, code)
		lines := strings.Split(out, "\n")
		if len(lines) < 3 || lines[0] != "R" || !strings.Contains(lines[1], "runs with none") || !strings.Contains(lines[2], "is gone") {
			t.Errorf("a reader started by hand: %q", out)
		}
	})
}

// children returns the children of process pid.
func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(w); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// openingFIFO reports whether a thread of pid waits in open(2) (openat).
func openingFIFO(pid int) bool {
	return inSyscall(pid, fmt.Sprintf("%d ", syscall.SYS_OPENAT))
}

// checkNoCaps fails unless every thread of pid holds no capability.
func checkNoCaps(t *testing.T, pid int, what string) {
	t.Helper()
	tasks, err := privtest.TaskCaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	for tid, v := range tasks {
		if v[0] != "0000000000000000" || v[1] != "0000000000000000" {
			t.Errorf("%s: thread %s holds CapPrm %s CapEff %s", what, tid, v[0], v[1])
		}
	}
}

// waitPidGone waits until pid is gone or a zombie.
func waitPidGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		s := string(b)
		if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 && f[0] == "Z" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("reader %d outlived memwho: %s", pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stopWhileBlockedAs is stopWhileBlocked on standard output for memwho
// run as the test user, and checks that the process blocked in its write
// holds no capability and that its reader ends with it.
func stopWhileBlockedAs(t *testing.T, c *exec.Cmd, sig syscall.Signal) (time.Duration, syscall.WaitStatus) {
	t.Helper()
	var readers []int
	hook := func(pid int) {
		checkNoCaps(t, pid, "watch blocked in its write")
		readers = children(pid)
		if len(readers) == 0 {
			t.Errorf("watch blocked in its write has no reader")
		}
	}
	d, ws := stopWhileBlockedHook(t, c, 1, sig, hook)
	for _, r := range readers {
		waitPidGone(t, r)
	}
	return d, ws
}
