package agent

import (
	"context"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
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
	// with when it began; byPeer counts the held connections of each peer
	// (sourceOf), from which the counts of its groups are summed.
	served map[net.Conn]servedConn
	byPeer map[peer]int

	// Scratch of tally and cut, reused so that a newcomer when every
	// slot is served allocates nothing.
	own    [maxLevels]int            // connections of the newcomer's group, by level
	others [maxLevels]map[string]int // connections of each other group, by level
	under  []peerCount               // peers of a hog's group (cut)
	groups map[string]int            // the candidate groups, numbered (cut)
	best   []int                     // each candidate group's biggest sub-group at a level (cut)
}

type peerCount struct {
	p peer
	n int
	g int // its group among the candidates (cut: l.groups, l.best)
}

// maxLevels is the most groups a peer's place has: an IPv6 peer's /32,
// /48, /56 and /64, and its address.
const maxLevels = 5

// peer names the other end of a connection as the groups it sits in,
// widest first, down to its address (path[:n]; n ≥ 1): for an IPv6 peer
// its /32, /48, /56, /64 and address; for an IPv4 peer its /16, /24 and
// address, or 127.0.0.0/8 and address; on a unix socket its user. Each
// name carries its prefix, so equal names at a level mean equal groups
// above it too. The per-source rule (hogsConn) compares groups level by
// level; a peer's source is its widest group.
type peer struct {
	path [maxLevels]string
	n    int
}

// newPeer is the peer at path, widest group first.
func newPeer(path ...string) peer {
	var p peer
	p.n = copy(p.path[:], path)
	return p
}

// source is p's widest group.
func (p peer) source() string { return p.path[0] }

// leaf is p's narrowest group, its address (its user on a unix socket).
func (p peer) leaf() string { return p.path[max(p.n-1, 0)] }

// at is p's group at level k, and past its depth its address: a peer
// is its own sub-group at the levels below its address. The groups that
// cut compares at the widest level may be of unlike depths (127.0.0.0/8
// has two levels, an IPv4 /16 three, an IPv6 /32 five, a user one).
func (p peer) at(k int) string { return p.path[min(k, max(p.n-1, 0))] }

// String is p's path, widest group first, for tests and messages.
func (p peer) String() string { return strings.Join(p.path[:p.n], " > ") }

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
			made, blocks := l.makeRoom(from)
			if made {
				continue
			}
			if blocks {
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

// blocksOthers reports whether a newcomer from p, for which no room
// could be made, would keep out, by waiting, one from a source holding
// nothing for which hogsConn would close a connection: p's source holds
// a slot and some source holds two.
func (l *limitListener) blocksOthers(p peer) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tally(p)
	return l.blocked()
}

// blocked is blocksOthers on the counts tally left, which hogsConn's cut
// does not touch at the widest level (l.own[0], l.others[0]). l.mu is
// held.
func (l *limitListener) blocked() bool {
	return l.own[0] >= 2 || l.own[0] == 1 && most(l.others[0]) >= 2
}

// held wraps c, which has taken a slot, to free it when closed.
func (l *limitListener) held(c net.Conn, p peer) net.Conn {
	l.mu.Lock()
	l.byPeer[p]++
	l.mu.Unlock()
	return &limitConn{Conn: c, peer: p, release: sync.OnceFunc(func() {
		l.mu.Lock()
		if l.byPeer[p]--; l.byPeer[p] <= 0 {
			delete(l.byPeer, p)
		}
		l.mu.Unlock()
		<-l.slots
	})}
}

// sourceOf names who is at the other end of c: for a TCP peer the
// groups of its IP address (ipPeer), with the link of a link-local one,
// for a unix socket's peer its user (SO_PEERCRED).
func sourceOf(c net.Conn) peer {
	switch c := c.(type) {
	case *net.TCPConn:
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			p := ipPeer(a.IP)
			if a.Zone != "" {
				// A link-local peer: fe80::/64 on each link is
				// another network, and its addresses are another
				// link's too.
				for i := range p.path[:p.n] {
					p.path[i] += "%" + a.Zone
				}
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
				return newPeer("uid " + strconv.FormatUint(uint64(cred.Uid), 10))
			}
		}
	}
	// A peer the kernel did not name still counts, as one source.
	name := "unnamed"
	if a := c.RemoteAddr(); a != nil {
		name = a.String()
	}
	return newPeer(name)
}

