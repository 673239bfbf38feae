package proc

import "bytes"

// Cgroup reads /proc/PID/cgroup of the open process and returns the path
// CgroupPath picks from it. The result aliases the Reader's buffer and is
// valid until the next read.
func (r *Reader) Cgroup() ([]byte, error) {
	b, err := r.readTaskFile("cgroup\x00")
	if err != nil {
		return nil, err
	}
	return CgroupPath(b)
}

// CgroupPath picks the cgroup that governs a process's memory from the
// contents of /proc/PID/cgroup ("hierarchy-ID:controllers:path" lines):
// the cgroup v1 memory controller's path when there is one (a hybrid host
// enforces memory limits there), else the unified v2 hierarchy's
// ("0::path"), else systemd's named v1 hierarchy. It returns ErrMalformed
// when no line qualifies.
func CgroupPath(b []byte) ([]byte, error) {
	// The file must end with a complete line; a cut path would name
	// another cgroup.
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return nil, ErrMalformed
	}
	var unified, systemd []byte
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
			systemd = path
		case hasController(ctrl, "memory"):
			return path, nil
		}
	}
	if unified != nil {
		return unified, nil
	}
	if systemd != nil {
		return systemd, nil
	}
	return nil, ErrMalformed
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
