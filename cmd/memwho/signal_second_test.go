package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/profile"
)

// TestSignalPair: two signals a few milliseconds apart, as one
// event sends them: systemd's stop with SendSIGHUP=yes (SIGTERM, then
// SIGHUP), a terminal that closes (SIGHUP from the kernel to the
// foreground group, then from the shell to its jobs), Ctrl-C pressed
// twice. The run is held in its agent query (a socket that never
// answers, up to 1 s) with its temporary file open. The first signal
// ends the context; the second, after cli.InterruptibleOnce gave the
// signals their default action back, killed the run there and left
// the temporary file. The second now removes the temporary
// files before it ends the run: nothing is left, nothing published
// but a whole CPU profile (the run's first signal publishes it, as
// before).
func TestSignalPair(t *testing.T) {
	bin := buildMemwho(t)
	sock, accepted := silentAgent(t, t.TempDir(), 4)
	pairs := []struct {
		name          string
		first, second syscall.Signal
	}{
		{"systemd SIGTERM then SIGHUP", syscall.SIGTERM, syscall.SIGHUP},
		{"terminal closed: SIGHUP twice", syscall.SIGHUP, syscall.SIGHUP},
		{"Ctrl-C twice", syscall.SIGINT, syscall.SIGINT},
	}
	cmds := []struct {
		name string
		args func(out string) []string
	}{
		{"report --html", func(out string) []string { return []string{"--agent-socket", sock, "--by", "pid", "--html", out} }},
		{"report --svg --cpuprofile", func(out string) []string {
			if !profile.Built {
				// Run with -tags pprof by scripts/test.sh.
				return []string{"--agent-socket", sock, "--svg", out}
			}
			return []string{"--agent-socket", sock, "--svg", out, "--cpuprofile", out + ".prof"}
		}},
		{"snapshot -o", func(out string) []string { return []string{"snapshot", "--agent-socket", sock, "-o", out} }},
	}
	for _, c := range cmds {
		for _, p := range pairs {
			t.Run(c.name+"/"+p.name, func(t *testing.T) {
				dir := t.TempDir()
				out := filepath.Join(dir, "out")
				cmd := exec.Command(bin, c.args(out)...)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				waitAsked(t, cmd, accepted)
				cmd.Process.Signal(p.first)
				time.Sleep(50 * time.Millisecond)
				cmd.Process.Signal(p.second)
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case <-done:
				case <-time.After(20 * time.Second):
					cmd.Process.Kill()
					<-done
					t.Fatal("still running 20 s after two signals")
				}
				var names []string
				ents, _ := os.ReadDir(dir)
				for _, e := range ents {
					// A CPU profile is published when the run ends
					// at its first signal (profile.Close): whole.
					if e.Name() != "out.prof" {
						names = append(names, e.Name())
					}
				}
				if len(names) != 0 {
					t.Errorf("left in the directory: %q (exit %v)\nstderr: %s", names, cmd.ProcessState, stderr.String())
				}
			})
		}
	}
}

// TestSecondSignalBlockedWrite: the case InterruptibleOnce was
// made for, a report writing --html whose stdout is a full pipe nobody
// reads. The second SIGINT ends it (TestReportSecondSignal) and removes
// its temporary file first, which SIGKILL would leave behind.
func TestSecondSignalBlockedWrite(t *testing.T) {
	bin := buildMemwho(t)
	dir := t.TempDir()
	cmd, stderr := blockedReport(t, bin, filepath.Join(dir, "p.html"))
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the second SIGINT did not end the report")
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("exit %v, want killed by SIGINT\nstderr: %s", ws, stderr.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// TestIgnoredHangupStaysIgnored: a snapshot started with SIGHUP
// ignored (nohup) and stopped by SIGTERM, then sent SIGHUP (the
// terminal closing after systemd's stop): the SIGHUP stays ignored, not
// taken for the second signal nor given its default action; the run
// ends cleanly at the first, its temporary file removed.
func TestIgnoredHangupStaysIgnored(t *testing.T) {
	bin := buildMemwho(t)
	dir := t.TempDir()
	sock, accepted := silentAgent(t, t.TempDir(), 1)
	cmd := exec.Command("sh", "-c", `trap "" HUP; exec "$0" "$@"`, bin, "snapshot", "--agent-socket", sock, "-o", filepath.Join(dir, "s"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitAsked(t, cmd, accepted)
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(50 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGHUP)
	cmd.Wait()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() || ws.ExitStatus() != 1 {
		t.Errorf("exit %v, want 1 (interrupted)\nstderr: %s", ws, stderr.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the directory: %v", ents)
	}
}
