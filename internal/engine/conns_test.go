package engine

import (
	"fmt"
	"github.com/memwho/memwho/internal/proc/fstest"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/memwho/memwho/internal/sample"
)

// addSockets gives a captured tree a /proc/net/tcp with ESTABLISHED
// sockets 1001-1004 (and a listening 2000), and fd links: 6571 holds
// three of them, 6572 one plus the listener and a file.
func addSockets(t *testing.T, root string) {
	t.Helper()
	const line = "   %d: 0100007F:9FBC 0100007F:82C1 %s 00000000:00000000 00:00000000 00000000     0        0 %d 1 000000000312aeee 20 4 30 10 -1\n"
	tcp := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	for i, ino := range []int{1001, 1002, 1003, 1004, 2000} {
		st := "01"
		if ino == 2000 {
			st = "0A"
		}
		tcp += sprintf(line, i, st, ino)
	}
	os.MkdirAll(filepath.Join(root, "net"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "net", "tcp"), []byte(tcp), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"6571/fd/3": "socket:[1001]", "6571/fd/4": "socket:[1002]", "6571/fd/7": "socket:[1003]",
		"6572/fd/3": "socket:[1004]", "6572/fd/4": "socket:[2000]", "6572/fd/5": "/dev/null",
	}
	for p, target := range links {
		p = filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}

func sprintf(format string, a ...any) string {
	return fmt.Sprintf(format, a...)
}

func TestConnsFixture(t *testing.T) {
	root := proctest.Root(t, "../proc/testdata/basic.txtar")
	addSockets(t, root)
	e := newEngine(t, Options{FS: fstest.Open(t, root), Conns: true})
	var snap sample.Snapshot
	if err := e.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	if !snap.ConnsOK || !e.Stats().ConnsProcNet {
		t.Fatalf("ConnsOK %v, proc net %v; err %v", snap.ConnsOK, e.Stats().ConnsProcNet, e.Stats().ConnsErr)
	}
	want := map[int]uint32{6570: 0, 6571: 3, 6572: 1, 6573: 0}
	for _, p := range snap.Procs {
		if p.Conns != want[p.PID] {
			t.Errorf("pid %d: %d connections, want %d", p.PID, p.Conns, want[p.PID])
		}
	}
	g := sample.Total(sample.GroupProcs(snap.Procs, sample.ByProgram, nil))
	if g.Conns != 4 {
		t.Errorf("total connections = %d, want 4", g.Conns)
	}
}

// TestConnsLive counts this test process's own loopback connections
// through sock_diag.
func TestConnsLive(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	defer ln.Close()
	var conns []net.Conn
	for range 3 {
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c, s)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	e := newEngine(t, Options{FS: fstest.Open(t, "/proc"), PIDs: []int{os.Getpid()}, Conns: true})
	var snap sample.Snapshot
	if err := e.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Procs) != 1 || !snap.ConnsOK {
		t.Fatalf("procs %d, ConnsOK %v (%v)", len(snap.Procs), snap.ConnsOK, e.Stats().ConnsErr)
	}
	if got := snap.Procs[0].Conns; got != 6 {
		t.Errorf("pid %s: %d connections, want 6", strconv.Itoa(os.Getpid()), got)
	}
}