// ipPeer is the place of a TCP peer at ip: an IPv4 address (also written
// IPv4-mapped, ::ffff:a.b.c.d) in its /16 and /24, but a loopback address
// in 127.0.0.0/8 alone; an IPv6 address in its /32, /48, /56 and /64.
//
// Why groups wider than an address: one IPv6 host commonly holds a whole
// /64 (SLAAC, privacy addresses) and can take a new address for every
// connection; a routed /56 (a home's) or /48 (a site's, 6to4's for any
// IPv4 host) gives one client as many /64s; any user of this host may
// bind any loopback address; a cloud tenant may hold many IPv4 addresses
// of one range. Counted by address, or by /64 alone, such a client is as
// many sources as connections and the hog rule never finds it. Counted
// by nested groups, it is one group at some level, where the rule finds
// it (hogsConn), while hosts that share a group (a NAT, a bridge, a
// provider's range) are still told apart at the levels below.
func ipPeer(ip net.IP) peer {
	if ip4 := ip.To4(); ip4 != nil {
		if ip4[0] == 127 {
			return newPeer("127.0.0.0/8", ip4.String())
		}
		return newPeer(prefix(ip4, 16, 32), prefix(ip4, 24, 32), ip4.String())
	}
	if len(ip) != net.IPv6len {
		return newPeer(ip.String())
	}
	return newPeer(prefix(ip, 32, 128), prefix(ip, 48, 128), prefix(ip, 56, 128), prefix(ip, 64, 128), ip.String())
}

// prefix names ip's network of ones bits out of bits, as "net/ones".
func prefix(ip net.IP, ones, bits int) string {
	return ip.Mask(net.CIDRMask(ones, bits)).String() + "/" + strconv.Itoa(ones)
}

// Close closes the listener and ends a waiting Accept.
func (l *limitListener) Close() error {
	l.close.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// makeRoom closes, for a newcomer from p, the connection idle the
// longest or, with none idle, the one that has waited the longest
// without being served; with none of those, a served connection of a
// group holding at least two more than p's at some level (hogsConn).
// Its slot is free when made (unless the server had closed it already:
// the caller then asks again). When it closed nothing, blocks is
// blocksOthers, from the counts hogsConn made.
//
// The last rule is for a client allowed to ask (anyone on --no-auth, a
// password holder, a member of the socket's group) who asks on every
// slot and reads no answer: each connection stays served until the
// write timeout, and without it they would lock every other source out.
// A group holding a single slot more than another keeps it: a
// scrape in progress is never cut for a client that already has as
// many.
func (l *limitListener) makeRoom(p peer) (made, blocks bool) {
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
		// Found nothing: whether the newcomer blocks others, from the
		// same tally, rather than a second pass (blocksOthers).
		blocks = pick == nil && l.blocked()
	}
	l.mu.Unlock()
	if pick == nil {
		return false, blocks
	}
	// Under TLS the server reports the *tls.Conn, whose Close first
	// sends an alert and may wait 5 s for a peer that reads nothing:
	// close the connection beneath it, which frees the slot at once.
	if t, ok := pick.(interface{ NetConn() net.Conn }); ok {
		pick = t.NetConn()
	}
	pick.Close()
	return true, false
}

