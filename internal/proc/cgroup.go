package proc

import "bytes"

// Cgroup reads /proc/PID/cgroup of the open process and returns the path
// CgroupPath picks from it. The result aliases the Reader's buffer and is
// valid until the next read.
func (r *Reader) Cgroup() ([]byte, error) {
	mem, _, err := r.CgroupPaths()
	return mem, err
}

// CgroupPaths reads /proc/PID/cgroup of the open process and returns the
// two paths CgroupPaths picks from it. Both alias the Reader's buffer and
// are valid until the next read.
func (r *Reader) CgroupPaths() (memory, systemd []byte, err error) {
	b, err := r.readTaskFile("cgroup\x00")
	if err != nil {
		return nil, nil, err
	}
	return CgroupPaths(b)
}

// CgroupPath picks the cgroup that governs a process's memory from the
// contents of /proc/PID/cgroup ("hierarchy-ID:controllers:path" lines):
// the cgroup v1 memory controller's path when there is one (a hybrid host
// enforces memory limits there), else the unified v2 hierarchy's
// ("0::path"), else systemd's named v1 hierarchy. It returns ErrMalformed
// when no line qualifies.
func CgroupPath(b []byte) ([]byte, error) {
	mem, _, err := CgroupPaths(b)
	return mem, err
}

// CgroupPaths returns the path CgroupPath picks (memory) and the path in
// the hierarchy systemd manages (systemd): the unified v2 hierarchy's
// unless it is the root, else the named v1 "name=systemd" hierarchy's,
// else the unified one's, else memory. Units and containers are named by
// systemd's hierarchy: on a v1 host the memory controller can hold a
// process in a cgroup of its own ("/" when the unit has no memory
// accounting) that says nothing of its unit. A legacy v1 host lists the
// unused unified hierarchy as "0::/"; a hybrid one has the same path in
// both. On a pure v2 host both results are the "0::" path.
func CgroupPaths(b []byte) (memory, systemd []byte, err error) {
	// The file must end with a complete line; a cut path would name
	// another cgroup.
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return nil, nil, ErrMalformed
	}
	var unified, named []byte
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		line := b[:nl]
		b = b[nl+1:]
		c1 := bytes.IndexByte(line, ':')
		if c1 < 0 {
			continue
		}
		c2 := bytes.IndexByte(line[c1+1:], ':')
		if c2 < 0 {
			continue
		}
		ctrl := line[c1+1 : c1+1+c2]
		path := line[c1+2+c2:]
		switch {
		case len(ctrl) == 0 && string(line[:c1]) == "0":
			unified = path
		case string(ctrl) == "name=systemd":
			named = path
		case hasController(ctrl, "memory"):
			if memory == nil {
				memory = path
			}
		}
	}
	switch {
	case unified != nil && string(unified) != "/":
		systemd = unified
	case named != nil:
		systemd = named
	case unified != nil:
		systemd = unified
	default:
		systemd = memory
	}
	if memory == nil {
		memory = unified
	}
	if memory == nil {
		memory = named
	}
	if memory == nil {
		return nil, nil, ErrMalformed
	}
	return memory, systemd, nil
}

func hasController(list []byte, name string) bool {
	for len(list) > 0 {
		i := bytes.IndexByte(list, ',')
		if i < 0 {
			i = len(list)
		}
		if string(list[:i]) == name {
			return true
		}
		if i == len(list) {
			break
		}
		list = list[i+1:]
	}
	return false
}
