package sockdiag

import (
	"bufio"
	"fmt"
	"github.com/memwho/memwho/internal/proc/fstest"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// childEnv makes the test binary a child that opens connections: its
// value is "ADDR,N"; the child dials ADDR N times, prints "ready" and
// holds the connections until its stdin closes.
const childEnv = "MEMWHO_SOCKDIAG_CHILD"

func TestMain(m *testing.M) {
	if v, ok := os.LookupEnv(childEnv); ok {
		os.Exit(runChild(v))
	}
	os.Exit(m.Run())
}

func runChild(v string) int {
	addr, ns, _ := strings.Cut(v, ",")
	n, _ := strconv.Atoi(ns)
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		conns = append(conns, c)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
	return 0
}

// listen accepts connections on network/addr until the test ends and
// keeps them open.
func listen(t *testing.T, network, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("listen %s %s: %v", network, addr, err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln
}

// startChild starts a child holding n connections to addr.
func startChild(t *testing.T, addr string, n int) int {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+addr+","+strconv.Itoa(n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("child: %q %v", line, err)
	}
	return cmd.Process.Pid
}

// TestCountLive counts real loopback connections: children holding 3
// and 5 connections over IPv4 and 2 over IPv6, each source of inodes.
func TestCountLive(t *testing.T) {
	ln4 := listen(t, "tcp4", "127.0.0.1:0")
	a := startChild(t, ln4.Addr().String(), 3)
	b := startChild(t, ln4.Addr().String(), 5)
	ln6, err := net.Listen("tcp6", "[::1]:0")
	c, want6 := 0, 0
	if err == nil {
		ln6.Close()
		ln6 = listen(t, "tcp6", "[::1]:0")
		c, want6 = startChild(t, ln6.Addr().String(), 2), 2
	} else {
		t.Logf("no IPv6 loopback: %v", err)
	}
	// The accepted ends are ours.
	self := os.Getpid()
	wantSelf := uint32(3 + 5 + want6)

	fc := NewFDCounter(fstest.Open(t, "/proc"))

	sources := map[string]func(*InodeSet) error{
		"sock_diag": func(s *InodeSet) error {
			d, err := Open()
			if err != nil {
				return err
			}
			defer d.Close()
			s.Reset()
			return d.Established(s)
		},
		"proc-net": func(s *InodeSet) error {
			s.Reset()
			_, err := ReadProcNet(fstest.Open(t, "/proc"), s, nil)
			return err
		},
	}
	for name, fill := range sources {
		t.Run(name, func(t *testing.T) {
			var set InodeSet
			// The accepting goroutine may still be catching up.
			deadline := time.Now().Add(10 * time.Second)
			for {
				if err := fill(&set); err != nil {
					t.Fatal(err)
				}
				n, _ := fc.Count(self, &set)
				if n == wantSelf || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			for _, tc := range []struct {
				pid  int
				want uint32
			}{{a, 3}, {b, 5}, {c, uint32(want6)}, {self, wantSelf}} {
				if tc.pid == 0 {
					continue
				}
				got, err := fc.Count(tc.pid, &set)
				if err != nil {
					t.Fatalf("count %d: %v", tc.pid, err)
				}
				if got != tc.want {
					t.Errorf("pid %d: %d established, want %d", tc.pid, got, tc.want)
				}
			}
		})
	}
}

// TestListenerNotCounted: a listening socket and a closed connection
// are not ESTABLISHED.
func TestListenerNotCounted(t *testing.T) {
	ln := listen(t, "tcp4", "127.0.0.1:0")
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	d, err := Open()
	if err != nil {
		t.Skipf("sock_diag: %v", err)
	}
	defer d.Close()
	var set InodeSet
	set.Reset()
	if err := d.Established(&set); err != nil {
		t.Fatal(err)
	}
	// Whatever the accepting side holds, the listener's own inode is
	// never in the set.
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	ino, ok := ParseSocketLink([]byte(link))
	if !ok {
		t.Fatalf("listener link %q", link)
	}
	if set.Has(ino) {
		t.Errorf("listener inode %d counted as established", ino)
	}
}

func TestParseSocketLink(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"socket:[12345]", 12345, true},
		{"socket:[0]", 0, true},
		{"socket:[]", 0, false},
		{"socket:[12a]", 0, false},
		{"pipe:[12345]", 0, false},
		{"anon_inode:[eventpoll]", 0, false},
		{"/dev/null", 0, false},
		{"socket:[99999999999999999999]", 0, false},
	} {
		got, ok := ParseSocketLink([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseSocketLink(%q) = %d, %v, want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
