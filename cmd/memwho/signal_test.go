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
	sock := filepath.Join(dir, "silent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c // held open, never answered
		}
	}()
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
			select {
			case c := <-accepted:
				defer c.Close()
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("memwho never asked the socket")
			}
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
// later signal landed on the same handler and only SIGKILL ended it
// (review8's note); now the second SIGINT takes the default action.
func TestReportSecondSignal(t *testing.T) {
	bin := buildMemwho(t)
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The smallest pipe, so that the JSON of a small host fills it.
	if _, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 4096); err != nil {
		t.Fatal(err)
	}
	// Enough processes that the JSON, one object per process, fills
	// the pipe on a quiet host too.
	for range 100 {
		sl := exec.Command("sleep", "120")
		if err := sl.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			sl.Process.Kill()
			sl.Wait()
		}()
	}
	cmd := exec.Command(bin, "--by", "pid", "--json", "--html", filepath.Join(dir, "p.html"))
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	// Full: memwho is blocked writing (or about to be).
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
