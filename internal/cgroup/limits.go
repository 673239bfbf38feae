// Package cgroup reads the memory limits of control groups: which limit
// applies to a process's cgroup, and how much room it leaves. memwho
// record stores them with every row so that leak ranking can say when a
// process would hit its container's limit rather than the host's.
//
// The cgroup file system is read as an untrusted tree: every file is
// opened beneath the root directory given, through package proc's tree
// reader (openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where the
// kernel has it), must be a regular file, and is read only up to a few
// bytes. A --cgroup-root pointing at a directory someone else fills, or
// a symlink planted in it, then yields no limit instead of reading
// another file with the recorder's rights.
package cgroup

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/memwho/memwho/internal/proc"
)

// Limit is a memory limit and the room it leaves, in bytes.
type Limit struct {
	// Limit is the tightest memory limit over a cgroup and its
	// ancestors; 0 when there is none or it is unknown.
	Limit uint64
	// Free is that limit minus the limiting cgroup's usage (0 when the
	// usage is above it).
	Free uint64
}

// Limits finds the memory limit that applies to a cgroup: the tightest
// over the cgroup and its ancestors, measured by the room left (limit
// minus usage). Answers are cached per directory until Reset, so that a
// sample reads each directory once however many processes share it.
type Limits struct {
	fs   *proc.FS // the hierarchy's root; nil: no limits
	v1   bool     // cgroup v1: the memory controller's files, under memory/
	dirs map[string]Limit
	eff  map[string]Limit
	buf  []byte
}

// unlimitedV1 is where cgroup v1 reports "no limit": the largest page
// multiple below 2^63. Anything from 2^62 up is taken as unlimited.
const unlimitedV1 = 1 << 62

// maxFileSize bounds what is read of one limit file: a decimal number
// and a newline.
const maxFileSize = 64

// NewLimits reads limits from the cgroup file system at root (normally
// /sys/fs/cgroup): the unified v2 hierarchy, or the v1 memory controller
// mounted at root/memory. An empty or unreadable root gives no limits.
// Close releases it.
func NewLimits(root string) *Limits {
	c := &Limits{dirs: map[string]Limit{}, eff: map[string]Limit{}, buf: make([]byte, 0, maxFileSize)}
	if root == "" {
		return c
	}
	fs, err := proc.Open(root)
	if err != nil {
		return c
	}
	c.fs = fs
	if _, err := c.fs.ReadFile("memory/memory.limit_in_bytes", c.buf, maxFileSize); err == nil {
		c.v1 = true
	}
	return c
}

// Close releases the root directory.
func (c *Limits) Close() error {
	if c.fs == nil {
		return nil
	}
	return c.fs.Close()
}

// Reset forgets the cached answers: limits and usage change between
// samples.
func (c *Limits) Reset() {
	clear(c.dirs)
	clear(c.eff)
}

// Of returns the effective limit of the cgroup at path (as in
// /proc/PID/cgroup), the zero Limit when there is none.
func (c *Limits) Of(path string) Limit {
	if c.fs == nil || path == "" || !strings.HasPrefix(path, "/") {
		return Limit{}
	}
	if l, ok := c.eff[path]; ok {
		return l
	}
	best := c.own(path)
	if parent := filepath.Dir(path); parent != path {
		if l := c.Of(parent); l.Limit > 0 && (best.Limit == 0 || l.Free < best.Free) {
			best = l
		}
	}
	c.eff[path] = best
	return best
}

// own reads one cgroup directory's limit and usage.
func (c *Limits) own(path string) Limit {
	if l, ok := c.dirs[path]; ok {
		return l
	}
	maxFile, curFile := "memory.max", "memory.current"
	dir := strings.TrimPrefix(filepath.Clean(path), "/")
	if c.v1 {
		maxFile, curFile = "memory.limit_in_bytes", "memory.usage_in_bytes"
		dir = filepath.Join("memory", dir)
	}
	var l Limit
	if limit, ok := c.readUint(filepath.Join(dir, maxFile)); ok && limit < unlimitedV1 {
		if used, ok := c.readUint(filepath.Join(dir, curFile)); ok {
			l.Limit = limit
			if used < limit {
				l.Free = limit - used
			}
		}
	}
	c.dirs[path] = l
	return l
}

// readUint reads a file beneath the root holding one decimal number;
// "max" and errors give false.
func (c *Limits) readUint(name string) (uint64, bool) {
	b, err := c.fs.ReadFile(name, c.buf, maxFileSize)
	c.buf = b[:0]
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	return n, err == nil
}
