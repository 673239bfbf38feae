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

	"github.com/memwho/memwho/internal/proc"
)

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

// Scannable decides whether the procfs tree fs may be read with
// privilege, and why not. Only the root of a real procfs instance
// qualifies (a directory the user filled, or a directory inside procfs
// such as /proc/self/fd, could hold links to files the user may not
// read), and only when its mount hides no process from the user: under
// hidepid= the user sees what the mount lets them see, and
// CAP_SYS_PTRACE would show them the rest. A tree that does not qualify
// is read with the user's own rights.
func Scannable(fs *proc.FS) (ok bool, why string) {
	if !fs.IsProcfsRoot() {
		return false, fs.Root() + " is not the root of a procfs mount; it is read with your own permissions"
	}
	m, err := mountOf(fs.Fd())
	if err != nil {
		return false, "the options of the procfs mount at " + fs.Root() + " are unknown (" + err.Error() + "); it is read with your own permissions"
	}
	if m.Hides() && !inGroup(m.GID) {
		return false, fmt.Sprintf("the procfs mount at %s has hidepid=%s; it is read with your own permissions", fs.Root(), m.Hidepid)
	}
	return true, ""
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

// mountOf finds the procfs mount the directory fd lies on in
// /proc/self/mountinfo (by device number: every procfs instance has its
// own) and returns its super-block options.
func mountOf(fd int) (ProcMount, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
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
