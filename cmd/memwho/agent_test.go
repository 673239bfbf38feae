package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
)

// errNoExec stands in for the exec of memwho-agent in this test binary:
// a test that reaches it unintended fails instead of being replaced.
var errNoExec = errors.New("test: exec of memwho-agent not expected")

func init() {
	execAgent = func(string, []string) error { return errNoExec }
}

// TestRunAgentArgs: the agent's commands are handed to memwho-agent
// beside the executable, with the command and its arguments unchanged.
func TestRunAgentArgs(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(filepath.Dir(self), agentBinary)
	if _, err := os.Stat(want); err != nil {
		// The test binary's directory has none: put one there.
		if err := os.WriteFile(want, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Skipf("cannot place a fake %s beside the test binary: %v", agentBinary, err)
		}
		t.Cleanup(func() { os.Remove(want) })
	}
	saved := execAgent
	t.Cleanup(func() { execAgent = saved })
	var gotPath string
	var gotArgv []string
	execAgent = func(path string, argv []string) error {
		gotPath, gotArgv = path, argv
		return nil
	}
	for _, args := range [][]string{
		{"serve", "--once", "--by", "user"},
		{"record", "--db", "x.db", "--count", "1"},
		{"leaks", "--help"},
		{"export", "--since", "1h"},
		// diff goes over only with --since, as parsed: a value that
		// merely looks like it stays memwho's (see TestDiffSinceUsage).
		{"diff", "--since", "1h", "--by", "user"},
		{"diff", "--json", "--since=2h", "--to", "1h"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
			t.Errorf("%v: exit %d: %s", args, code, stderr.String())
		}
		if gotPath != want || !reflect.DeepEqual(gotArgv, append([]string{agentBinary}, args...)) {
			t.Errorf("%v: exec %s %q; want %s %q", args, gotPath, gotArgv, want, append([]string{agentBinary}, args...))
		}
	}
}

// TestAgentEndToEnd builds both binaries side by side: memwho runs
// memwho-agent for its commands (help, a usage error with its exit
// code), and says in one line what is missing when memwho-agent is not
// there.
func TestAgentEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: builds two binaries")
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir, ".", "../memwho-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	memwho := filepath.Join(dir, "memwho")
	runBin := func(args ...string) (string, string, int) {
		c := exec.Command(memwho, args...)
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		err := c.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.String(), stderr.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), 0
	}
	if out, _, code := runBin("leaks", "--help"); code != 0 || !strings.HasPrefix(out, "Usage: memwho leaks") {
		t.Errorf("memwho leaks --help: exit %d\n%s", code, out)
	}
	if _, errOut, code := runBin("serve", "--bogus"); code != cli.ExitUsage || !strings.HasPrefix(errOut, "memwho: error: ") {
		t.Errorf("memwho serve --bogus: exit %d, stderr %q", code, errOut)
	}
	if out, _, code := runBin("help"); code != 0 || !strings.Contains(out, "serve") {
		t.Errorf("memwho help: exit %d\n%s", code, out)
	}
	// The real agent serves its snapshot beside its metrics socket;
	// memwho answers from it, and walks itself with --fresh.
	run := t.TempDir()
	serve := exec.Command(memwho, "serve", "--socket", filepath.Join(run, "m.sock"), "--conns=false", "--min-interval", "1s")
	var serveErr bytes.Buffer
	serve.Stderr = &serveErr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Signal(os.Interrupt)
		serve.Wait()
		if _, err := os.Stat(filepath.Join(run, "snapshot.sock")); err == nil {
			t.Errorf("the snapshot socket is left behind after the agent stopped")
		}
	}()
	sock := filepath.Join(run, "snapshot.sock")
	var out, errOut string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out, errOut, _ = runBin("--agent-socket", sock, "--by", "pid", "--csv")
		if strings.Contains(errOut, "figures from memwho-agent") {
			break
		}
	}
	if !strings.Contains(errOut, "figures from memwho-agent") || !strings.Contains(out, fmt.Sprintf("memwho-agent [%d]", serve.Process.Pid)) {
		t.Errorf("memwho did not answer from the running agent:\n%s%s\nagent: %s", out, errOut, serveErr.String())
	}
	if out, errOut, code := runBin("--agent-socket", sock, "--by", "unit"); code != 0 || !strings.Contains(errOut, "figures from memwho-agent") {
		t.Errorf("--by unit from the agent: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, _ := runBin("--agent-socket", sock, "--fresh", "-t"); strings.Contains(errOut, "memwho-agent") {
		t.Errorf("--fresh used the agent: %s", errOut)
	}

	if err := os.Remove(filepath.Join(dir, agentBinary)); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runBin("export")
	if code != cli.ExitFailure || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "memwho-agent, which is not installed beside") {
		t.Errorf("memwho export without memwho-agent: exit %d, stderr %q", code, errOut)
	}
}

// TestDiffSinceUsage: memwho decides whether diff is memwho-agent's by
// its parsed flags. --since with files, or the history's flags without
// --since, are usage errors here, and nothing is handed over (the exec
// would fail with errNoExec).
func TestDiffSinceUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"diff", "--since", "1h", "a.mwsnap", "b.mwsnap"}, "not with snapshot files"},
		{[]string{"diff", "--to", "1h", "a.mwsnap", "b.mwsnap"}, "go with --since"},
		{[]string{"diff", "--db", "h.db"}, "go with --since"},
		// A file named like the flag is a file.
		{[]string{"diff", "--", "--since", "1h"}, "--since: no such file"},
		{[]string{"diff", "x.mwsnap"}, "want two snapshot files"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Chdir(t.TempDir())
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), c.args, &stdout, &stderr)
			if code == cli.ExitOK || !strings.Contains(stderr.String(), c.msg) || strings.Contains(stderr.String(), errNoExec.Error()) {
				t.Errorf("exit %d, stderr %q; want a failure with %q", code, stderr.String(), c.msg)
			}
		})
	}
}
