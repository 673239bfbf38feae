package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultSocket is where `memwho serve` listens when given neither a
// socket nor a TCP address: the directory systemd creates for a unit with
// RuntimeDirectory=memwho.
const DefaultSocket = "/run/memwho/memwho.sock"

// SocketOptions says who may connect to a socket [ListenUnix] creates.
type SocketOptions struct {
	// Mode is the permission bits of the socket file. Connecting needs
	// write permission on it, so 0660 admits the group and 0600 only the
	// owner.
	Mode fs.FileMode
	// GID is the group of the socket, and of its directory when
	// ListenUnix creates it; -1 keeps the process's effective group.
	GID int
}

// maxSocketPath is the longest path sockaddr_un holds (108 bytes with
// the terminating NUL).
const maxSocketPath = len(unix.RawSockaddrUnix{}.Path) - 1

// ListenUnix creates a unix socket at path and listens on it. The socket
// file carries the figures' access control, so it is created safely:
//
//   - the directory holding it is created (mode 0750, group opt.GID) when
//     missing, and must otherwise be a real directory (never a symlink)
//     owned by root or by this process's user, writable by nobody else:
//     whoever can write it could replace the socket with their own;
//   - the directories above it must be owned by root or this user and
//     not writable by others, unless sticky (/tmp): the path that is
//     checked is then the path that is bound;
//   - a socket already at path that nobody accepts on (a previous run
//     that was killed) is removed; a live socket, or any other kind of
//     file, is left alone and reported;
//   - bind(2) creates the file under a umask of 0177, so that it is
//     never more open than 0600 before its group and mode are set.
//
// Abstract sockets (a name starting with @) are refused: they have no
// file permissions, so every process in the network namespace could
// connect. Closing the listener removes the socket file.
func ListenUnix(path string, opt SocketOptions) (*net.UnixListener, error) {
	if path == "" || path[0] == '@' {
		return nil, fmt.Errorf("%q: not a file path (abstract sockets have no permissions)", path)
	}
	if opt.Mode&^0o777 != 0 || opt.Mode&0o007 != 0 {
		return nil, fmt.Errorf("socket mode %#o: only owner and group bits are allowed", opt.Mode)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	dir, name := filepath.Split(abs)
	dir = filepath.Clean(dir)
	if name == "" || dir == "/" {
		return nil, fmt.Errorf("%s: the socket needs a directory of its own, not /", path)
	}
	// Resolve the ancestors once and bind the resolved path: a symlink
	// above the socket's directory (/var/run -> /run) is fine when it is
	// root's, and checking one path but binding another would race.
	parent, err := filepath.EvalSymlinks(filepath.Dir(dir))
	if err != nil {
		return nil, err
	}
	if err := checkAncestors(parent); err != nil {
		return nil, err
	}
	dir = filepath.Join(parent, filepath.Base(dir))
	sock := filepath.Join(dir, name)
	if len(sock) > maxSocketPath {
		return nil, fmt.Errorf("%s: longer than the %d bytes a unix socket path may have", sock, maxSocketPath)
	}
	if err := socketDir(dir, opt.GID); err != nil {
		return nil, err
	}
	if err := removeStale(sock); err != nil {
		return nil, err
	}

	old := unix.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*net.UnixListener, error) {
		ln.Close() // removes the file
		return nil, err
	}
	// Group first, then mode: the other order would open the socket to
	// the process's own group for a moment.
	if opt.GID >= 0 && opt.GID != os.Getegid() {
		if err := os.Lchown(sock, -1, opt.GID); err != nil {
			return fail(fmt.Errorf("give %s to group %d: %w (the process must be a member of the group)", sock, opt.GID, unwrapPathErr(err)))
		}
	}
	if err := os.Chmod(sock, opt.Mode); err != nil {
		return fail(err)
	}
	// The directory is ours alone, so this is what we made; check it
	// anyway, since access control rests on it.
	st, err := lstat(sock)
	if err != nil {
		return fail(err)
	}
	wantGID := opt.GID
	if wantGID < 0 {
		wantGID = os.Getegid()
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK || fs.FileMode(st.Mode&0o7777) != opt.Mode || int(st.Uid) != os.Geteuid() || int(st.Gid) != wantGID {
		return fail(fmt.Errorf("%s: after creation it is mode %#o uid %d gid %d, want a socket of mode %#o uid %d gid %d",
			sock, st.Mode&0o7777, st.Uid, st.Gid, opt.Mode, os.Geteuid(), wantGID))
	}
	return ln, nil
}

// checkAncestors refuses a resolved directory path if anyone but root or
// this user could rename or replace one of its components.
func checkAncestors(dir string) error {
	euid := uint32(os.Geteuid())
	for p := dir; ; p = filepath.Dir(p) {
		st, err := lstat(p)
		if err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return fmt.Errorf("%s: not a directory", p)
		}
		if st.Uid != 0 && st.Uid != euid {
			return fmt.Errorf("%s: owned by uid %d, neither root nor this user (uid %d): its owner could replace the socket's directory", p, st.Uid, euid)
		}
		if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
			return fmt.Errorf("%s: writable by group or others (mode %#o): they could replace the socket's directory", p, st.Mode&0o7777)
		}
		if p == "/" {
			return nil
		}
	}
}

// socketDir creates dir (0750, group gid) or checks the one there. It
// works on a descriptor opened with O_NOFOLLOW, so that a symlink at dir
// is refused rather than followed.
func socketDir(dir string, gid int) error {
	created := false
	err := unix.Mkdir(dir, 0o700)
	switch {
	case err == nil:
		created = true
	case errors.Is(err, unix.EEXIST):
	default:
		return &fs.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			if st, lerr := lstat(dir); lerr == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return fmt.Errorf("%s: is a symlink; the socket's directory must be a real directory", dir)
			}
			return fmt.Errorf("%s: not a directory", dir)
		}
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	if created {
		// Group before mode, as for the socket.
		if gid >= 0 {
			if err := unix.Fchown(fd, -1, gid); err != nil {
				return fmt.Errorf("give %s to group %d: %w (the process must be a member of the group)", dir, gid, err)
			}
		}
		if err := unix.Fchmod(fd, 0o750); err != nil {
			return &fs.PathError{Op: "chmod", Path: dir, Err: err}
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: dir, Err: err}
	}
	if euid := uint32(os.Geteuid()); st.Uid != 0 && st.Uid != euid {
		return fmt.Errorf("%s: owned by uid %d, neither root nor this user (uid %d): its owner could replace the socket", dir, st.Uid, euid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("%s: writable by group or others (mode %#o): they could replace the socket; use a directory only its owner writes, such as /run/memwho", dir, st.Mode&0o7777)
	}
	return nil
}

// removeStale clears the way for bind: nothing at sock, or a socket
// nobody accepts on, which it removes. Anything else is an error, so
// that a mistyped --socket never deletes a file.
func removeStale(sock string) error {
	st, err := lstat(sock)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fmt.Errorf("%s: exists and is %s, not a socket; memwho removes only a stale socket", sock, fileKind(st.Mode))
	}
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("%s: another process is listening on it", sock)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%s: exists and cannot tell whether it is in use: %w", sock, err)
	}
	// The directory is writable only by us and root (socketDir), so the
	// file checked above is the one removed.
	if err := os.Remove(sock); err != nil {
		return err
	}
	return nil
}

func lstat(path string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return st, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return st, nil
}

func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	}
	return "not a socket"
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
