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
