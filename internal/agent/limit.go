package agent

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultMaxConnections is how many connections each metrics listener
// holds at once unless --max-connections says otherwise. Prometheus keeps
// one per agent; 64 leave room for a few servers, curl and a dashboard.
const DefaultMaxConnections = 64

// maxHeaderBytes bounds a request's headers. A scrape sends well under
// 1 KiB; net/http's default (1 MiB) would let each held connection cost
// a megabyte. It bounds bytes, not memory: net/http keeps a map entry
// per header name while the headers arrive, so 36 KiB of headers with
// short names ("0:" to "1fff:"; 32 KiB here, plus the 4,096 bytes
// net/http allows beyond it) held 508 KiB per connection, 32 MiB for 64
// connections (the agent went from 27 to 90 MiB of RSS). With 4 KiB
// (8 KiB on the wire), about 130 KiB.
const maxHeaderBytes = 4 << 10

// limitListener holds at most cap(slots) connections at a time, so that
// a client opening connections without end (an unauthenticated one, on
// --listen) costs the agent a bounded number of descriptors and bounded
// memory: unbounded, 5,000 connections that each asked once and then
// stayed idle took 96 MiB (the shipped unit's MemoryMax is 128M) and
// 5,000 descriptors.
//
// A connection that arrives when every slot is taken makes room: the
// connection idle the longest (kept alive between requests) is closed,
// or, when none is idle, the one that has waited the longest without
// being served: no request yet, or one that has not passed the access
// check (waiting for its bcrypt turn, or being refused). A connection
// serving a request that passed it (protect) is never closed, so a flood
// of connections cannot lock a scrape out: the scrape's own connection
// is the newest, and once its request is in and allowed, it is safe.
// (Were every request read protected, a client with no password could
// hold every slot: with wrong passwords queued for bcrypt, or with
// pipelined requests whose 401s it never reads, which keep the server
// writing until the write timeout.) Prometheus' client opens a new
// connection when its idle one was closed. Only when every slot is
// serving an allowed request does a new connection wait, for the first
// to end, or, when another's newcomer could make room, get closed
// (Accept).
type limitListener struct {
	net.Listener
	slots chan struct{}
	wake  chan struct{} // a connection went idle
	done  chan struct{} // closed by Close
	close sync.Once

	mu sync.Mutex
	// waiting holds the connections that may be closed to make room:
	// those idle and those not being served, as the server reports them
	// (ConnState) and protect, with when they became so.
	waiting map[net.Conn]waitingConn
	// served holds the connections serving an allowed request (protect),
	// with when it began; bySource counts the held connections of each
	// source, byPeer of each peer (sourceOf).
	served   map[net.Conn]servedConn
	bySource map[string]int
	byPeer   map[peer]int
}

// peer names the other end of a connection: its source, which the
// per-source rule counts (hogsConn), and its address within the source,
// where a source holds several (an IPv6 /64, IPv4 loopback); else the
// source again.
type peer struct{ source, addr string }

type servedConn struct {
	since time.Time
	peer  peer
}

type waitingConn struct {
	since time.Time
	idle  bool // kept alive after a request; else nothing asked yet, or not allowed yet
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{
		Listener: ln,
		slots:    make(chan struct{}, n),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		waiting:  make(map[net.Conn]waitingConn),
		served:   make(map[net.Conn]servedConn),
		bySource: make(map[string]int),
		byPeer:   make(map[peer]int),
	}
}

// Accept accepts a connection, then gives it a slot, closing another
// connection (makeRoom) or else waiting for one to end when none is
// free. A connection is accepted before any other is closed, so that
// connections are closed only for a client that is there: the one
// waiting holds the only descriptor above the limit.
//
// A newcomer for which no room can be made is closed at once, rather
// than waiting, when a newcomer from a source holding nothing could
// have made room (blocksOthers): while it waits, the connections behind
// it stay in the kernel's backlog, never accepted, so one connection
// more than the limit from the source holding the slots kept every
// other source out until the write timeout.
func (l *limitListener) Accept() (net.Conn, error) {
accept:
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		from := sourceOf(c)
		for {
			select {
			case l.slots <- struct{}{}:
				return l.held(c, from), nil
			case <-l.done:
				c.Close()
				return nil, net.ErrClosed
			default:
			}
			if l.makeRoom(from) {
				continue
			}
			if l.blocksOthers(from.source) {
				c.Close()
				continue accept
			}
			select {
			case l.slots <- struct{}{}:
				return l.held(c, from), nil
			case <-l.wake:
			case <-l.done:
				c.Close()
				return nil, net.ErrClosed
			}
		}
	}
}

