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
	loopbackPairs(t, 3)
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

// writeTCP replaces the captured tree's /proc/net/tcp with these
// ESTABLISHED sockets.
func writeTCP(t *testing.T, root string, inodes ...int) {
	t.Helper()
	const line = "   %d: 0100007F:9FBC 0100007F:82C1 01 00000000:00000000 00:00000000 00000000     0        0 %d 1 000000000312aeee 20 4 30 10 -1\n"
	tcp := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	for i, ino := range inodes {
		tcp += sprintf(line, i, ino)
	}
	if err := os.WriteFile(filepath.Join(root, "net", "tcp"), []byte(tcp), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestConnsIncremental: fd tables are read again only when their sockets
// can have changed, and the counts equal a full read's (CountConns) at
// every step, or within (noSocketSkips+1)*FullEvery ticks for the change
// the package documents as missed (a process that held no socket gains
// one with its descriptor count unchanged: on a captured tree the fd
// directory's size never moves).
func TestConnsIncremental(t *testing.T) {
	// Periodic reads are spread by PID over k ticks; none falls due
	// before the last step.
	const k = 1000
	root := proctest.Root(t, "../proc/testdata/basic.txtar")
	addSockets(t, root)
	fs := fstest.Open(t, root)
	e := newEngine(t, Options{FS: fs, Conns: true, FullEvery: k})
	link := func(p, target string) {
		p = filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.Remove(p)
		if target != "" {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	link("6573/fd/1", "/dev/null")
	steps := []struct {
		name string
		do   func()
		// maxRead is the most fd tables the tick may read; late is
		// the ticks the counts may lag a full read.
		maxRead, late int
	}{
		{"first tick reads all", func() {}, 4, 0},
		{"steady", func() {}, 0, 0},
		{"a connection closes", func() { link("6571/fd/7", ""); writeTCP(t, root, 1001, 1002, 1004) }, 0, 0},
		{"one closes, another accepted, same count", func() {
			link("6572/fd/3", "socket:[1005]")
			writeTCP(t, root, 1001, 1002, 1005)
		}, 4, 0},
		{"held by no process", func() { writeTCP(t, root, 1001, 1002, 1005, 1006) }, 2, 0},
		{"orphan not searched again", func() {}, 0, 0},
		{"a process without connections gains one", func() {
			link("6573/fd/9", "socket:[1007]")
			writeTCP(t, root, 1001, 1002, 1005, 1006, 1007)
		}, 4, (noSocketSkips + 1) * k},
	}
	var snap, want sample.Snapshot
	for _, st := range steps {
		st.do()
		ok := false
		for tick := 0; tick <= st.late; tick++ {
			if err := e.Scan(&snap); err != nil {
				t.Fatal(err)
			}
			if tick == 0 && e.Stats().ConnsRead > st.maxRead {
				t.Errorf("%s: read %d fd tables, want at most %d", st.name, e.Stats().ConnsRead, st.maxRead)
			}
			want.Procs = append(want.Procs[:0], snap.Procs...)
			if _, err := CountConns(fs, &want); err != nil {
				t.Fatal(err)
			}
			ok = true
			for i := range want.Procs {
				if snap.Procs[i].Conns != want.Procs[i].Conns {
					ok = false
					if tick == st.late {
						t.Errorf("%s: pid %d counts %d connections after %d ticks, a full read %d",
							st.name, snap.Procs[i].PID, snap.Procs[i].Conns, tick+1, want.Procs[i].Conns)
					}
				}
			}
			if ok {
				break
			}
		}
	}
}

// TestConnsIncrementalLive: this process's own loopback connections,
// opened and closed between ticks, counted as a full read counts them.
func TestConnsIncrementalLive(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	defer ln.Close()
	var conns []net.Conn
	dial := func() {
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
	hangUp := func() {
		conns[0].Close()
		conns[1].Close()
		conns = conns[2:]
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	fs := fstest.Open(t, "/proc")
	e := newEngine(t, Options{FS: fs, PIDs: []int{os.Getpid()}, Conns: true, FullEvery: 1000})
	var snap, want sample.Snapshot
	for i, step := range []func(){
		dial, dial, func() {}, hangUp, func() { hangUp(); dial() }, func() { dial(); dial(); hangUp() },
	} {
		step()
		if err := e.Scan(&snap); err != nil {
			t.Fatal(err)
		}
		want.Procs = append(want.Procs[:0], snap.Procs...)
		if _, err := CountConns(fs, &want); err != nil {
			t.Fatal(err)
		}
		if len(snap.Procs) != 1 || snap.Procs[0].Conns != want.Procs[0].Conns || int(snap.Procs[0].Conns) != len(conns) {
			t.Errorf("step %d: %d connections, a full read %d, held %d", i, snap.Procs[0].Conns, want.Procs[0].Conns, len(conns))
		}
	}
}

// loopbackPairs opens n loopback TCP connections within this process (2n
// ESTABLISHED sockets, both ends held here), closed when the test ends;
// it skips the test when no loopback listener can be made.
func loopbackPairs(t *testing.T, n int) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { ln.Close() })
	for range n {
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); s.Close() })
	}
}
