package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReportSignals: a report that writes nothing but its output leaves
// SIGINT and SIGTERM their default action (it ends at once, killed by
// the signal, as ps is, and starts none of os/signal's threads: 0.3 ms
// of its start-up); one that writes files (--html) stops cleanly: one
// error line, a failure exit and no file left. The report is held in
// its agent query (a socket that accepts and never answers, for up to
// 1 s) while the signal arrives.
func TestReportSignals(t *testing.T) {
	bin := buildMemwho(t)
	dir := t.TempDir()
	sock, accepted := silentAgent(t, dir, 4)
	html := filepath.Join(dir, "out.html")
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		args  []string
		clean bool // stops with an error line instead of dying by the signal
	}{
		{"plain report, SIGINT", syscall.SIGINT, nil, false},
		{"plain report, SIGTERM", syscall.SIGTERM, nil, false},
		{"--html, SIGINT", syscall.SIGINT, []string{"--html", html}, true},
		{"--html, SIGTERM", syscall.SIGTERM, []string{"--html", html}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"--agent-socket", sock, "--by", "pid"}, tc.args...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitAsked(t, cmd, accepted)
			cmd.Process.Signal(tc.sig)
			err := cmd.Wait()
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !tc.clean {
				if !ws.Signaled() || ws.Signal() != tc.sig {
					t.Errorf("exit %v (%v), want killed by %v\nstderr: %s", ws, err, tc.sig, stderr.String())
				}
				return
			}
			if ws.Signaled() || ws.ExitStatus() != 1 {
				t.Errorf("exit %v (%v), want 1 with an error line", ws, err)
			}
			if got := stderr.String(); strings.Count(got, "memwho: error:") != 1 || !strings.Contains(got, "interrupted") {
				t.Errorf("stderr: %q, want one interrupted error line", got)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout after the interruption: %q", stdout.String())
			}
			if _, err := os.Stat(html); err == nil {
				t.Errorf("%s left behind", html)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("files left in %s: %v (want the socket alone)", dir, ents)
			}
		})
	}
}

// TestReportSecondSignal: a report writing a file whose stdout is a pipe
// nobody reads (a reader stopped) blocks in its write; the first SIGINT
// ends its context, which a blocked write does not see. Before, every
// later signal landed on the same handler and only SIGKILL ended it;
// now the second SIGINT takes the default action.
func TestReportSecondSignal(t *testing.T) {
	bin := buildMemwho(t)
	cmd, stderr := blockedReport(t, bin, filepath.Join(t.TempDir(), "p.html"))
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("the first SIGINT ended the report while its write was blocked: %v", err)
	default:
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGINT {
			t.Errorf("exit %v after the second SIGINT, want killed by SIGINT\nstderr: %s", ws, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second SIGINT did not end the report (still blocked after 10 s)")
	}
}

// silentAgent listens on dir/silent.sock, accepts every connection and
// never answers: a memwho asking it for the agent's snapshot waits there
// (up to its 1 s fetch timeout), so that a test can signal it at a known
// point. The connections come on the channel, n at most unread.
func silentAgent(t *testing.T, dir string, n int) (sock string, accepted <-chan net.Conn) {
	t.Helper()
	sock = filepath.Join(dir, "silent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c := make(chan net.Conn, n)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c <- conn // held open, never answered
		}
	}()
	return sock, c
}

// waitAsked waits until the memwho cmd runs has connected to the
// silent agent, and closes that connection when the test ends.
func waitAsked(t *testing.T, cmd *exec.Cmd, accepted <-chan net.Conn) {
	t.Helper()
	select {
	case c := <-accepted:
		t.Cleanup(func() { c.Close() })
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("memwho never asked the socket")
	}
}

// blockedReport starts bin as a report writing --html html and its JSON
// by process to a 4 KiB pipe nobody reads, beside 100 sleeping
// processes so that the JSON fills the pipe on a quiet host too, and
// returns once the pipe is full: the report is blocked in its write (or
// about to be). The report and the sleeps are killed when the test ends.
func blockedReport(t *testing.T, bin, html string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if _, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 4096); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		sl := exec.Command("sleep", "120")
		if err := sl.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			sl.Process.Kill()
			sl.Wait()
		})
	}
	cmd := exec.Command(bin, "--by", "pid", "--json", "--html", html)
	cmd.Stdout = w
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ) // FIONREAD
		if err != nil {
			t.Fatal(err)
		}
		if n >= 4096 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pipe holds %d bytes after 30 s: the report is not writing", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	return cmd, stderr
}