// hogsConn returns a served connection that a newcomer from p may
// close, else nil. Level by level from the widest, among the groups
// that share p's groups above the level: if a group other than p's holds
// at least two more connections than p's, the connection closed is one of
// the group holding the most; else the rule goes down into p's own group.
// Of the group found, it is one of its sub-group holding the most at
// each level below, down to an address, and of that address the
// longest-served; between groups and sub-groups holding as many, or one
// fewer, the longest-served decides (cut).
//
// So a client that spreads its connections over the addresses of a /64,
// the /64s of a /48 or the addresses of a /24 is one group at the level
// above the spread and is found there; hosts sharing a group (a /64 of a
// bridge, loopback, a provider's range) are told apart at the levels
// below it: one of them on every slot from one address does not lock the
// others out, and a newcomer from elsewhere closes one of that address's
// connections, not a neighbour's scrape. l.mu is held.
func (l *limitListener) hogsConn(p peer) net.Conn {
	l.tally(p)
	for lvl := range p.n {
		if m := most(l.others[lvl]); m >= l.own[lvl]+2 {
			return l.cut(lvl, max(m-1, l.own[lvl]+2))
		}
	}
	return nil
}

// tally counts, in one pass over the held peers, the connections of p's
// group at each level (l.own) and of every other group at each level
// that shares p's groups above it (l.others). A peer sharing p's first c
// groups is in p's group at the levels above c and in another at level
// c; at the levels below, it is under another group and not compared.
// l.mu is held.
func (l *limitListener) tally(p peer) {
	l.own = [maxLevels]int{}
	for i := range l.others {
		if l.others[i] == nil {
			l.others[i] = make(map[string]int)
		}
		clear(l.others[i])
	}
	for q, n := range l.byPeer {
		c := 0
		for c < p.n && c < q.n && q.path[c] == p.path[c] {
			l.own[c] += n
			c++
		}
		if c < p.n && c < q.n {
			l.others[c][q.path[c]] += n
		}
	}
}

// most returns how many connections the group holding the most holds: 0
// for none. Which group that is does not matter: cut takes every group
// within one of it.
func most(groups map[string]int) int {
	m := 0
	for _, n := range groups {
		m = max(m, n)
	}
	return m
}

