package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli/clitest"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
)

// TestSnapshotFailureKeepsOld: a snapshot -o that fails after its
// file was created (a refused --proc, an interruption) leaves the old
// snapshot as it was and no temporary file. Its deferred Commit and
// Abort looked at the if block's own err ("f, err :=" shadowed the
// result), nil once the file was created: every such failure committed
// the empty file over the old snapshot, with the error printed.
func TestSnapshotFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s.snap")
	noAgent := filepath.Join(dir, "no-agent.sock")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"snapshot", "-o", out, "--agent-socket", noAgent}, &stdout, &stderr); code != 0 {
		t.Fatalf("snapshot: exit %d: %s", code, stderr.String())
	}
	old, err := os.ReadFile(out)
	if err != nil || len(old) == 0 {
		t.Fatalf("the first snapshot: %d bytes, %v", len(old), err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		args []string
		want string
	}{
		{"refused --proc", context.Background(), []string{"--proc", filepath.Join(dir, "nonexistent")}, "--proc"},
		{"interrupted", canceled, nil, "interrupted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr.Reset()
			args := append([]string{"snapshot", "-o", out, "--agent-socket", noAgent}, tc.args...)
			if code := run(tc.ctx, args, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want a failure with %q", code, stderr.String(), tc.want)
			}
			if now, err := os.ReadFile(out); err != nil || !bytes.Equal(now, old) {
				t.Errorf("the old snapshot changed: %d bytes (was %d), %v", len(now), len(old), err)
			}
			clitest.NoTemps(t, dir)
		})
	}
}

// TestSignalsWithTempFile: the signals a user or the system sends a memwho
// that has a temporary file open (report --html, snapshot -o), held in
// its agent query (a socket that accepts and never answers; memwho gives
// up on it after 1 s and walks /proc).
//
//   - SIGHUP (the terminal closed) killed it with its temporary file
//     left; it now stops cleanly, as at SIGINT and SIGTERM.
//   - SIGINT or SIGHUP it was started with ignored (sh's background
//     jobs, nohup) ended it: os/signal installed a handler. They are
//     ignored now: the run finishes and publishes its file.
//   - a closed pipe on standard output (memwho --html page.html | head)
//     killed it by SIGPIPE with the temporary file left; it is now the
//     run's error, and the file removed. On standard error, where memwho
//     prints notes only, the run goes on and publishes its file.
func TestSignalsWithTempFile(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("skipping: no bash")
	}
	bin := buildMemwho(t)
	sock, accepted := silentAgent(t, t.TempDir(), 16)
	for _, tc := range []struct {
		name   string
		ignore string         // signals bash ignores before it executes memwho
		sig    syscall.Signal // 0: none
		pipe   string         // "stdout" or "stderr": a pipe nobody reads, closed
		args   []string       // the file is added
		file   string
		// clean: exit 1, one error line with errText, no file;
		// otherwise exit 0 and the file published.
		clean   bool
		errText string
	}{
		{name: "report --html, SIGHUP", sig: syscall.SIGHUP, args: []string{"--html"}, file: "p.html", clean: true, errText: "interrupted"},
		{name: "report --svg, SIGHUP", sig: syscall.SIGHUP, args: []string{"--svg"}, file: "p.svg", clean: true, errText: "interrupted"},
		{name: "snapshot -o, SIGHUP", sig: syscall.SIGHUP, args: []string{"snapshot", "-o"}, file: "s.snap", clean: true, errText: "interrupted"},
		{name: "report --html, SIGINT ignored", ignore: "INT", sig: syscall.SIGINT, args: []string{"--html"}, file: "p.html"},
		{name: "snapshot -o, SIGINT ignored", ignore: "INT", sig: syscall.SIGINT, args: []string{"snapshot", "-o"}, file: "s.snap"},
		{name: "snapshot -o, SIGHUP ignored (nohup)", ignore: "HUP", sig: syscall.SIGHUP, args: []string{"snapshot", "-o"}, file: "s.snap"},
		{name: "report --html, SIGTERM with SIGINT ignored", ignore: "INT", sig: syscall.SIGTERM, args: []string{"--html"}, file: "p.html", clean: true, errText: "interrupted"},
		{name: "report --html, stdout closed", pipe: "stdout", args: []string{"--html"}, file: "p.html", clean: true, errText: "broken pipe"},
		{name: "report --svg --by pid, stdout closed", pipe: "stdout", args: []string{"--by", "pid", "--svg"}, file: "p.svg", clean: true, errText: "broken pipe"},
		{name: "snapshot -o, stderr closed", pipe: "stderr", args: []string{"snapshot", "-o"}, file: "s.snap"},
		{name: "report --html, stderr closed", pipe: "stderr", args: []string{"--html"}, file: "p.html"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, tc.file)
			args := append(append([]string{}, tc.args...), file, "--agent-socket", sock)
			trap := "trap '' " + tc.ignore + "; "
			if tc.ignore == "" {
				trap = ""
			}
			cmd := exec.Command(bash, append([]string{"-c", trap + `exec "$0" "$@"`, bin}, args...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if tc.pipe != "" {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				r.Close()
				defer w.Close()
				if tc.pipe == "stdout" {
					cmd.Stdout = w
				} else {
					cmd.Stderr = w
				}
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitAsked(t, cmd, accepted)
			if tc.sig != 0 {
				cmd.Process.Signal(tc.sig)
			}
			err := cmd.Wait()
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				t.Fatalf("killed by %v; stderr: %s", ws.Signal(), stderr.String())
			}
			if tc.clean {
				if ws.ExitStatus() != 1 {
					t.Errorf("exit %v (%v), want 1; stderr: %s", ws.ExitStatus(), err, stderr.String())
				}
				if tc.pipe != "stderr" {
					if got := stderr.String(); strings.Count(got, "memwho: error:") != 1 || !strings.Contains(got, tc.errText) {
						t.Errorf("stderr: %q, want one error line with %q", got, tc.errText)
					}
				}
				if _, err := os.Stat(file); err == nil {
					t.Errorf("%s published", tc.file)
				}
			} else {
				if ws.ExitStatus() != 0 {
					t.Errorf("exit %v (%v), want 0; stderr: %s", ws.ExitStatus(), err, stderr.String())
				}
				if fi, err := os.Stat(file); err != nil || fi.Size() == 0 {
					t.Errorf("%s not published: %v", tc.file, err)
				}
			}
			clitest.NoTemps(t, dir)
		})
	}
}

