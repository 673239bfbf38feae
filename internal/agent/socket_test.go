package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/memwho/memwho/internal/privilege/privtest"
	"golang.org/x/sys/unix"
)

// TestSocketCreated: a missing directory is created 0750 with the
// socket's group, the socket gets the asked mode and group, and closing
// the listener removes the file.
func TestSocketCreated(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     fs.FileMode
		gid      int
		needRoot bool
	}{
		{"group-default", 0o660, -1, false},
		{"owner-only", 0o600, -1, false},
		{"other-group", 0o660, 4242, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needRoot && os.Geteuid() != 0 {
				t.Skip("needs root to give the socket to a group it is not in")
			}
			dir := filepath.Join(t.TempDir(), "run", "memwho")
			os.Mkdir(filepath.Dir(dir), 0o755)
			path := filepath.Join(dir, "memwho.sock")
			ln, err := ListenUnix(path, SocketOptions{Mode: tc.mode, GID: tc.gid})
			if err != nil {
				t.Fatal(err)
			}
			wantGID := tc.gid
			if wantGID < 0 {
				wantGID = os.Getegid()
			}
			checkFile(t, dir, unix.S_IFDIR, 0o750, wantGID)
			checkFile(t, path, unix.S_IFSOCK, tc.mode, wantGID)
			c, err := net.Dial("unix", path)
			if err != nil {
				t.Fatalf("connect as owner: %v", err)
			}
			c.Close()
			ln.Close()
			if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after Close: %v, want the socket removed", err)
			}
		})
	}
}

func checkFile(t *testing.T, path string, kind uint32, mode fs.FileMode, gid int) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	if got := st.Mode & unix.S_IFMT; got != kind {
		t.Errorf("%s: type %#o, want %#o", path, got, kind)
	}
	if got := fs.FileMode(st.Mode & 0o7777); got != mode {
		t.Errorf("%s: mode %#o, want %#o", path, got, mode)
	}
	if int(st.Uid) != os.Geteuid() || int(st.Gid) != gid {
		t.Errorf("%s: owner %d:%d, want %d:%d", path, st.Uid, st.Gid, os.Geteuid(), gid)
	}
}

// TestSocketRefused: what ListenUnix must not bind over, follow or
// trust, and that it leaves what it found in place.
func TestSocketRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(t *testing.T, dir string) string // returns the socket path
		want     string
		needRoot bool
	}{
		{"symlink-at-path", func(t *testing.T, dir string) string {
			target := filepath.Join(dir, "target")
			os.WriteFile(target, []byte("keep"), 0o600)
			p := filepath.Join(dir, "m.sock")
			os.Symlink(target, p)
			return p
		}, "is a symlink, not a socket", false},
		{"dangling-symlink-at-path", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "m.sock")
			os.Symlink(filepath.Join(dir, "nowhere"), p)
			return p
		}, "is a symlink, not a socket", false},
		{"regular-file-at-path", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "m.sock")
			os.WriteFile(p, []byte("keep"), 0o600)
			return p
		}, "is a regular file, not a socket", false},
		{"directory-at-path", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "m.sock")
			os.Mkdir(p, 0o700)
			return p
		}, "is a directory, not a socket", false},
		{"fifo-at-path", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "m.sock")
			unix.Mkfifo(p, 0o600)
			return p
		}, "is a FIFO, not a socket", false},
		{"live-socket-at-path", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "m.sock")
			ln, err := net.Listen("unix", p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			return p
		}, "another process is listening on it", false},
		{"others-writable-dir", func(t *testing.T, dir string) string {
			d := filepath.Join(dir, "open")
			os.Mkdir(d, 0o700)
			os.Chmod(d, 0o777)
			return filepath.Join(d, "m.sock")
		}, "writable by group or others", false},
		{"sticky-others-writable-dir", func(t *testing.T, dir string) string {
			d := filepath.Join(dir, "tmp")
			os.Mkdir(d, 0o700)
			os.Chmod(d, 0o1777)
			return filepath.Join(d, "m.sock")
		}, "writable by group or others", false},
		{"group-writable-dir", func(t *testing.T, dir string) string {
			d := filepath.Join(dir, "g")
			os.Mkdir(d, 0o700)
			os.Chmod(d, 0o770)
			return filepath.Join(d, "m.sock")
		}, "writable by group or others", false},
		{"others-writable-ancestor", func(t *testing.T, dir string) string {
			a := filepath.Join(dir, "open")
			os.Mkdir(a, 0o700)
			os.Chmod(a, 0o777)
			return filepath.Join(a, "memwho", "m.sock")
		}, "writable by group or others", false},
		{"symlink-as-dir", func(t *testing.T, dir string) string {
			real := filepath.Join(dir, "real")
			os.Mkdir(real, 0o700)
			os.Symlink(real, filepath.Join(dir, "link"))
			return filepath.Join(dir, "link", "m.sock")
		}, "is a symlink; the socket's directory must be a real directory", false},
		{"file-as-dir", func(t *testing.T, dir string) string {
			os.WriteFile(filepath.Join(dir, "f"), nil, 0o600)
			return filepath.Join(dir, "f", "m.sock")
		}, "not a directory", false},
		{"dir-of-another-user", func(t *testing.T, dir string) string {
			d := filepath.Join(dir, "theirs")
			os.Mkdir(d, 0o755)
			os.Chown(d, 4243, 4243)
			return filepath.Join(d, "m.sock")
		}, "owned by uid 4243", true},
		{"abstract", func(t *testing.T, dir string) string { return "@memwho" }, "abstract sockets", false},
		{"too-long", func(t *testing.T, dir string) string {
			return filepath.Join(dir, strings.Repeat("x", 120)+".sock")
		}, "longer than the 107 bytes", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needRoot && os.Geteuid() != 0 {
				t.Skip("needs root to make a directory of another user")
			}
			dir := t.TempDir()
			path := tc.setup(t, dir)
			before := snapshotTree(t, dir)
			ln, err := ListenUnix(path, SocketOptions{Mode: 0o660, GID: -1})
			if err == nil {
				ln.Close()
				t.Fatalf("ListenUnix(%s) succeeded, want an error containing %q", path, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ListenUnix(%s) = %v, want an error containing %q", path, err, tc.want)
			}
			if after := snapshotTree(t, dir); after != before {
				t.Errorf("the refused call changed the tree:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// snapshotTree describes every file under dir (type, mode, symlink
// target, content of regular files), to check that nothing was removed
// or replaced.
func snapshotTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, _ := d.Info()
		fmt.Fprintf(&b, "%s %v", strings.TrimPrefix(p, dir), info.Mode())
		if d.Type()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			fmt.Fprintf(&b, "->%s", l)
		} else if d.Type().IsRegular() {
			c, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "=%q", c)
		}
		b.WriteString("; ")
		return nil
	})
	return b.String()
}

