package engine

import (
	"fmt"
	"syscall"

	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/sockdiag"
)

// connCounter counts ESTABLISHED TCP sockets per process (Options.Conns)
// without reading every process's /proc/PID/fd every tick: that read,
// one readlink per descriptor, was most of a tick's cost.
//
// Each tick lists the ESTABLISHED sockets (one sock_diag dump, cheap)
// and counts, per process, the socket inodes its fd table held when it
// was last read. A process's count can only go wrong if its fd table
// changed since then, and a socket it gained then, if ESTABLISHED, shows
// up in the dump as an inode no known fd table holds. So a tick reads
// the fd tables of:
//
//  1. new processes (and reused PIDs), and every process at least every
//     FullEvery ticks, spread by PID as the forced page-table walks are
//     (or all of them after ForceFull), except that a process that held
//     no socket at all and whose descriptor count did not move skips
//     up to noSocketSkips of these reads;
//  2. while unknown ESTABLISHED inodes remain: the processes whose
//     /proc/PID/fd size (its descriptor count, Linux 6.2+; one statx
//     each) moved;
//  3. while some still remain: the processes that held an ESTABLISHED
//     socket at their last read, where a server closes one connection
//     and accepts another between two ticks with its descriptor count
//     unchanged.
//
// What remains unknown is remembered as held by no readable process
// (kernel sockets, processes outside PIDs, other users' processes
// without the capabilities) and not searched for again while it stays
// ESTABLISHED.
//
// The error this makes, and its bound: a process that gains an
// ESTABLISHED socket while its descriptor count stays the same and it
// held none before, or receives one that another process already
// holds (SCM_RIGHTS, pidfd_getfd), or closes its copy of a socket
// another process keeps open, counts one too few or too many until its
// fd table is read again: within FullEvery ticks (the same window as
// the stale memory figures), or (noSocketSkips+1)*FullEvery for a
// process that held no socket at all before. A count is never off for a socket opened
// and closed between two ticks, nor for one that left ESTABLISHED: the
// dump decides which known sockets count. TestConnsIncremental checks
// the cases against a full read.
type connCounter struct {
	src *sockdiag.Source
	set sockdiag.InodeSet // ESTABLISHED now
	// found holds the inodes of set some record's fd table holds;
	// orphans those no readable process was found to hold (next is
	// the set being built for the next tick).
	found, orphans, next sockdiag.InodeSet
	todo                 []int32
	read                 int // fd tables read this tick
}

// connState is what a record knows of its process's sockets.
type connState struct {
	socks  []uint64 // socket inodes at the last read of /proc/PID/fd
	size   uint64   // /proc/PID/fd's size just before that read
	due    uint64   // tick by which the fd table is read again
	known  bool     // the fd table was read at least once
	denied bool     // the last read was refused
	est    bool     // held an ESTABLISHED socket at the last count
	fresh  bool     // read this tick
	skips  uint8    // periodic reads skipped in a row (noSocketSkips)
}

// noSocketSkips is how many periodic reads in a row a process without
// sockets and with an unchanged descriptor count skips: its fd table is
// read at least every (noSocketSkips+1)*FullEvery ticks.
const noSocketSkips = 3

func newConnCounter(fs *proc.FS) *connCounter {
	return &connCounter{src: sockdiag.NewSource(fs)}
}

// dump refreshes the set of ESTABLISHED sockets.
func (c *connCounter) dump() error {
	return c.src.Established(&c.set)
}

