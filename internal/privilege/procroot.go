package privilege

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ProcRoot is a procfs tree (normally /proc) the user asked memwho to
// scan, opened with the user's identity.
type ProcRoot struct {
	// Path is what the scanner should open. For a tree that may be
	// scanned with privilege it is /proc/self/fd/N, which reopens the
	// very directory the user was allowed to open (no symlink swapped in
	// between); otherwise it is the path the user gave.
	Path string
	// Privileged reports whether the scan may keep its capabilities.
	// It is false when the process is not elevated, and when the tree
	// is not a procfs (a directory anybody can fill with symlinks to
	// files the user cannot read) or is a procfs mounted with hidepid=
	// that hides processes from this user: there the user sees what the
	// mount lets them see, and Why says so.
	Privileged bool
	// Why explains a false Privileged for an elevated process, for a
	// notice or a test; "" otherwise.
	Why string
	// Mount describes the procfs mount options; zero for other trees.
	Mount ProcMount

	f *os.File
}

// ProcMount holds the options of a procfs mount that decide what an
// unprivileged user sees (proc(5)).
type ProcMount struct {
	// Hidepid is the hidepid= option as the kernel prints it: "" or
	// "off", "noaccess" (1), "invisible" (2) or "ptraceable" (4).
	Hidepid string
	// GID is the gid= option (members see everything), -1 when unset.
	GID int
	// Subset is the subset= option ("pid": only process directories).
	Subset string
}

// Hides reports whether the mount hides some processes (or their files)
// from users who are not in its gid= group.
func (m ProcMount) Hides() bool {
	return m.Hidepid != "" && m.Hidepid != "off" && m.Hidepid != "0"
}

// OpenProcRoot opens dir for a scan. When the process is elevated the
// directory is opened with the user's identity (see [OpenFile]): a
// directory the user cannot open is an error, as for any other path. The
// caller keeps the ProcRoot open until the scanner has opened Path, then
// closes it.
func OpenProcRoot(dir string) (*ProcRoot, error) {
	f, err := OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	r := &ProcRoot{Path: dir, f: f}
	if !Elevated() {
		return r, nil
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &sfs); err != nil {
		f.Close()
		return nil, fmt.Errorf("statfs %s: %w", dir, err)
	}
	if sfs.Type != unix.PROC_SUPER_MAGIC {
		r.Why = dir + " is not a procfs mount; it is read with your own permissions"
		return r, nil
	}
	m, err := mountOf(f)
	if err != nil {
		r.Why = "the options of the procfs mount at " + dir + " are unknown (" + err.Error() + "); it is read with your own permissions"
		return r, nil
	}
	r.Mount = m
	if m.Hides() && !inGroup(m.GID) {
		r.Why = fmt.Sprintf("the procfs mount at %s has hidepid=%s; it is read with your own permissions", dir, m.Hidepid)
		return r, nil
	}
	r.Privileged = true
	r.Path = "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	return r, nil
}

// Close closes the directory opened by OpenProcRoot.
func (r *ProcRoot) Close() error {
	if r == nil || r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// inGroup reports whether the real user is a member of gid.
func inGroup(gid int) bool {
	if gid < 0 {
		return false
	}
	if os.Getgid() == gid {
		return true
	}
	groups, err := os.Getgroups()
	return err == nil && slices.Contains(groups, gid)
}

// mountOf finds the procfs mount f lies on in /proc/self/mountinfo (by
// device number: every procfs instance has its own) and returns its
// super-block options.
func mountOf(f *os.File) (ProcMount, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return ProcMount{}, fmt.Errorf("stat: %w", err)
	}
	dev := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ProcMount{}, err
	}
	defer mi.Close()
	sc := bufio.NewScanner(mi)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if m, ok := parseMountinfoLine(sc.Text(), dev); ok {
			return m, nil
		}
	}
	if err := sc.Err(); err != nil {
		return ProcMount{}, fmt.Errorf("read mountinfo: %w", err)
	}
	return ProcMount{}, errors.New("device " + dev + " not in /proc/self/mountinfo")
}

// parseMountinfoLine parses one /proc/self/mountinfo line (proc(5)):
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - proc proc rw,hidepid=invisible
//
// and returns the procfs options when its device is dev.
func parseMountinfoLine(line, dev string) (ProcMount, bool) {
	fields := strings.Fields(line)
	if len(fields) < 3 || fields[2] != dev {
		return ProcMount{}, false
	}
	sep := slices.Index(fields, "-")
	if sep < 0 || len(fields) < sep+4 || fields[sep+1] != "proc" {
		return ProcMount{}, false
	}
	m := ProcMount{GID: -1}
	for opt := range strings.SplitSeq(fields[sep+3], ",") {
		k, v, _ := strings.Cut(opt, "=")
		switch k {
		case "hidepid":
			m.Hidepid = v
		case "gid":
			if n, err := strconv.Atoi(v); err == nil {
				m.GID = n
			}
		case "subset":
			m.Subset = v
		}
	}
	return m, true
}
