package engine

import (
	"fmt"
	"sync/atomic"
	"syscall"

	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/sockdiag"
)

// connCounter counts ESTABLISHED TCP sockets per process: one dump of
// the socket inodes per tick, then every live process's fd links, in
// parallel (each worker has its own sockdiag.FDCounter).
type connCounter struct {
	src    *sockdiag.Source
	set    sockdiag.InodeSet
	denied atomic.Int64
}

func newConnCounter(fs *proc.FS) *connCounter {
	return &connCounter{src: sockdiag.NewSource(fs)}
}

// dump refreshes the set of ESTABLISHED sockets.
func (c *connCounter) dump() error {
	c.denied.Store(0)
	return c.src.Established(&c.set)
}

// count counts rc's sockets with w's fd counter.
func (c *connCounter) count(w *worker, rc *record) {
	n, err := w.fdc.Count(rc.pid, &c.set)
	if err == syscall.EACCES || err == syscall.EPERM {
		c.denied.Add(1)
	}
	rc.p.Conns = n
}

func (c *connCounter) close() { c.src.Close() }

// CountConns fills Process.Conns of every process of snap with its
// ESTABLISHED TCP sockets and sets snap.ConnsOK: for a report's one-off
// scan (Options.OneShot), where the engine's own counting (Options.Conns)
// does not run. It returns how many processes' /proc/PID/fd could not be
// read (permission); they count 0.
func CountConns(fs *proc.FS, snap *sample.Snapshot) (denied int, err error) {
	src := sockdiag.NewSource(fs)
	defer src.Close()
	var set sockdiag.InodeSet
	if err := src.Established(&set); err != nil {
		return 0, fmt.Errorf("list TCP sockets: %w", err)
	}
	fc := sockdiag.NewFDCounter(fs)
	for i := range snap.Procs {
		p := &snap.Procs[i]
		n, err := fc.Count(p.PID, &set)
		if err == syscall.EACCES || err == syscall.EPERM {
			denied++
		}
		p.Conns = n
	}
	snap.ConnsOK = true
	return denied, nil
}