// tick counts every live process's ESTABLISHED sockets into rc.p.Conns
// after a dump, reading the fd tables that can have changed (see
// connCounter). It returns how many processes' fd tables could not be
// read (permission) and how many were read.
func (c *connCounter) tick(e *Engine, tick uint64, full bool) (denied, read int) {
	c.read = 0
	k := uint64(e.opt.FullEvery)
	c.todo = c.todo[:0]
	for _, i := range e.work {
		rc := &e.recs[i]
		rc.conn.fresh = false
		if rc.st > stMalformed {
			continue
		}
		cs := &rc.conn
		if !cs.known || full {
			c.todo = append(c.todo, i)
			continue
		}
		if tick < cs.due {
			continue
		}
		if len(cs.socks) == 0 && !cs.denied && cs.skips < noSocketSkips {
			// A process that held no socket at all and whose
			// descriptor count did not move is most likely still
			// without: one statx instead of reading its fd table.
			if n, err := e.workers[0].fdc.Size(rc.pid); err == nil && n == cs.size {
				cs.skips++
				cs.due = tick + k
				continue
			}
		}
		c.todo = append(c.todo, i)
	}
	c.readAll(e, tick, k)
	if c.attribute(e) > 0 {
		// Stage 2: descriptor counts that moved.
		c.todo = c.todo[:0]
		for _, i := range e.work {
			if rc := &e.recs[i]; rc.st <= stMalformed && !rc.conn.fresh && !rc.conn.denied {
				c.todo = append(c.todo, i)
			}
		}
		e.parallel(c.todo, func(w *worker, rc *record) {
			if n, err := w.fdc.Size(rc.pid); err == nil && n != rc.conn.size {
				rc.conn.fresh = true // marks it for reading below
			}
		})
		c.todo = c.todo[:0]
		for _, i := range e.work {
			if rc := &e.recs[i]; rc.conn.fresh {
				rc.conn.fresh = false
				c.todo = append(c.todo, i)
			}
		}
		c.readAll(e, tick, k)
		if c.attribute(e) > 0 {
			// Stage 3: the processes that held connections.
			c.todo = c.todo[:0]
			for _, i := range e.work {
				if rc := &e.recs[i]; rc.st <= stMalformed && !rc.conn.fresh && rc.conn.est && !rc.conn.denied {
					c.todo = append(c.todo, i)
				}
			}
			c.readAll(e, tick, k)
			c.attribute(e)
		}
	}
	// What no fd table holds stays unsearched while it is ESTABLISHED.
	c.next.Reset()
	c.set.Range(func(ino uint64) bool {
		if !c.found.Has(ino) {
			c.next.Add(ino)
		}
		return true
	})
	c.orphans, c.next = c.next, c.orphans
	for _, i := range e.work {
		rc := &e.recs[i]
		if rc.st > stMalformed {
			continue
		}
		var n uint32
		for _, ino := range rc.conn.socks {
			if c.set.Has(ino) {
				n++
			}
		}
		rc.p.Conns = n
		rc.conn.est = n > 0
		if rc.conn.denied {
			denied++
		}
	}
	return denied, c.read
}

// readAll reads the fd tables of the records c.todo, in parallel.
func (c *connCounter) readAll(e *Engine, tick, k uint64) {
	if len(c.todo) == 0 {
		return
	}
	c.read += len(c.todo)
	e.parallel(c.todo, func(w *worker, rc *record) {
		cs := &rc.conn
		// The size first: a change between the two reads shows as a
		// moved size next tick, never as a missed one.
		size, _ := w.fdc.Size(rc.pid)
		var err error
		cs.socks, err = w.fdc.Sockets(rc.pid, cs.socks[:0])
		cs.size = size
		cs.denied = err == syscall.EACCES || err == syscall.EPERM
		cs.fresh = true
		cs.skips = 0
		if proc.Exhausted(err) {
			// Out of descriptors or memory: the fd table must not
			// read as empty, the process shown with 0 connections,
			// not counted unreadable, and then skipped as socketless
			// for up to noSocketSkips × FullEvery ticks. It counts
			// unreadable now, and is read again next tick.
			cs.denied = true
			cs.known = false
			return
		}
		if !cs.known {
			// Spread the periodic reads as the forced walks are.
			cs.due = tick + k - uint64(rc.pid)%k
		} else {
			cs.due = tick + k
		}
		cs.known = true
	})
}

// attribute fills c.found with the ESTABLISHED inodes some record holds
// and returns how many ESTABLISHED inodes are neither found nor known
// orphans.
func (c *connCounter) attribute(e *Engine) int {
	c.found.Reset()
	for _, i := range e.work {
		rc := &e.recs[i]
		if rc.st > stMalformed {
			continue
		}
		for _, ino := range rc.conn.socks {
			if c.set.Has(ino) {
				c.found.Add(ino)
			}
		}
	}
	unknown := 0
	c.set.Range(func(ino uint64) bool {
		if !c.found.Has(ino) && !c.orphans.Has(ino) {
			unknown++
		}
		return true
	})
	return unknown
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
		if err == syscall.EACCES || err == syscall.EPERM || proc.Exhausted(err) {
			// Out of descriptors or memory is as
			// unreadable as refused: counted, never a silent 0.
			denied++
		}
		p.Conns = n
	}
	snap.ConnsOK = true
	return denied, nil
}
