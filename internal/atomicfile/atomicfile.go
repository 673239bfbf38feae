// Package atomicfile creates the files memwho writes (exports, profiles,
// spooled samples) so that a file appears under its name only when it is
// complete and on disk, and so that nobody can make memwho write through
// a link they planted.
//
// [Create] opens the target's directory once and makes a new temporary
// file in it with O_CREAT|O_EXCL|O_NOFOLLOW and an unpredictable name
// (".NAME.tmp-" and 16 random hex digits): a symlink or any file planted
// at that name makes the create fail instead of being followed or
// truncated. [File.Commit] checks that every write succeeded, fsyncs the
// file, renames it over the target relative to the directory opened at
// the start (rename replaces a symlink at the target, it never writes
// through it) and fsyncs the directory. [File.Abort] removes the
// temporary file. Until Commit returns nil the old target, if any, is
// untouched: a full disk or a failed write leaves it as it was.
//
// Why not O_TMPFILE and linkat: linkat cannot replace an existing target
// (a temporary name and a rename are needed anyway), and naming an
// O_TMPFILE needs either AT_EMPTY_PATH (CAP_DAC_READ_SEARCH on the
// kernels memwho supports) or /proc/self/fd, which a process holding
// file capabilities cannot reach once its file-system identity is the
// user's (it is not dumpable, so /proc/self/fd belongs to root).
//
// The package does not decide whose identity creates the file: callers
// that act for a user pass an [OpenFunc] that opens as that user (memwho
// passes privilege.OpenFile), and every later step works on the
// directory descriptor that open returned, so swapping a directory in the
// path afterwards changes nothing.
package atomicfile

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/memwho/memwho/internal/privilege"
)

// OpenFunc opens a path like os.OpenFile. It is how the directory and
// the temporary file are opened, so that a caller can have the kernel
// check them with the user's identity.
type OpenFunc func(name string, flag int, perm os.FileMode) (*os.File, error)

// DefaultPerm is the mode of a new file when Create is given 0: only its
// owner may read what memwho wrote.
const DefaultPerm os.FileMode = 0o600

// tempMarker sits between the target's name and the random suffix of a
// temporary file's name (see IsTemp).
const tempMarker = ".tmp-"

// File is a file being written. It is an io.Writer; nothing carries the
// target's name until Commit succeeds. A File is not safe for concurrent
// use.
type File struct {
	f    *os.File
	dir  *os.File
	path string // target as given
	name string // target's base name in dir
	tmp  string // temporary file's base name in dir
	err  error  // first write error
	done bool
}

// Create starts writing path with mode perm (DefaultPerm when 0, reduced
// by the umask), opening with os.OpenFile.
func Create(path string, perm os.FileMode) (*File, error) {
	return CreateWith(path, perm, os.OpenFile)
}

// CreateWith is Create with the directory and the temporary file opened
// through open.
func CreateWith(path string, perm os.FileMode, open OpenFunc) (*File, error) {
	if perm == 0 {
		perm = DefaultPerm
	}
	if path == "" || strings.HasSuffix(path, "/") {
		return nil, &os.PathError{Op: "create", Path: path, Err: errors.New("not a file name")}
	}
	dirName, name := filepath.Split(path)
	if name == "." || name == ".." {
		return nil, &os.PathError{Op: "create", Path: path, Err: errors.New("not a file name")}
	}
	if dirName == "" {
		dirName = "."
	}
	// Errors name the target, as an open of it would: the temporary
	// name is nobody's business, and the user never named the directory.
	dir, err := open(dirName, os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: unwrapPath(err)}
	}
	dfd := int(dir.Fd())
	// A directory at the target would only fail the rename, after all
	// the work: say so now.
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		dir.Close()
		return nil, &os.PathError{Op: "create", Path: path, Err: unix.EISDIR}
	}
	for range 8 {
		tmp := tempName(name)
		// Made and registered under the lock RemoveTemps takes: a
		// process ended by a signal between the two (cli.StopWithin's
		// watchdog, under load) left the file it had just made.
		pending.Lock()
		if pending.removed {
			pending.Unlock()
			dir.Close()
			return nil, &os.PathError{Op: "create", Path: path, Err: errRemoved}
		}
		f, err := open(filepath.Join(dirName, tmp), os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if errors.Is(err, os.ErrExist) {
			pending.Unlock()
			continue // a planted or leftover file: never touch it
		}
		if err != nil {
			pending.Unlock()
			dir.Close()
			return nil, &os.PathError{Op: "open", Path: path, Err: unwrapPath(err)}
		}
		// The temporary file was opened by path; every later step uses
		// dir. Make sure they are the same directory: someone who can
		// rename a directory in the path could have swapped it between
		// the two opens.
		if !sameFile(f, dfd, tmp) {
			pending.Unlock()
			f.Close()
			dir.Close()
			return nil, &os.PathError{Op: "create", Path: path, Err: errors.New("directory changed while the file was created")}
		}
		nf := &File{f: f, dir: dir, path: path, name: name, tmp: tmp}
		if pending.files == nil {
			pending.files = make(map[*File]struct{})
		}
		pending.files[nf] = struct{}{}
		pending.Unlock()
		return nf, nil
	}
	dir.Close()
	return nil, &os.PathError{Op: "create", Path: path, Err: errors.New("no free temporary name")}
}

// pending is every temporary file made and neither committed nor
// aborted, for RemoveTemps. Its lock is held around each unlink and
// rename of one (never around a sync or a write, which can block), so
// that RemoveTemps cannot remove a file Commit is renaming into place.
var pending struct {
	sync.Mutex
	files   map[*File]struct{}
	removed bool // RemoveTemps ran: no file may be made or published
}

