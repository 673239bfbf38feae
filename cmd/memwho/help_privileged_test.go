package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
)

// TestHelpAndHintPrivileged: the privileged install (file capabilities)
// meets the audit's changes.
//
//   - memwho help serve|record|leaks|export runs memwho-agent beside the
//     installed binary with every capability given up, with argv
//     exactly COMMAND --help; a symlink to memwho in the user's
//     directory, or an argv[0] naming it, does not make it run the
//     user's memwho-agent; help with any other word runs nothing.
//   - --from FILE, read by the user through the capabilities: the hint
//     speaks of whoever took the file (report.ScannerFile), not of the
//     capability memwho has.
func TestHelpAndHintPrivileged(t *testing.T) {
	e := installPrivileged(t)
	// The installed agent replaced by a script that shows what it ran
	// with: its arguments and its capability sets.
	agent := filepath.Join(filepath.Dir(e.bin), agentBinary)
	script := "#!/bin/sh\necho \"ARGV $*\"\ngrep '^Cap' /proc/self/status\n"
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// The user's directory: a symlink to memwho and a memwho-agent of
	// its own beside it.
	trick := filepath.Join(e.dir, "trick")
	if err := os.Mkdir(trick, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e.bin, filepath.Join(trick, "memwho")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(trick, agentBinary), []byte("#!/bin/sh\necho FORGED-AGENT\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	checkCaps := func(t *testing.T, what, out string) {
		t.Helper()
		if strings.Contains(out, "FORGED-AGENT") {
			t.Errorf("%s: the user's memwho-agent ran:\n%s", what, out)
		}
		n := 0
		for _, l := range strings.Split(out, "\n") {
			name, val, ok := strings.Cut(l, ":")
			if !ok || !strings.HasPrefix(name, "Cap") || name == "CapBnd" {
				continue
			}
			n++
			if v, err := strconv.ParseUint(strings.TrimSpace(val), 16, 64); err != nil || v != 0 {
				t.Errorf("%s: memwho-agent ran with %s %s", what, name, strings.TrimSpace(val))
			}
		}
		if n < 4 {
			t.Errorf("%s: memwho-agent's capability sets not seen:\n%s", what, out)
		}
	}
	for _, cmd := range []string{"serve", "record", "leaks", "export"} {
		stdout, stderr, code := e.run(t, "help", cmd)
		if code != 0 || !strings.Contains(stdout, "ARGV "+cmd+" --help\n") {
			t.Errorf("help %s: exit %d\n%s%s", cmd, code, stdout, stderr)
		}
		checkCaps(t, "help "+cmd, stdout)
	}
	// Through the symlink, and with argv[0] naming the user's directory.
	link := e.cmd("help", "serve")
	link.Args[len(link.Args)-3] = filepath.Join(trick, "memwho")
	argv0 := e.cmd("help", "serve")
	// setpriv … -- bash -c 'exec -a ARGV0 BIN "$@"' help serve
	i := len(argv0.Args) - 3
	argv0.Args = append(argv0.Args[:i:i], "/bin/bash", "-c", `exec -a "$0" "$1" help serve`, filepath.Join(trick, "memwho"), e.bin)
	for _, c := range []*exec.Cmd{link, argv0} {
		out, err := c.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "ARGV serve --help") {
			t.Errorf("%q: %v\n%s", c.Args, err, out)
		}
		checkCaps(t, strings.Join(c.Args, " "), string(out))
	}
	for _, words := range [][]string{{"../../bin/sh"}, {"/bin/sh"}, {"serve", "--bogus"}, {"memwho-agent"}} {
		stdout, stderr, code := e.run(t, append([]string{"help"}, words...)...)
		if code != 2 || strings.Contains(stdout+stderr, "ARGV") {
			t.Errorf("help %q: exit %d\n%s%s", words, code, stdout, stderr)
		}
	}

	// --from FILE with a refused walk, read through the capabilities.
	file := filepath.Join(e.dir, "r16.snap")
	var b bytes.Buffer
	snap := &sample.Snapshot{
		Procs: []sample.Process{
			{PID: 4242, Comm: "victim", Accuracy: sample.Estimate, Cause: sample.CauseDenied, RAM: 1 << 20},
			{PID: 4243, Comm: "mine", RAM: 1 << 20},
		},
		Denied: 1,
	}
	if err := snapshot.WriteFile(&b, snap, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--from", file, "--by", "pid"},
		{"watch", "--plain", "--count", "1", "--from", file},
	} {
		_, stderr, code := e.run(t, args...)
		if code != 0 || !strings.Contains(stderr, "whoever took it could not walk these processes") ||
			strings.Contains(stderr, "even with CAP_SYS_PTRACE") || strings.Contains(stderr, "even root") {
			t.Errorf("%q as the user, privileged: exit %d, hint:\n%s", args, code, stderr)
		}
	}
}
