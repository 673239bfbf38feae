package sockdiag

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/proc/fstest"
)

// TestSocketsCountsOnlySockets: descriptors whose link names look
// like a socket's ("socket:[N]" as a file name, a memfd or a pipe) are
// not sockets; every inode Sockets lists is one of this process's
// sockets, and each of them is listed. Closing descriptors meanwhile
// makes no error (only ENOMEM does: TestSocketsReadlinkENOMEM).
func TestSocketsCountsOnlySockets(t *testing.T) {
	dir := t.TempDir()
	var fds []int
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	// A file named like a socket link, in a directory named like one.
	sub := filepath.Join(dir, "socket:[7]")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "socket:[9]"), filepath.Join(sub, "socket:[11]")} {
		fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fd)
	}
	if fd, err := unix.MemfdCreate("socket:[13]", 0); err == nil { // "/memfd:socket:[13] (deleted)"
		fds = append(fds, fd)
	}
	var p [2]int
	if err := syscall.Pipe(p[:]); err == nil { // "pipe:[N]"
		fds = append(fds, p[0], p[1])
	}
	if fd, err := unix.Eventfd(0, 0); err == nil { // "anon_inode:[eventfd]"
		fds = append(fds, fd)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	// The sockets this process holds, by fstat.
	var want []uint64
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fd, _ := strconv.Atoi(e.Name())
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFSOCK {
			want = append(want, st.Ino)
		}
	}
	c := NewFDCounter(fstest.Open(t, "/proc"))
	got, err := c.Sockets(os.Getpid(), nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Sockets = %v, the sockets by fstat %v", got, want)
	}
	for _, fake := range []uint64{7, 9, 11, 13} {
		if slices.Contains(got, fake) && !slices.Contains(want, fake) {
			t.Errorf("inode %d of a file named like a socket counted", fake)
		}
	}
	if len(want) == 0 {
		t.Error("no socket found: the listener should be one")
	}
}

// TestSocketsReadlinkENOMEM: a descriptor link that cannot be read for
// want of memory makes the whole table unreadable (the caller counts the
// process's connections unknown), where a link gone or refused (the
// descriptor closed meanwhile) is just no socket.
func TestSocketsReadlinkENOMEM(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := NewFDCounter(fstest.Open(t, "/proc"))
	for _, tc := range []struct {
		errno syscall.Errno
		fails bool
	}{{syscall.ENOMEM, true}, {syscall.ENOENT, false}, {syscall.EACCES, false}} {
		restore := proc.SetFault(func(op, path string) syscall.Errno {
			if op == "readlink" {
				return tc.errno
			}
			return 0
		})
		got, err := c.Sockets(os.Getpid(), nil)
		restore()
		switch {
		case tc.fails && !errors.Is(err, syscall.ENOMEM):
			t.Errorf("%v on every link: Sockets = %v, %v; want ENOMEM", tc.errno, got, err)
		case !tc.fails && (err != nil || len(got) != 0):
			t.Errorf("%v on every link: Sockets = %v, %v; want none and no error", tc.errno, got, err)
		}
	}
	if got, err := c.Sockets(os.Getpid(), nil); err != nil || len(got) == 0 {
		t.Errorf("without the fault: Sockets = %v, %v; want the listener", got, err)
	}
}