// TestSignalAtAnyMoment: SIGTERM, SIGINT or SIGHUP at any moment of
// a report --html's or a snapshot -o's run, from before the handlers are
// armed (the default action then ends it before any file is created) to
// after the file is published: never a temporary file left, and the
// file, when there, is whole (a snapshot reads back).
func TestSignalAtAnyMoment(t *testing.T) {
	bin := buildMemwho(t)
	dir := t.TempDir()
	noAgent := filepath.Join(dir, "no-agent.sock")
	sigs := []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}
	published, stopped := 0, 0
	for i := range 60 {
		name := "s.snap"
		args := []string{"snapshot", "-o", filepath.Join(dir, name), "--agent-socket", noAgent}
		if i%2 == 1 {
			name = "p.html"
			args = []string{"--html", filepath.Join(dir, name), "--agent-socket", noAgent}
		}
		os.Remove(filepath.Join(dir, name))
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i) * 250 * time.Microsecond)
		cmd.Process.Signal(sigs[i%3])
		cmd.Wait()
		clitest.NoTemps(t, dir)
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			stopped++
			continue
		}
		published++
		if name == "s.snap" {
			if _, err := snapshot.ReadFile(bytes.NewReader(b), new(sample.Snapshot)); err != nil {
				t.Errorf("run %d: %s published but unreadable: %v", i, name, err)
			}
		} else if !strings.Contains(string(b), "</html>") {
			t.Errorf("run %d: %s published but cut short (%d bytes)", i, name, len(b))
		}
	}
	t.Logf("%d runs stopped, %d published", stopped, published)
}
