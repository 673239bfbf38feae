package reader

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nofileEnv makes the test binary lower its open-file limit (to the
// value of the variable) and execute itself as a reader of its
// parent, with the descriptors it was given: a user starting
// "memwho __reader" by hand under "ulimit -n N" with descriptors open.
const nofileEnv = "MEMWHO_READER_TEST_NOFILE"

func init() {
	v := os.Getenv(nofileEnv)
	if v == "" || len(os.Args) > 1 && os.Args[1] == Command {
		return
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		os.Exit(3)
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		os.Exit(3)
	}
	// The hard limit too: the Go runtime raises the soft one to it
	// at start-up.
	rl.Cur, rl.Max = n, n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		os.Exit(3)
	}
	self, err := os.Executable()
	if err != nil {
		os.Exit(3)
	}
	syscall.Exec(self, []string{Argv0, Command, "--parent=" + strconv.Itoa(os.Getppid())}, []string{})
	os.Exit(3)
}

// readerWithInherited starts a reader whose descriptors 3 to 3+copies-1
// are the write end of a pipe and whose open-file limit is nofile (0:
// unchanged), gives it options, and reads its frames up to its first
// snapshot or error. It returns their kinds and error text, and whether
// the reader still held the pipe's write end by then (its read end saw
// no end of file).
func readerWithInherited(t *testing.T, copies int, nofile uint64, options string) (kinds, errText string, held bool) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd := exec.Command(self)
	cmd.Env = []string{nofileEnv + "=" + strconv.FormatUint(nofile, 10)}
	if nofile == 0 {
		cmd = exec.Command(self, Command, "--parent="+strconv.Itoa(os.Getpid()))
		cmd.Args[0] = Argv0
		cmd.Env = []string{}
	}
	for range copies {
		cmd.ExtraFiles = append(cmd.ExtraFiles, pw)
	}
	cmd.Stdin = strings.NewReader(options)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	kinds, errText = readFrames(out, true)
	// Still running (an interval of an hour): the pipe ends only if
	// the reader closed every copy of its write end.
	pr.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	var b [1]byte
	_, err = pr.Read(b[:])
	held = errors.Is(err, os.ErrDeadlineExceeded)
	return kinds, errText, held
}

// readFrames reads a reader's frames from r until it ends (or, with
// first, its first snapshot or error) and returns their kinds and its
// error text.
func readFrames(r io.Reader, first bool) (kinds, errText string) {
	br := bufio.NewReader(r)
	for {
		var hdr [frameHeader]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return kinds, errText
		}
		p := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
		if _, err := io.ReadFull(br, p); err != nil {
			return kinds, errText
		}
		kinds += string(hdr[0])
		if hdr[0] == frameError {
			errText = string(p)
		}
		if first && (hdr[0] == frameSnapshot || hdr[0] == frameError) {
			return kinds, errText
		}
	}
}

// TestReaderInheritedClosedAsAnyUser: the descriptors a user leaves open
// across the reader's exec are closed before it reads anything. Checked
// by the end of a pipe whose write end it inherited, which a normal user
// can see too (the reader is not dumpable: its /proc/PID/fd is root's).
func TestReaderInheritedClosedAsAnyUser(t *testing.T) {
	kinds, msg, held := readerWithInherited(t, 3, 0, "--interval=1h")
	if kinds != "RS" {
		t.Fatalf("frames %q, error %q; want ready and a snapshot", kinds, msg)
	}
	if held {
		t.Error("the reader kept an inherited descriptor (a pipe's write end) open")
	}
}

// TestReaderInheritedWithoutDescriptors: an open-file limit that leaves
// the reader no descriptor to list its own (/proc/self/fd) made it skip
// closing the inherited ones and go on holding them (issue 27's
// independent attack), against what it promises: it then raised no
// capability only because the mount check that follows found no
// descriptor either. It refuses instead.
func TestReaderInheritedWithoutDescriptors(t *testing.T) {
	const copies = 24
	for limit := uint64(16); limit <= 3+copies+8; limit++ {
		kinds, msg, held := readerWithInherited(t, copies, limit, "--interval=1h")
		t.Logf("limit %d: frames %q, error %q, inherited held %v", limit, kinds, msg, held)
		if held && strings.ContainsAny(kinds, "RS") {
			t.Errorf("limit %d: the reader went on (frames %q) holding its inherited descriptors", limit, kinds)
		}
	}
}

// runReaderRaw is runReader with the environment given to execve as it
// is (os/exec would drop a key's earlier entries and empty ones).
func runReaderRaw(t *testing.T, env []string, options string) (kinds, errText string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, out, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.StartProcess(self, []string{Argv0, Command, "--parent=" + strconv.Itoa(os.Getpid())}, &os.ProcAttr{Env: env, Files: []*os.File{in, out, nil}})
	in.Close()
	out.Close()
	if err != nil {
		t.Fatal(err)
	}
	inW.WriteString(options)
	inW.Close()
	kinds, errText = readFrames(outR, false)
	outR.Close()
	p.Wait()
	return kinds, errText
}

// TestReaderRefusesEnvironmentSpellings: the runtime reads a variable
// from the first entry of its key, and os.Environ lists every first
// entry (syscall.copyenv drops later entries of a key and empty ones):
// no spelling of the environment hides a variable the runtime reads from
// the reader's check. The runtime's own GOTRACEBACK=none is the one
// variable let through, also when a later entry of it says otherwise
// (the runtime reads the first; after a privileged exec it rewrites
// them all).
func TestReaderRefusesEnvironmentSpellings(t *testing.T) {
	for _, env := range [][]string{
		{"GOTRACEBACK=none", "GODEBUG=inittrace=1"},
		{"", "GOROOT=/root/s"},
		{"GOROOT=/root/s", "GOROOT="},
		{"GOROOT=", "GOROOT=/root/s"},
		{"GODEBUG=x", "GOTRACEBACK=none", "GODEBUG=y"},
		{"NOEQUALS"},
		{"=x"},
	} {
		kinds, msg := runReaderRaw(t, env, "--once")
		if kinds != "E" || !strings.Contains(msg, "runs with none") {
			t.Errorf("environment %q: frames %q, error %q; want one error frame refusing it", env, kinds, msg)
		}
	}
	for _, env := range [][]string{{"GOTRACEBACK=none"}, {"GOTRACEBACK=none", "GOTRACEBACK=crash"}, {""}} {
		if kinds, msg := runReaderRaw(t, env, "--once"); kinds != "RS" {
			t.Errorf("environment %q: frames %q, error %q; want ready and a snapshot", env, kinds, msg)
		}
	}
}
