package reader

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/sample"
)

// parentEnv makes the test binary a parent that starts a reader, prints
// its pid and waits to be killed (TestReaderDiesWithParent).
const parentEnv = "MEMWHO_READER_TEST_PARENT"

func TestMain(m *testing.M) {
	// The reader is this binary started by Start: argv[1] is Command.
	// It starts the runtime's poller first, as memwho's cli.Main does
	// before its dispatch (a reader short of descriptors then lives on
	// rather than dying at its first timer).
	if len(os.Args) > 1 && os.Args[1] == Command {
		if err := cli.StartPoller(); err != nil {
			os.Exit(3)
		}
		os.Exit(Main(os.Args[2:]))
	}
	if os.Getenv(parentEnv) != "" {
		c, err := Start(context.Background(), Options{Interval: time.Hour})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(c.pid)
		select {}
	}
	os.Exit(m.Run())
}

func TestOptionsRoundTrip(t *testing.T) {
	for _, o := range []Options{
		{Parent: 1, Once: true},
		{Parent: 42, Interval: 2 * time.Second, Fast: true, UID: true, Cgroup: true, Conns: true},
		{Parent: 7, Once: true, NoNames: true, Sandbox: true, PIDs: []int{1, 22, 333}},
	} {
		args := o.Args()
		if args[0] != Command {
			t.Fatalf("Args()[0] = %q", args[0])
		}
		got, err := Parse(args[1:])
		if err != nil {
			t.Fatalf("Parse(%q): %v", args, err)
		}
		if !reflect.DeepEqual(got, o) {
			t.Errorf("Parse(%q) = %+v, want %+v", args, got, o)
		}
	}
}

// TestParseRefuses: the reader takes only what Args writes; anybody can
// start it by hand.
func TestParseRefuses(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--once"},     // no parent
		{"--parent=1"}, // neither once nor interval
		{"--parent=1", "--once", "--interval=1s"},   // both
		{"--parent=1", "--interval=1ns"},            // a walk as often as it can
		{"--parent=-3", "--once"},                   // not a pid
		{"--parent=1", "--once", "extra"},           // a positional argument
		{"--parent=1", "--once", "--proc=/tmp/x"},   // no procfs root to choose
		{"--parent=1", "--once", "--pids=1,x"},      // not a pid list
		{"--parent=1", "--once", "--pids=1,0"},      // pid 0
		{"--parent=1", "--once", "--pids=99999999"}, // past PID_MAX_LIMIT
	} {
		if o, err := Parse(args); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", args, o)
		}
	}
}

// findSelf returns this process's row in snap.
func findSelf(snap *sample.Snapshot) *sample.Process {
	for i := range snap.Procs {
		if snap.Procs[i].PID == os.Getpid() {
			return &snap.Procs[i]
		}
	}
	return nil
}

