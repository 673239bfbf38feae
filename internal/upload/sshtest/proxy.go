package sshtest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy forwards TCP connections from its own loopback address to a
// target, and can cut a connection in the middle: it stands for a network
// that drops.
type Proxy struct {
	// Addr is where clients connect, 127.0.0.1:port.
	Addr string

	l      net.Listener
	target string
	cut    func(n int) int64
	conns  atomic.Int32
	wg     sync.WaitGroup
	mu     sync.Mutex
	open   map[net.Conn]struct{}
	closed bool
}

// NewProxy starts a proxy to target. For the n-th accepted connection
// (from 0), cut(n) says after how many bytes sent from the client to the
// server the proxy closes both sides; 0 or less never cuts. It is
// stopped in t.Cleanup.
func NewProxy(t testing.TB, target string, cut func(n int) int64) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("sshtest: proxy: %v", err)
	}
	p := &Proxy{Addr: l.Addr().String(), l: l, target: target, cut: cut, open: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.Close)
	return p
}

// Conns returns how many connections the proxy has accepted.
func (p *Proxy) Conns() int { return int(p.conns.Load()) }

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.l.Close()
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.open[c] = struct{}{}
	return true
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		n := int(p.conns.Add(1)) - 1
		var limit int64
		if p.cut != nil {
			limit = p.cut(n)
		}
		p.wg.Add(1)
		go p.forward(c, limit)
	}
}

func (p *Proxy) forward(client net.Conn, limit int64) {
	defer p.wg.Done()
	if !p.track(client) {
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(server) {
		client.Close()
		return
	}
	// Closing both connections from either direction ends the other
	// copy too: a cut looks like a peer that vanished.
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			client.Close()
			server.Close()
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(client, server)
		closeBoth()
	}()
	if limit > 0 {
		io.CopyN(server, client, limit)
	} else {
		io.Copy(server, client)
	}
	closeBoth()
	<-done
}
