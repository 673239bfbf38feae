package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
	"github.com/memwho/memwho/internal/snapshot/snapserve"
)

// Snapshots as memwho's command line reads them: stdin snapshots,
// snapshot.Check, the stale note, a --fast agent refused (rows in
// docs/safe.md).

// plausibleSnap is agentSnapshot with PIDs from 1, spoilt by spoil.
func plausibleSnap(taken time.Time, spoil func(s *sample.Snapshot)) *sample.Snapshot {
	s := agentSnapshot(taken)
	s.Procs[0].PID, s.Procs[1].PID = 1, 2
	if spoil != nil {
		spoil(s)
	}
	return s
}

// spoiltSnaps are snapshots that passed snapshot.Check before the review
// and printed impossible figures (TestCheckSpoilt in
// internal/snapshot).
var spoiltSnaps = map[string]func(s *sample.Snapshot){
	// "10.0 MiB + 10.0 MiB = 10.0 MiB"
	"private + shared over ram": func(s *sample.Snapshot) { s.Procs[0].Private, s.Procs[0].Shared = 10<<20, 10<<20 },
	// a swap total of 16.0 EiB, diffed as "-1 B" beside "grew"
	"swap wraps": func(s *sample.Snapshot) { s.Procs[0].Swap, s.Procs[1].Swap = math.MaxUint64, 2 },
	// "free's used, not in any process -4.0 EiB", a negative change
	"ram of 2^63 + 5": func(s *sample.Snapshot) {
		s.Procs[0].RAM, s.Procs[0].Private, s.Procs[0].Shared = 1<<63+5, 1<<63+5, 0
	},
	// an Anon column of 16.0 EiB in a 10 MiB row
	"anon of 2^64 - 1": func(s *sample.Snapshot) { s.Procs[0].PssAnon = math.MaxUint64 },
}

// TestSpoiltSnapshotReaders: every reader that shows figures refuses the
// spoilt snapshots: --from (report, --split, --system, --json), watch
// --from, diff on either side, and the report from an agent serving one
// (which walks /proc instead). BROKE before the fix (exit 0, the
// figures printed).
func TestSpoiltSnapshotReaders(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	good := writeSnap(t, plausibleSnap(now, nil), now)
	for name, spoil := range spoiltSnaps {
		s := plausibleSnap(now, spoil)
		bad := writeSnap(t, s, now)
		for _, args := range [][]string{
			{"--from", bad, "--by", "pid"},
			{"--from", bad, "--split"},
			{"--from", bad, "--system"},
			{"--from", bad, "--json"},
			{"watch", "--plain", "--count", "1", "--from", bad},
			{"diff", good, bad},
			{"diff", "--json", bad, good},
		} {
			out, errOut, code := runArgs(args...)
			if code != cli.ExitFailure || out != "" || !strings.Contains(errOut, "malformed snapshot") {
				t.Errorf("%s: memwho %s: exit %d, want a malformed snapshot refused\n%s%s", name, strings.Join(args[:len(args)-1], " "), code, out, errOut)
			}
		}
		sock, _ := startAgent(t, s)
		out, errOut, _ := runArgs("--agent-socket", sock, "--by", "pid", "--csv")
		if strings.Contains(out, "from-agent") || !strings.Contains(errOut, "malformed") {
			t.Errorf("%s: the report showed the agent's spoilt snapshot:\n%s%s", name, out, errOut)
		}
	}
}

// withStdin runs f with os.Stdin reading from in.
func withStdin(t *testing.T, in *os.File, f func()) {
	t.Helper()
	saved := os.Stdin
	os.Stdin = in
	defer func() { os.Stdin = saved }()
	f()
}