// blocksOthers reports whether a newcomer from src, for which no room
// could be made, would keep out, by waiting, one from a source holding
// nothing for which hogsConn would close a connection: src holds a slot
// and some source holds two.
func (l *limitListener) blocksOthers(src string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bySource[src] == 0 {
		return false
	}
	for _, n := range l.bySource {
		if n >= 2 {
			return true
		}
	}
	return false
}

// held wraps c, which has taken a slot, to free it when closed.
func (l *limitListener) held(c net.Conn, p peer) net.Conn {
	l.mu.Lock()
	l.bySource[p.source]++
	l.byPeer[p]++
	l.mu.Unlock()
	return &limitConn{Conn: c, peer: p, release: sync.OnceFunc(func() {
		l.mu.Lock()
		if l.bySource[p.source]--; l.bySource[p.source] <= 0 {
			delete(l.bySource, p.source)
		}
		if l.byPeer[p]--; l.byPeer[p] <= 0 {
			delete(l.byPeer, p)
		}
		l.mu.Unlock()
		<-l.slots
	})}
}

// sourceOf names who is at the other end of c: for a TCP peer its
// source (ipSource) and its IP address, with the link of a link-local
// one, for a unix socket's peer its user (SO_PEERCRED).
func sourceOf(c net.Conn) peer {
	switch c := c.(type) {
	case *net.TCPConn:
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			p := peer{ipSource(a.IP), a.IP.String()}
			if a.Zone != "" {
				// A link-local peer: fe80::/64 on each link is
				// another network, and its addresses are another
				// link's too.
				p.source += "%" + a.Zone
				p.addr += "%" + a.Zone
			}
			return p
		}
	case *net.UnixConn:
		if rc, err := c.SyscallConn(); err == nil {
			var cred *unix.Ucred
			rc.Control(func(fd uintptr) {
				cred, _ = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
			})
			if cred != nil {
				uid := "uid " + strconv.FormatUint(uint64(cred.Uid), 10)
				return peer{uid, uid}
			}
		}
	}
	// A peer the kernel did not name still counts, as one source.
	name := "unnamed"
	if a := c.RemoteAddr(); a != nil {
		name = a.String()
	}
	return peer{name, name}
}