var errRemoved = errors.New("temporary files removed: the process is ending")

// RemoveTemps removes every temporary file not yet committed or
// aborted, and makes later Creates and Commits fail. It is for a
// process about to die by a signal (cli.InterruptibleOnce): a
// second SIGINT, SIGTERM or SIGHUP ends a run whose first could not
// stop it, and without this left its temporary files behind. It may
// run while another goroutine writes, commits or aborts a file.
func RemoveTemps() {
	pending.Lock()
	defer pending.Unlock()
	pending.removed = true
	for f := range pending.files {
		unix.Unlinkat(int(f.dir.Fd()), f.tmp, 0)
		delete(pending.files, f)
	}
}

// unlinkTemp removes f's temporary file, unless RemoveTemps did, and
// forgets it.
func (f *File) unlinkTemp() {
	pending.Lock()
	defer pending.Unlock()
	if _, ok := pending.files[f]; ok {
		unix.Unlinkat(int(f.dir.Fd()), f.tmp, 0)
		delete(pending.files, f)
	}
}

// tempName returns ".NAME.tmp-" and 16 random hex digits, NAME shortened
// so that the whole fits in a file name (255 bytes).
func tempName(name string) string {
	// The runtime's ChaCha8 generator, seeded from the kernel at start:
	// names no other process can predict, without linking crypto/rand
	// (about 100 KB of code, and its initialisers, in the capability
	// binary). O_EXCL and the retry make a guessed name harmless anyway.
	if len(name) > 200 {
		name = name[:200]
	}
	var r [8]byte
	binary.LittleEndian.PutUint64(r[:], rand.Uint64())
	return "." + name + tempMarker + hex.EncodeToString(r[:])
}

// IsTemp reports whether name (a base name) is one Create gives its
// temporary files, so that a directory's owner can remove those a crash
// left behind.
func IsTemp(name string) bool {
	i := strings.LastIndex(name, tempMarker)
	if !strings.HasPrefix(name, ".") || i < 1 || len(name)-i-len(tempMarker) != 16 {
		return false
	}
	_, err := hex.DecodeString(name[i+len(tempMarker):])
	return err == nil
}

func sameFile(f *os.File, dfd int, name string) bool {
	var a, b unix.Stat_t
	if unix.Fstat(int(f.Fd()), &a) != nil || unix.Fstatat(dfd, name, &b, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// Name returns the target path as given to Create.
func (f *File) Name() string { return f.path }

// Write writes p to the temporary file. The first error is kept: later
// writes return it, and Commit refuses to publish the file.
func (f *File) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.done {
		return 0, os.ErrClosed
	}
	n, err := f.f.Write(p)
	if err != nil {
		f.err = fmt.Errorf("write %s: %w", f.path, unwrapPath(err))
	}
	return n, f.err
}

// Commit publishes the file under its name: it fails if any write
// failed, and otherwise syncs the data, renames the temporary file over
// the target (replacing a symlink there, never following it) and syncs
// the directory. On failure the temporary file is removed and the old
// target is left as it was (unless only the final directory sync
// failed: the new file is then in place but perhaps not yet durable).
// Commit after Commit or Abort returns os.ErrClosed.
func (f *File) Commit() error {
	if f.done {
		return os.ErrClosed
	}
	err := f.err
	if err == nil {
		// The rename must not reach the disk before the data does.
		if serr := f.f.Sync(); serr != nil {
			err = fmt.Errorf("sync %s: %w", f.path, unwrapPath(serr))
		}
	}
	if cerr := f.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close %s: %w", f.path, unwrapPath(cerr))
	}
	dfd := int(f.dir.Fd())
	if err == nil {
		pending.Lock()
		if _, ok := pending.files[f]; !ok {
			err = &os.PathError{Op: "rename", Path: f.path, Err: errRemoved}
		} else if rerr := unix.Renameat(dfd, f.tmp, dfd, f.name); rerr != nil {
			err = &os.PathError{Op: "rename", Path: f.path, Err: rerr}
		} else {
			delete(pending.files, f)
		}
		pending.Unlock()
	}
	if err != nil {
		f.unlinkTemp()
		f.dir.Close()
		f.done = true
		return err
	}
	f.done = true
	// Make the rename itself durable. Some file systems (FUSE, some
	// network ones) cannot sync a directory; that is not a write error.
	if serr := f.dir.Sync(); serr != nil && !errors.Is(serr, unix.EINVAL) && !errors.Is(serr, unix.ENOTSUP) {
		f.dir.Close()
		return fmt.Errorf("sync directory of %s: %w", f.path, unwrapPath(serr))
	}
	return f.dir.Close()
}

// Abort removes the temporary file and leaves the target alone. It is a
// no-op after Commit or Abort, so that `defer f.Abort()` is always safe.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.f.Close()
	f.unlinkTemp()
	f.dir.Close()
}

// unwrapPath drops an *os.PathError's path (it would name the temporary
// file, which the user never asked for).
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// CreateAsUser starts a file the user asked memwho to write: a new
// temporary file beside path, mode 0600, renamed over path by Commit; the
// caller must Commit or Abort it. When memwho runs with more privilege
// than its user, the file is opened with the user's identity
// (privilege.OpenFile): it succeeds exactly when the user could have
// created it, and the new file is the user's.
func CreateAsUser(path string) (*File, error) {
	return CreateWith(path, 0, privilege.OpenFile)
}