// TestFromStdin: "-" reads standard input, once. What stdin can be
// (a snapshot, /dev/zero, a directory, an empty file, a gzip bomb)
// gives figures or a one-line error, in bounded memory, and never
// anything the user could not read: stdin is opened by the user's shell.
// HELD.
func TestFromStdin(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	good := writeSnap(t, plausibleSnap(now, nil), now)
	open := func(path string) *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	withStdin(t, open(good), func() {
		out, errOut, code := runArgs("--from", "-", "--by", "pid", "--csv")
		if code != cli.ExitOK || !strings.Contains(out, "from-agent-a [1]") || !strings.Contains(errOut, "figures from standard input, taken") {
			t.Errorf("--from -: exit %d\n%s%s", code, out, errOut)
		}
	})
	withStdin(t, open(good), func() {
		out, errOut, code := runArgs("diff", "-", good)
		if code != cli.ExitOK || !strings.Contains(out, "Before: standard input,") {
			t.Errorf("diff - FILE: exit %d\n%s%s", code, out, errOut)
		}
	})
	withStdin(t, open(good), func() {
		for _, args := range [][]string{{"diff", "-", "-"}, {"diff", "--json", "-", "-"}} {
			out, errOut, code := runArgs(args...)
			if code != cli.ExitUsage || out != "" || !strings.Contains(errOut, "standard input (-) can be only one") {
				t.Errorf("memwho %v: exit %d\n%s%s", args, code, out, errOut)
			}
		}
	})
	// A gzip bomb: 256 MiB of zeros, 256 KiB compressed.
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for range 256 {
		zw.Write(zero)
	}
	zw.Close()
	bombPath := filepath.Join(t.TempDir(), "bomb")
	if err := os.WriteFile(bombPath, bomb.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"/dev/zero", "/dev/zero", "not a gzip stream"},
		{"a directory", t.TempDir(), "standard input"},
		{"an empty file", empty, "not a gzip stream: EOF"},
		{"a gzip bomb", bombPath, "more than"},
	} {
		for _, args := range [][]string{{"--from", "-"}, {"diff", "-", good}, {"diff", good, "-"}} {
			withStdin(t, open(tc.path), func() {
				done := make(chan struct{})
				var out, errOut string
				var code int
				go func() {
					defer close(done)
					out, errOut, code = runArgs(args...)
				}()
				select {
				case <-done:
				case <-time.After(20 * time.Second):
					t.Fatalf("%s as stdin, memwho %v: still running after 20s", tc.name, args)
				}
				if code != cli.ExitFailure || out != "" || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
					t.Errorf("%s as stdin, memwho %v: exit %d, want one line with %q\n%s%s", tc.name, args, code, tc.want, out, errOut)
				}
			})
		}
	}
}

// TestInterruptWhileReading: diff and watch catch SIGINT to end cleanly;
// while they read a snapshot that never ends (standard input from a
// stalled pipe, a FIFO nobody writes), the first SIGINT was lost: it
// took a second one, or the writer's end. BROKE before the fix; one
// SIGINT ends them now.
func TestInterruptWhileReading(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memwho")
	}
	bin := realMemwho(t)
	dir := t.TempDir()
	now := time.Now().Truncate(time.Second)
	good := writeSnap(t, plausibleSnap(now, nil), now)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		stdin bool // a pipe whose writer stays open
		args  []string
	}{
		{"diff - FILE, stdin stalled", true, []string{"diff", "-", good}},
		{"diff FIFO FILE", false, []string{"diff", fifo, good}},
		{"diff FILE FIFO", false, []string{"diff", good, fifo}},
		{"watch --from -, stdin stalled", true, []string{"watch", "--plain", "--from", "-"}},
		{"watch --from FIFO", false, []string{"watch", "--plain", "--from", fifo}},
	} {
		c := exec.Command(bin, tc.args...)
		var stderr bytes.Buffer
		c.Stderr = &stderr
		var w *os.File
		if tc.stdin {
			r, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			c.Stdin, w = r, pw
			defer r.Close()
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		c.Process.Signal(syscall.SIGINT)
		exited := make(chan error, 1)
		go func() { exited <- c.Wait() }()
		select {
		case <-exited:
			if !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("%s: stderr after SIGINT: %q", tc.name, stderr.String())
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: still running 5s after one SIGINT", tc.name)
			c.Process.Kill()
			<-exited
		}
		if w != nil {
			w.Close()
		}
	}
}