// TestSocketStale: a socket file nobody accepts on (a killed run) is
// replaced.
func TestSocketStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.sock")
	old, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	old.SetUnlinkOnClose(false)
	old.Close()
	ln, err := ListenUnix(path, SocketOptions{Mode: 0o600, GID: -1})
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	defer ln.Close()
	checkFile(t, path, unix.S_IFSOCK, 0o600, os.Getegid())
}

// TestSocketOtherUser: a second local user (privtest.UserName) connects
// to the 0660 socket only when the socket's group is one of theirs; not
// in the group, connect(2) fails with EACCES.
func TestSocketOtherUser(t *testing.T) {
	if os.Getenv(connectEnv) != "" {
		t.Skip("helper process")
	}
	privtest.RequireRoot(t)
	u := privtest.EnsureUser(t)
	dir := privtest.PublicDir(t)
	exe := privtest.CopyExecutable(t, dir, "agent.test")
	const otherGID = 4244 // a group memwho-test is not in
	for _, tc := range []struct {
		name     string
		sockGID  int
		wantErrn string
	}{
		{"in-group", u.GID, "ok"},
		{"not-in-group", otherGID, "EACCES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".sock")
			ln, err := ListenUnix(path, SocketOptions{Mode: 0o660, GID: tc.sockGID})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
			cmd := exec.Command(exe, "-test.run=^TestSocketConnectHelper$")
			cmd.Env = append(os.Environ(), connectEnv+"="+path)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
				Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{},
			}}
			out, _ := cmd.CombinedOutput()
			got := ""
			for _, l := range strings.Split(string(out), "\n") {
				if v, ok := strings.CutPrefix(l, "connect: "); ok {
					got = v
				}
			}
			if got != tc.wantErrn {
				t.Errorf("user %s (gid %d) connecting to a 0660 socket of group %d: %q, want %q\n%s",
					u.Name, u.GID, tc.sockGID, got, tc.wantErrn, out)
			}
		})
	}
}

const connectEnv = "MEMWHO_TEST_CONNECT"

// TestSocketConnectHelper runs in the child of TestSocketOtherUser, as
// the other user: it connects to the socket and prints the outcome.
func TestSocketConnectHelper(t *testing.T) {
	path := os.Getenv(connectEnv)
	if path == "" {
		t.Skip("run by TestSocketOtherUser")
	}
	c, err := net.Dial("unix", path)
	switch {
	case err == nil:
		c.Close()
		fmt.Println("connect: ok")
	case errors.Is(err, syscall.EACCES):
		fmt.Println("connect: EACCES")
	default:
		fmt.Println("connect: " + strconv.Quote(err.Error()))
	}
}