func TestReaderOnce(t *testing.T) {
	c, err := Start(context.Background(), Options{Once: true, UID: true, Cgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var snap sample.Snapshot
	if err := c.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	p := findSelf(&snap)
	if p == nil || p.RAM == 0 || !p.UIDKnown || p.UID != uint32(os.Getuid()) || p.Cgroup == "" && p.SystemdCgroup == "" {
		t.Fatalf("this process in the reader's snapshot: %+v", p)
	}
	if p.Accuracy != sample.Exact {
		t.Errorf("this process is an estimate: %+v", p)
	}
	// One walk, then the reader ends: the next Scan says so.
	if err := c.Scan(&snap); err == nil {
		t.Error("a second Scan of a --once reader succeeded")
	}
}

// TestReaderInterval: a watch's reader walks on its own clock; each Scan
// gives a newer walk.
func TestReaderInterval(t *testing.T) {
	c, err := Start(context.Background(), Options{Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var last time.Time
	for i := range 3 {
		var snap sample.Snapshot
		if err := c.Scan(&snap); err != nil {
			t.Fatal(err)
		}
		if !snap.Time.After(last) || findSelf(&snap) == nil {
			t.Fatalf("walk %d at %v after %v, this process %v", i, snap.Time, last, findSelf(&snap) != nil)
		}
		last = snap.Time
	}
	// Left alone for a while (a paused view), the walks it sent
	// meanwhile are skipped: the next one is fresh.
	time.Sleep(300 * time.Millisecond)
	asked := time.Now()
	var snap sample.Snapshot
	if err := c.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	if snap.Time.Before(asked.Add(-25 * time.Millisecond)) {
		t.Errorf("after a pause Scan gave the walk of %v, asked at %v", snap.Time, asked)
	}
}

// runReader runs this binary as a reader by hand (as anybody may), with
// env, its argv args and options on its standard input, and returns its
// frames' kinds and its error text.
func runReader(t *testing.T, env []string, options string, args ...string) (kinds string, errText string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, append([]string{Command}, args...)...)
	cmd.Args[0] = Argv0
	cmd.Env = env
	cmd.Stdin = strings.NewReader(options)
	out, _ := cmd.Output()
	for len(out) >= frameHeader {
		n := int(out[1])<<24 | int(out[2])<<16 | int(out[3])<<8 | int(out[4])
		if len(out) < frameHeader+n {
			break
		}
		kinds += string(out[0])
		if out[0] == frameError {
			errText = string(out[frameHeader : frameHeader+n])
		}
		out = out[frameHeader+n:]
	}
	return kinds, errText
}

// TestReaderRefusesEnvironment: started with a variable (GOROOT, which
// the time package reads through the runtime's own copy), it writes its
// error and reads nothing.
func TestReaderRefusesEnvironment(t *testing.T) {
	parent := "--parent=" + strconv.Itoa(os.Getpid())
	kinds, msg := runReader(t, []string{"GOROOT=/root/s"}, "--once", parent)
	if kinds != "E" || !strings.Contains(msg, "runs with none") {
		t.Errorf("frames %q, error %q; want one error frame refusing the environment", kinds, msg)
	}
	kinds, _ = runReader(t, []string{}, "--once", parent)
	if kinds != "RS" {
		t.Errorf("with no environment: frames %q, want ready and one snapshot", kinds)
	}
}

// TestReaderOptionsOnce: the reader's argv is its parent's pid alone;
// its options come once, on standard input; none at all (memwho did not
// need it after all) ends it without a word; bad ones are refused before
// anything is read.
func TestReaderOptionsOnce(t *testing.T) {
	parent := "--parent=" + strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		args    []string
		options string
		kinds   string
		msg     string
	}{
		{[]string{parent}, "", "", ""},
		{[]string{parent}, "--once\n--uid", "RS", ""},
		{[]string{parent, "--once"}, "", "E", "usage"},
		{[]string{}, "--once", "E", "usage"},
		{[]string{"--parent=x"}, "--once", "E", "not a process id"},
		{[]string{parent}, "--once\n--proc=/tmp", "E", "proc"},
		{[]string{parent}, "--interval=1ns", "E", "interval"},
		{[]string{parent}, "--once\nextra", "E", "unexpected argument"},
		{[]string{parent}, strings.Repeat("x", maxOptions+1), "E", "options of more than"},
	} {
		kinds, msg := runReader(t, []string{}, tc.options, tc.args...)
		if kinds != tc.kinds || !strings.Contains(msg, tc.msg) {
			t.Errorf("%q with %.20q: frames %q, error %q; want %q, %q", tc.args, tc.options, kinds, msg, tc.kinds, tc.msg)
		}
	}
}

// TestReaderNotItsParent: a reader whose parent is not the process its
// options name (that one died before the reader asked to die with it)
// stops before reading.
func TestReaderNotItsParent(t *testing.T) {
	kinds, msg := runReader(t, []string{}, "--once", "--parent=1")
	if kinds != "E" || !strings.Contains(msg, "is gone") {
		t.Errorf("frames %q, error %q; want one error frame", kinds, msg)
	}
}

// TestReaderClosesInherited: a descriptor left open across the exec (a
// shell's, the user's) is closed before the reader reads anything.
func TestReaderClosesInherited(t *testing.T) {
	f, err := os.Open("/etc/hostname")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	self, _ := os.Executable()
	cmd := exec.Command(self, Command, "--parent="+strconv.Itoa(os.Getpid()))
	cmd.Args[0] = Argv0
	cmd.Env = []string{}
	cmd.Stdin = strings.NewReader("--interval=1h")
	cmd.ExtraFiles = []*os.File{f} // descriptor 3, not close-on-exec
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// After its first snapshot frame's header the reader has done all
	// its setting up.
	br := bufio.NewReader(out)
	for i := 0; i < 2; i++ {
		var hdr [frameHeader]byte
		if _, err := br.Read(hdr[:1]); err != nil {
			t.Fatal(err)
		}
		if _, err := br.Discard(frameHeader - 1); err != nil {
			t.Fatal(err)
		}
		if hdr[0] == frameSnapshot {
			break
		}
	}
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
	for _, e := range ents {
		link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", cmd.Process.Pid, e.Name()))
		if strings.Contains(link, "hostname") {
			t.Errorf("the reader kept the inherited descriptor %s -> %s", e.Name(), link)
		}
	}
}

// TestReaderDiesWithParent: killed with its parent, even by SIGKILL.
func TestReaderDiesWithParent(t *testing.T) {
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), parentEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("parent said %q: %v", line, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitGone(t, pid)
}

// waitGone waits until process pid is gone (or a zombie nobody reaps).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("reader %d still runs: %s", pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReaderSignals: SIGTERM, SIGINT and SIGHUP end a reader at once (by
// their default action), also while it is stopped in a write to a full
// pipe; the client's Scan then says it ended.
func TestReaderSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		c, err := Start(context.Background(), Options{Interval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		// Nobody reads: the reader fills the pipe and waits in its
		// write.
		time.Sleep(100 * time.Millisecond)
		c.signal(sig)
		waitGone(t, c.pid)
		var snap sample.Snapshot
		for i := 0; ; i++ {
			err := c.Scan(&snap)
			if err != nil {
				break
			}
			if i > 1000 {
				t.Fatalf("%v: Scan still gives snapshots", sig)
			}
		}
		c.Close()
	}
}

// TestScanStops: a Scan waiting for a reader that sends nothing (stopped
// by its user: SIGSTOP) returns when its context ends.
func TestScanStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c, err := Start(ctx, Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var snap sample.Snapshot
	if err := c.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	c.signal(syscall.SIGSTOP)
	defer c.signal(syscall.SIGCONT)
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	if err := c.Scan(&snap); !errors.Is(err, ErrStopped) {
		t.Errorf("Scan: %v, want ErrStopped", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Scan returned %v after its context ended", d)
	}
}

// hostileReader points the client at a program writing out as its
// frames.
func hostileReader(t *testing.T, out []byte) {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "frames")
	if err := os.WriteFile(data, out, 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "reader")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\nexec cat "+data+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := exe
	exe = script
	t.Cleanup(func() { exe = old })
}

// TestClientHostileFrames: the client decodes what comes down the pipe
// as hostile input: errors, never a panic, a hang or an allocation of
// what a header claims.
func TestClientHostileFrames(t *testing.T) {
	ready := appendFrame(nil, frameReady, nil)
	good := appendSnapshot(nil, monotonic(), nil, &sample.Snapshot{Time: time.Now(), Procs: []sample.Process{{PID: 1, RAM: 4096}}})
	for _, tc := range []struct {
		name   string
		frames []byte
		start  bool // Start itself succeeds
		want   string
	}{
		{"nothing", nil, false, "ended without a word"},
		{"an error first", appendFrame(nil, frameError, []byte("boom")), false, "boom"},
		{"a snapshot first", good, false, "no ready frame"},
		{"4 GiB claimed", append(append([]byte{}, ready...), frameSnapshot, 0xff, 0xff, 0xff, 0xff), true, "a frame of"},
		{"a long note", append(append([]byte{}, ready...), frameNote, 0, 1, 0, 0), true, "a frame of"},
		{"unknown kind", append(append([]byte{}, ready...), 'X', 0, 0, 0, 0), true, "unknown frame"},
		{"cut short", append(append([]byte{}, ready...), good[:len(good)-3]...), true, "ended without a word"},
		{"a second ready", append(append([]byte{}, ready...), ready...), true, "unexpected frame"},
		{"held back past the processes", append(append([]byte{}, ready...), appendSnapshot(nil, monotonic(), []Deferred{{Index: 5, At: time.Now()}}, &sample.Snapshot{Procs: []sample.Process{{PID: 1}}})...), true, "held-back figure of process 5"},
		{"not a snapshot", append(append([]byte{}, ready...), appendFrame(nil, frameSnapshot, make([]byte, 20))...), true, "malformed"},
		{"a good one", append(append([]byte{}, ready...), good...), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostileReader(t, tc.frames)
			c, err := Start(context.Background(), Options{Once: true})
			if !tc.start {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Start: %v, want %q", err, tc.want)
				}
				if c != nil {
					c.Close()
				}
				return
			}
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer c.Close()
			var snap sample.Snapshot
			err = c.Scan(&snap)
			if tc.want == "" {
				if err != nil || len(snap.Procs) != 1 {
					t.Errorf("Scan: %v, %d processes", err, len(snap.Procs))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Scan: %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzSnapshotFrame: the 'S' frame's payload decoder on any bytes.
func FuzzSnapshotFrame(f *testing.F) {
	good := appendSnapshot(nil, 12345, []Deferred{{Index: 0, At: time.Unix(5, 0)}}, &sample.Snapshot{Time: time.Unix(7, 0), Procs: []sample.Process{{PID: 1, RAM: 4096}}})
	f.Add(good[frameHeader:])
	f.Add([]byte{})
	f.Add(make([]byte, 9))
	f.Fuzz(func(t *testing.T, p []byte) {
		var snap sample.Snapshot
		d, err := parseSnapshot(p, &snap, nil)
		if err != nil {
			return
		}
		for _, x := range d {
			if x.Index >= len(snap.Procs) {
				t.Fatalf("held-back index %d of %d processes accepted", x.Index, len(snap.Procs))
			}
		}
		// What decodes encodes back to the same frame.
		stamp, _ := frameStamp(p)
		again := appendSnapshot(nil, stamp, d, &snap)
		var snap2 sample.Snapshot
		d2, err := parseSnapshot(again[frameHeader:], &snap2, nil)
		if err != nil || len(d2) != len(d) || len(snap2.Procs) != len(snap.Procs) {
			t.Fatalf("round trip: %v, %d/%d held back, %d/%d processes", err, len(d2), len(d), len(snap2.Procs), len(snap.Procs))
		}
	})
}

// TestReaderNotDumpable: the reader makes itself non-dumpable, whatever
// its exec did (the kernel leaves a process dumpable when its exec did
// not grow its capabilities: a reader forked before memwho gave up its
// own, found by the adversarial pass of issue 27). Its /proc files then
// belong to root. As root everything is root's: skipped.
func TestReaderNotDumpable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("as root every /proc file is root's")
	}
	c, err := Start(context.Background(), Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/fd", c.pid), &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != 0 {
		t.Errorf("the reader's /proc/PID/fd belongs to uid %d: it is dumpable", st.Uid)
	}
}

// TestReaderWaitedByPid: the reader is started with syscall.ForkExec and
// waited for by its pid (the os package's first start probes pidfds with
// a child of its own, on the way to watch's first frame). How it ended
// reads as os.ProcessState says it; once its exit has been seen nothing
// is sent to its pid (another process may get it once it is reaped).
func TestReaderWaitedByPid(t *testing.T) {
	for _, script := range []string{"exit 3", "kill -KILL $$", "kill -TERM $$", "exit 0"} {
		cmd := exec.Command("/bin/sh", "-c", script)
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if got, want := describe(ws), cmd.ProcessState.String(); got != want {
			t.Errorf("%s: describe = %q, want %q", script, got, want)
		}
	}

	// Killed from outside: Scan says how it ended.
	c, err := Start(context.Background(), Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var snap sample.Snapshot
	if err := c.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(c.pid, syscall.SIGKILL)
	if err := c.Scan(&snap); err == nil || !strings.Contains(err.Error(), "(signal: killed)") {
		t.Errorf("Scan after SIGKILL: %v, want the reader ended without a word (signal: killed)", err)
	}
	<-c.exited
	c.Close()

	var sent []int
	kill = func(pid int, sig syscall.Signal) error {
		sent = append(sent, pid)
		return syscall.Kill(pid, sig)
	}
	defer func() { kill = syscall.Kill }()

	// Given no options, it exits by itself: Close then sends nothing.
	c, err = Prestart()
	if err != nil {
		t.Fatal(err)
	}
	c.options.Close()
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("a reader given no options still runs")
	}
	if c.status != 0 {
		t.Errorf("a reader given no options ended with %s", describe(c.status))
	}
	c.Close()
	if len(sent) != 0 {
		t.Errorf("Close sent a signal to %v after the reader was reaped", sent)
	}

	// Running: Close kills it, once, and it is reaped.
	c, err = Start(context.Background(), Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	pid := c.pid
	c.Close()
	c.Close()
	if !reflect.DeepEqual(sent, []int{pid}) {
		t.Errorf("Close sent signals to %v, want one to %d", sent, pid)
	}
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("a closed reader was not reaped")
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		t.Errorf("reader %d still exists after it was reaped", pid)
	}
}