// ipSource is the source of a TCP peer at ip: an IPv4 address (also
// written IPv4-mapped, ::ffff:a.b.c.d) itself, but 127.0.0.0/8 as one;
// an IPv6 address its /64. One IPv6 host commonly holds a whole /64
// (SLAAC, privacy addresses) and can take a new address for every
// connection: counted by address, one client would be as many sources
// as connections and the hog rule would never find it. So can any user
// of this host with loopback addresses, which anyone may bind. Hosts
// that share a /64 count as one source, as hosts behind one NAT address
// do in IPv4; within it their addresses are still told apart (hogsConn).
func ipSource(ip net.IP) string {
	if ip4 := ip.To4(); ip4 != nil {
		if ip4[0] == 127 {
			return "127.0.0.0/8"
		}
		return ip4.String()
	}
	if len(ip) != net.IPv6len {
		return ip.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// Close closes the listener and ends a waiting Accept.
func (l *limitListener) Close() error {
	l.close.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// makeRoom closes, for a newcomer from p, the connection idle the
// longest or, with none idle, the one that has waited the longest
// without being served; with none of those, a served connection of a
// source or an address holding at least two more than p's (hogsConn).
// Its slot is free when it returns true (unless the
// server had closed it already: the caller then asks again).
//
// The last rule is for a client allowed to ask (anyone on --no-auth, a
// password holder, a member of the socket's group) who asks on every
// slot and reads no answer: each connection stays served until the
// write timeout, and without it they would lock every other source out.
// One source holding a single slot more than another keeps it: a
// scrape in progress is never cut for a client that already has as
// many.
func (l *limitListener) makeRoom(p peer) bool {
	l.mu.Lock()
	var (
		pick net.Conn
		best waitingConn
	)
	for c, w := range l.waiting {
		better := pick == nil ||
			w.idle && !best.idle ||
			w.idle == best.idle && w.since.Before(best.since)
		if better {
			pick, best = c, w
		}
	}
	delete(l.waiting, pick)
	if pick == nil {
		pick = l.hogsConn(p)
		delete(l.served, pick)
	}
	l.mu.Unlock()
	if pick == nil {
		return false
	}
	// Under TLS the server reports the *tls.Conn, whose Close first
	// sends an alert and may wait 5 s for a peer that reads nothing:
	// close the connection beneath it, which frees the slot at once.
	if t, ok := pick.(interface{ NetConn() net.Conn }); ok {
		pick = t.NetConn()
	}
	pick.Close()
	return true
}

// hogsConn returns a served connection that a newcomer from p may
// close, else nil: one of the source holding the most connections, if
// that holds at least two more than p's source; else, within p's own
// source, one of the address holding the most, if that holds at least
// two more than p's address. Hosts sharing a source (an IPv6 /64,
// loopback) are so told apart among themselves: one of them on every
// slot from one address does not lock the others out, as it did not
// when each address was a source. Of a source, it is one of the address
// holding the most, so that a client does not get a neighbour's scrape
// in its /64 cut for it; of an address, the longest-served. l.mu is
// held.
func (l *limitListener) hogsConn(p peer) net.Conn {
	hog, most := "", 0
	for s, n := range l.bySource {
		if n > most {
			hog, most = s, n
		}
	}
	if hog != p.source && most >= l.bySource[p.source]+2 {
		return l.longestServed(l.biggest(hog))
	}
	if q := l.biggest(p.source); q != p && l.byPeer[q] >= l.byPeer[p]+2 {
		return l.longestServed(q)
	}
	return nil
}

// biggest returns the peer of source holding the most connections.
// l.mu is held.
func (l *limitListener) biggest(source string) peer {
	var (
		big  peer
		most int
	)
	for q, n := range l.byPeer {
		if q.source == source && n > most {
			big, most = q, n
		}
	}
	return big
}

// longestServed returns p's connection served the longest, or nil.
// l.mu is held.
func (l *limitListener) longestServed(p peer) net.Conn {
	var (
		pick  net.Conn
		since time.Time
	)
	for c, sc := range l.served {
		if sc.peer == p && (pick == nil || sc.since.Before(since)) {
			pick, since = c, sc.since
		}
	}
	return pick
}

// connState is the server's ConnState hook: it keeps the set of
// connections that makeRoom may close.
func (l *limitListener) connState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.served, c)
	switch s {
	case http.StateNew, http.StateActive:
		// A request read is not yet one served: protect says when it
		// passed the access check.
		l.waiting[c] = waitingConn{since: time.Now()}
		l.poke()
	case http.StateIdle:
		l.waiting[c] = waitingConn{since: time.Now(), idle: true}
		l.poke()
	default:
		delete(l.waiting, c)
	}
}

// connKey is the request context's key for the connection and its
// listener (connContext), which protect needs.
type connKey struct{}

type connRef struct {
	l *limitListener
	c net.Conn
}

// connContext is the server's ConnContext hook: it gives each request
// its connection, as ConnState names it.
func (l *limitListener) connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, connRef{l, c})
}

// protect wraps the handler that serves what a request was allowed to
// ask: from the moment a request reaches it, its connection is no longer
// closed to make room (until it is idle again). It goes behind the access
// check, so that only a client with the password (or any client, on
// --no-auth and on the socket) holds a slot that way.
func protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ref, ok := r.Context().Value(connKey{}).(connRef); ok {
			ref.l.serving(ref.c)
		}
		h.ServeHTTP(w, r)
	})
}

// serving takes c out of the connections makeRoom may close for anyone;
// the server puts it back when the request is done and c idle
// (connState). Only a newcomer from another source, when c's holds two
// more connections than the newcomer's, may still close it (hogsConn).
func (l *limitListener) serving(c net.Conn) {
	var p peer
	if lc := holder(c); lc != nil {
		p = lc.peer
	}
	l.mu.Lock()
	delete(l.waiting, c)
	l.served[c] = servedConn{since: time.Now(), peer: p}
	l.mu.Unlock()
}

// holder returns the limitConn beneath c, as the server names it (itself,
// or a *tls.Conn over it).
func holder(c net.Conn) *limitConn {
	if t, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = t.NetConn()
	}
	lc, _ := c.(*limitConn)
	return lc
}

// refuseBody refuses a request with a body: nothing the metrics
// listeners serve takes one. After its handler, net/http reads up to
// 256 KiB of a body left unread, to keep the connection, with no deadline
// (the server has no ReadTimeout): a client that announced a body (a
// length, chunks, Expect: 100-continue) and sent none held its
// connection, being served, for ever. The read deadline in the past
// makes that read fail at once, and the connection is closed.
func refuseBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 { // -1: chunked, length unknown
			h.ServeHTTP(w, r)
			return
		}
		http.NewResponseController(w).SetReadDeadline(time.Now())
		w.Header().Set("Connection", "close")
		http.Error(w, "memwho: a request takes no body", http.StatusRequestEntityTooLarge)
	})
}

// poke wakes an Accept waiting for a connection it may close.
func (l *limitListener) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// limitConn frees its listener's slot when closed, once.
type limitConn struct {
	net.Conn
	peer    peer // sourceOf
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
