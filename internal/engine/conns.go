package engine

import "errors"

// connCounter counts ESTABLISHED TCP sockets per process.
type connCounter struct{}

func newConnCounter(root string) *connCounter { return &connCounter{} }

func (c *connCounter) dump() error { return errors.New("tcp counting not implemented yet") }

func (c *connCounter) count(pid int) uint32 { return 0 }

func (c *connCounter) close() {}
