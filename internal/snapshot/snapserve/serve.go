// Package snapserve serves the agent's latest snapshot to memwho clients
// over a listener (a unix socket whose mode and group decide who may
// connect: agent.ListenUnix), in the protocol of docs/snapshot.md that
// snapshot.Fetch speaks.
//
// It is apart from package snapshot so that the client, linked into the
// command users run, does not pull in package net.
package snapserve

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
)

// Defaults for Server.
const (
	DefaultMaxConns = 8
	DefaultTimeout  = 2 * time.Second
)

// Latest returns the snapshot to serve and when its figures were taken,
// or false when there is none yet. The snapshot must not change until
// Latest returns another (a different pointer, Time or taken): the
// server encodes it once, when it first sees it, and may do so while
// the caller goes on.
type Latest func() (snap *sample.Snapshot, taken time.Time, ok bool)

// Server answers every connection with the encoding of the latest
// snapshot: the one Publish was last given or, when Latest is set, the
// one Latest returns.
type Server struct {
	// Latest, when set, is asked for the snapshot at every connection;
	// nil serves what Publish was given.
	Latest Latest
	// MaxConns bounds the connections served at once (DefaultMaxConns
	// when 0); others wait in the listen backlog.
	MaxConns int
	// Timeout bounds reading a client's request, and then writing the
	// answer (DefaultTimeout when 0): a client that sends nothing or
	// does not read holds its slot, and nothing else, that long.
	Timeout time.Duration
	// Logf, when set, is told what went wrong with a connection or a
	// snapshot.
	Logf func(format string, args ...any)

	mu     sync.Mutex
	cached cacheKey
	valid  bool   // cached and body are set
	body   []byte // cached's encoding (nil: too large), immutable: connections write it unlocked
}

type cacheKey struct {
	snap  *sample.Snapshot
	time  time.Time
	taken time.Time
}

// Serve serves on ln what latest returns until ctx is done; see
// Server.Serve.
func Serve(ctx context.Context, ln net.Listener, latest Latest) error {
	s := &Server{Latest: latest}
	return s.Serve(ctx, ln)
}

// Serve accepts connections on ln until ctx is done or accepting fails
// for good, then closes ln, ends the connections in progress and
// returns: nil when ctx ended it.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	maxConns := s.MaxConns
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}

	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		active = make(map[net.Conn]struct{})
		slots  = make(chan struct{}, maxConns)
	)
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range active {
			c.SetDeadline(time.Unix(1, 0))
		}
		mu.Unlock()
	})
	defer func() {
		stop()
		ln.Close()
		mu.Lock()
		for c := range active {
			c.SetDeadline(time.Unix(1, 0))
		}
		mu.Unlock()
		wg.Wait()
	}()

	var backoff time.Duration
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		c, err := ln.Accept()
		if err != nil {
			<-slots
			if ctx.Err() != nil {
				return nil
			}
			// Out of descriptors and the like: wait, as net/http does.
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.logf("snapshot socket: accept: %v; retrying in %v", err, backoff)
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
					return nil
				}
				continue
			}
			return err
		}
		backoff = 0
		mu.Lock()
		active[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer func() {
				c.Close()
				mu.Lock()
				delete(active, c)
				mu.Unlock()
				<-slots
				wg.Done()
			}()
			s.serveConn(c, timeout)
		}()
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// serveConn answers one client.
func (s *Server) serveConn(c net.Conn, timeout time.Duration) {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return
	}
	var req [1]byte
	if _, err := c.Read(req[:]); err != nil {
		return // gone, or sent nothing in time
	}
	if req[0] < 1 {
		// No version this server writes: nothing, which the client
		// takes as no snapshot.
		return
	}
	body := s.body1()
	if body == nil {
		return
	}
	// From now: encoding a new snapshot is the server's time, not the
	// client's.
	if err := c.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return
	}
	if _, err := c.Write(body); err != nil {
		s.logf("snapshot socket: %v", err)
	}
}

// Publish encodes snap, taken at taken, and serves it from now on (to
// a Server without Latest). The caller may then refill snap: call it
// from the goroutine that filled it, right after, when snapshots are
// reused (the agent's double buffer), which Latest would race with.
// Publish(nil, time.Time{}) serves nothing again.
func (s *Server) Publish(snap *sample.Snapshot, taken time.Time) {
	var b []byte
	if snap != nil {
		s.mu.Lock()
		size := len(s.body) + len(s.body)/8 + 512
		s.mu.Unlock()
		b = snapshot.EncodeMeta(make([]byte, 0, size), snap, snapshot.Meta{Taken: taken})
		if len(b) > snapshot.MaxSize {
			s.logf("snapshot socket: the snapshot of %d processes takes %d bytes, more than a client accepts (%d): not served",
				len(snap.Procs), len(b), snapshot.MaxSize)
			b = nil
		}
	}
	s.mu.Lock()
	s.cached, s.body, s.valid = cacheKey{}, b, false
	s.mu.Unlock()
}

// body1 returns the current snapshot's encoding in format version 1,
// encoding it if it is new; nil when there is none.
func (s *Server) body1() []byte {
	if s.Latest == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.body
	}
	snap, taken, ok := s.Latest()
	if !ok || snap == nil {
		return nil
	}
	key := cacheKey{snap, snap.Time, taken}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.valid && s.cached.snap == key.snap && s.cached.time.Equal(key.time) && s.cached.taken.Equal(key.taken) {
		return s.body
	}
	// A new buffer: connections may still be writing the old one.
	b := snapshot.EncodeMeta(make([]byte, 0, len(s.body)+len(s.body)/8+512), snap, snapshot.Meta{Taken: taken})
	if len(b) > snapshot.MaxSize {
		s.logf("snapshot socket: the snapshot of %d processes takes %d bytes, more than a client accepts (%d): not served",
			len(snap.Procs), len(b), snapshot.MaxSize)
		b = nil
	}
	s.cached, s.body, s.valid = key, b, true
	return b
}

func (s *Server) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}
