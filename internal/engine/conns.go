package engine

import (
	"sync/atomic"
	"syscall"

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

func newConnCounter(root string) *connCounter {
	return &connCounter{src: sockdiag.NewSource(root)}
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