// TestWatchFastAgent: an agent restarted with --fast while a
// watch reads it: its estimates were shown at the next refresh, the
// first fetch's refusal (estimatesByChoice) bypassed. BROKE before the
// fix; the watch ends with the reason.
func TestWatchFastAgent(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "snapshot.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	exact := plausibleSnap(time.Now(), nil)
	fast := plausibleSnap(time.Now(), func(s *sample.Snapshot) {
		for i := range s.Procs {
			s.Procs[i].Accuracy, s.Procs[i].Cause = sample.Estimate, sample.CauseNone
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		snapserve.Serve(ctx, ln, func() (*sample.Snapshot, time.Time, bool) {
			if calls.Add(1) == 1 {
				return exact, time.Now(), true
			}
			return fast, time.Now(), true
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	out, errOut, code := runArgs("watch", "--plain", "--count", "3", "--interval", "100ms", "--agent-socket", sock)
	if code != cli.ExitFailure || !strings.Contains(errOut, "serve --fast") || strings.Count(out, "from-agent-a") != 1 {
		t.Errorf("watch of an agent turned --fast: exit %d\n%s%s", code, out, errOut)
	}
}

// TestStaleNote: a hostile agent's section 6 (Oldest, StaleBound)
// in the future, in the far past, at year 1 or past year 9999, with a
// bound of 2^64 - 1: the note stays one line of stderr, without a
// negative age or escape, and stdout's JSON is the snapshot's. HELD.
func TestStaleNote(t *testing.T) {
	for _, tc := range []struct {
		name   string
		oldest time.Time
		bound  uint64
	}{
		{"future", time.Now().Add(time.Hour), 1 << 30},
		{"far past", time.Unix(-1<<40, 0), 1 << 30},
		{"year 1", time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), math.MaxUint64},
		{"year 20000", time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC), math.MaxUint64},
		{"max int64 seconds", time.Unix(math.MaxInt64, 999999999), 1 << 63},
		{"min int64 seconds", time.Unix(math.MinInt64, 0), 1},
	} {
		s := plausibleSnap(time.Now(), nil)
		s.Oldest, s.StaleBound = tc.oldest, tc.bound
		// Through the codec, as an agent would send it.
		var got sample.Snapshot
		if err := snapshot.Decode(snapshot.Encode(nil, s), &got); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		sock, _ := startAgent(t, &got)
		out, errOut, code := runArgs("--agent-socket", sock, "--json")
		if code != cli.ExitOK || !strings.HasPrefix(out, `{"schema":"memwho.report/v1"`) || strings.Count(out, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q", tc.name, code, out)
		}
		if strings.Count(errOut, "\n") != 1 || strings.ContainsAny(errOut, "\x1b\r") || strings.Contains(errOut, "-") && strings.Contains(errOut, "up to -") {
			t.Errorf("%s: stderr %q, want one line", tc.name, errOut)
		}
		if tc.bound > 1<<20 && !strings.Contains(errOut, "unchanged processes' figures are up to") {
			t.Errorf("%s: stderr %q, want the stale note", tc.name, errOut)
		}
	}
}

// TestHostileSnapshotPlausible: the hostile agent
// snapshot stays what a sampler could write, so that its attacks still
// reach the renderers (TestPrivilegedInstall runs them).
func TestHostileSnapshotPlausible(t *testing.T) {
	if err := snapshot.Check(hostileSnapshot()); err != nil {
		t.Errorf("hostileSnapshot: %v", err)
	}
	if err := snapshot.Check(implausibleSnapshot()); err == nil {
		t.Error("implausibleSnapshot passes Check")
	}
}