// cut returns the served connection that a newcomer closes among the
// groups at level lvl that hold at least atLeast connections (of those
// tallied in l.others[lvl], the newcomer's own excluded): one of their
// sub-group holding the most at each level below, down to an address,
// and of that address the longest-served. hogsConn passes the most less
// one, but no less than the newcomer's group's count plus two. Groups
// and sub-groups holding as many as the most, or one fewer, are all
// kept, and the longest-served of their connections is cut:
//
//   - not one of the group or sub-group whose name sorts first: a
//     client holding one connection per address of a scraper's group
//     chose by its addresses which of them lost one, the scraper's
//     (127.0.0.1 sorts before every other loopback address;
//     TestTiesCutTheNewest), and so, with its groups' names, which
//     of the groups tied at a level did;
//   - not one of a sub-group holding a single connection more than the
//     rest: two scrapers sharing a /64, in a /56 over which a client
//     spread one connection per /64, made their /64 the biggest, and a
//     newcomer from elsewhere cut a scrape (TestLimitBounds). A
//     sub-group holding one more is no more a hog than the others, as
//     a group holding one more than a newcomer's keeps its slots
//     (hogsConn).
//
// Each group kept at level lvl is gone down on its own: a sub-group is
// compared with the other sub-groups of its group, not with those of
// another group. Compared across groups, a client that spread its own
// group thin (one connection per /64 of a /56) lost every contest below
// to a group of scrapers sharing one sub-group (three in one /64, or
// behind one NAT address), and its newcomer cut a scrape whatever its
// age (TestSpreadBesideConcentrated): spreading within a group
// is what counting groups makes useless.
//
// A scrape in progress is newer than connections held until the write
// timeout. l.mu is held; it uses l.others, l.under, l.groups and
// l.best as scratch (hogsConn is done with them).
func (l *limitListener) cut(lvl, atLeast int) net.Conn {
	hogs := l.others[lvl]
	l.under = l.under[:0]
	depth := 0
	for q, n := range l.byPeer {
		if q.n > lvl && hogs[q.path[lvl]] >= atLeast {
			l.under = append(l.under, peerCount{p: q, n: n})
			depth = max(depth, q.n)
		}
	}
	if len(l.under) == 0 {
		return nil
	}
	// One group kept at lvl (the common case): the biggest sub-group
	// at a level is a number, m; several: one per group, l.best[e.g],
	// each group numbered once here rather than looked up by name at
	// every level.
	one := true
	for g, n := range hogs {
		if n >= atLeast && g != l.under[0].p.path[lvl] {
			one = false
			break
		}
	}
	if !one {
		if l.groups == nil {
			l.groups = make(map[string]int)
		}
		clear(l.groups)
		for i := range l.under {
			name := l.under[i].p.path[lvl]
			g, ok := l.groups[name]
			if !ok {
				g = len(l.groups)
				l.groups[name] = g
			}
			l.under[i].g = g
		}
		l.best = slices.Grow(l.best[:0], len(l.groups))[:len(l.groups)]
	}
	// dropped[k]: some sub-group was dropped at level k; then those
	// kept are the names holding a count in l.others[k], which the last
	// pass looks up.
	var dropped [maxLevels]bool
	for k := lvl + 1; len(l.under) > 1 && k < depth; k++ {
		if l.oneGroup(k) {
			continue
		}
		// Where every peer is at its address (the deepest's last
		// level, or past it), each sub-group is one peer, its count
		// e.n: no map for as many addresses as a spread has slots.
		// Above it, a peer past its own depth (a loopback address
		// beside an IPv6 /32's /56s) is counted as its address (at),
		// not lumped with the others past theirs.
		leaf := k >= depth-1
		counts := l.others[k]
		clear(counts)
		m := 0
		for _, e := range l.under {
			if !leaf {
				counts[e.p.at(k)] += e.n
			} else if one {
				m = max(m, e.n)
			}
		}
		if one && !leaf {
			m = most(counts)
		} else if !one {
			clear(l.best)
			for _, e := range l.under {
				n := e.n
				if !leaf {
					n = counts[e.p.at(k)]
				}
				l.best[e.g] = max(l.best[e.g], n)
			}
		}
		kept := l.under[:0]
		for _, e := range l.under {
			n := e.n
			if !leaf {
				n = counts[e.p.at(k)]
			}
			if !one {
				m = l.best[e.g]
			}
			if n >= m-1 {
				kept = append(kept, e)
			} else if !leaf {
				// Dropped: no count, for the last pass. (Its
				// sub-group's other peers read 0, and are dropped
				// too, as they should: m ≥ 3 here.)
				counts[e.p.at(k)] = 0
			}
		}
		if dropped[k] = len(kept) < len(l.under); dropped[k] && leaf {
			for _, e := range kept {
				counts[e.p.at(k)] = e.n
			}
		}
		l.under = kept
	}
	if len(l.under) == 1 {
		return l.longestServed(l.under[0].p)
	}
	// Several addresses are kept: the longest-served of theirs.
	var (
		pick  net.Conn
		since time.Time
	)
	for c, sc := range l.served {
		q := sc.peer
		kept := q.n > lvl && hogs[q.path[lvl]] >= atLeast
		for k := lvl + 1; kept && k < depth; k++ {
			kept = !dropped[k] || l.others[k][q.at(k)] > 0
		}
		if kept && (pick == nil || sc.since.Before(since)) {
			pick, since = c, sc.since
		}
	}
	return pick
}

// oneGroup reports whether the peers in l.under are all in one group at
// level k: then cut has nothing to choose there. l.mu is held.
func (l *limitListener) oneGroup(k int) bool {
	first := l.under[0].p.at(k)
	for i := 1; i < len(l.under); i++ {
		if l.under[i].p.at(k) != first {
			return false
		}
	}
	return true
}

// longestServed returns p's connection served the longest, or nil.
// l.mu is held.
func (l *limitListener) longestServed(p peer) net.Conn {
	var (
		pick  net.Conn
		since time.Time
	)
	leaf := p.leaf()
	for c, sc := range l.served {
		// The address first: most peers differ there, and comparing
		// it alone is a fifth of comparing whole paths.
		if sc.peer.leaf() == leaf && sc.peer == p && (pick == nil || sc.since.Before(since)) {
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
// (connState). Only a newcomer from another group, when one of c's
// groups holds two more connections than the newcomer's at that level,
// may still close it (hogsConn).
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
