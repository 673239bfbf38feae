package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Caps on TmpfsMounts: a host with thousands of containers has thousands
// of mounts, and the ledger lists tmpfs mounts for a person to read.
const (
	// MaxTmpfsMounts is the most tmpfs mounts TmpfsMounts returns.
	MaxTmpfsMounts = 256
	// maxMountinfo bounds the mountinfo read, in bytes.
	maxMountinfo = 8 << 20
)

// TmpfsMounts returns the mount points of the tmpfs mounts in the mount
// namespace of this process, as mountinfo of the tree lists them (the
// escapes \040 and the like decoded: a name may hold any byte but NUL
// and '/', and renderers must sanitise it), at most MaxTmpfsMounts, and
// how many more there were. On the kernel's procfs it reads this
// process's PID/mountinfo (self is a symbolic link, which the tree's
// rules do not follow); on any other tree self/mountinfo.
func TmpfsMounts(fs *FS) (mounts []string, more int, err error) {
	name := "self/mountinfo"
	if fs.IsProcfsRoot() {
		name = strconv.Itoa(os.Getpid()) + "/mountinfo"
	}
	b, err := fs.ReadFile(name, nil, maxMountinfo)
	if err != nil {
		return nil, 0, err
	}
	mounts, more = ParseTmpfsMounts(b, MaxTmpfsMounts)
	return mounts, more, nil
}

// ParseTmpfsMounts returns the decoded mount points of the lines of a
// mountinfo file whose file system type is tmpfs, at most max of them,
// and how many more there were. Lines that are not mountinfo lines are
// skipped.
//
// A line is "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] -
// FSTYPE SOURCE SUPEROPTIONS" (proc(5)); spaces, tabs, newlines and
// backslashes in names are written as \ooo octal escapes.
func ParseTmpfsMounts(b []byte, max int) (mounts []string, more int) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		f := bytes.Fields(line)
		if len(f) < 10 {
			continue
		}
		sep := -1
		for i := 6; i < len(f); i++ {
			if len(f[i]) == 1 && f[i][0] == '-' {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) || string(f[sep+1]) != "tmpfs" {
			continue
		}
		if len(mounts) >= max {
			more++
			continue
		}
		mounts = append(mounts, unescapeOctal(f[4]))
	}
	return mounts, more
}

// unescapeOctal decodes the kernel's \ooo escapes (seq_file's
// mangle_path); anything else is kept as it is.
func unescapeOctal(s []byte) string {
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s)
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			v := (s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0')
			out = append(out, v)
			i += 3
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

var errNotTmpfs = errors.New("not a tmpfs")

// TmpfsUsed returns the bytes a tmpfs mount holds: (blocks - free
// blocks) × block size of statfs(2) on path, with the caller's rights.
// A tmpfs mounted without a size limit (size=0) reports no blocks: 0.
// It is an error when path is not (or no longer) a tmpfs: a mount point
// can change between mountinfo and statfs.
//
// The path is resolved without following a symbolic link: a user who
// may rename a directory above a mount point (the mount moves with it)
// could plant a link in its place, to have another tmpfs's figure shown
// under this name, or a lookup sent into a FUSE mount of theirs that
// never answers.
func TmpfsUsed(path string) (uint64, error) {
	var st unix.Statfs_t
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | unix.O_DIRECTORY,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return 0, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	err = unix.Fstatfs(fd, &st)
	unix.Close(fd)
	if err != nil {
		return 0, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	if st.Type != unix.TMPFS_MAGIC {
		return 0, &os.PathError{Op: "statfs", Path: path, Err: errNotTmpfs}
	}
	if st.Blocks < st.Bfree || st.Bsize <= 0 {
		return 0, &os.PathError{Op: "statfs", Path: path, Err: ErrMalformed}
	}
	used, bsize := st.Blocks-st.Bfree, uint64(st.Bsize)
	if used > MaxBytes/bsize {
		return MaxBytes, nil
	}
	return used * bsize, nil
}
