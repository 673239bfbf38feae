package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"
)

// Listeners is what the agent listens on, checked (by the command)
// before anything is created.
type Listeners struct {
	// Socket is the unix socket for metrics, "" for none; SocketGID its
	// group, -1 for the process's.
	Socket    string
	SocketGID int
	// TCP is the TCP address for metrics, "" for none; Web its TLS and
	// basic auth, nil for none (--no-auth).
	TCP string
	Web *WebConfig
	// Debug is the unix socket for net/http/pprof, "" for none;
	// DebugGID its group, -1 for owner only (mode 0600).
	Debug    string
	DebugGID int
	// MaxConns bounds the connections each metrics listener (Socket,
	// TCP) holds at once; 0 means DefaultMaxConnections.
	MaxConns int
	// Snapshot is the unix socket on which memwho (report and watch)
	// reads the latest snapshot (package snapshot), "" for none; its
	// group is SocketGID, its mode 0660, as the metrics socket's.
	Snapshot string
}

// SnapshotSocketName is the snapshot socket's name beside the metrics
// socket when --snapshot-socket is not given: with the default socket,
// snapshot.DefaultSocket.
const SnapshotSocketName = "snapshot.sock"

// ListenSnapshot creates the snapshot socket of p (see Snapshot), or
// returns nil when there is none.
func (p Listeners) ListenSnapshot(log io.Writer) (net.Listener, error) {
	if p.Snapshot == "" {
		return nil, nil
	}
	ln, err := ListenUnix(p.Snapshot, SocketOptions{Mode: 0o660, GID: p.SocketGID})
	if err != nil {
		return nil, fmt.Errorf("--snapshot-socket: %w", err)
	}
	fmt.Fprintf(log, "memwho: serving snapshots to memwho on unix socket %s\n", ln.Addr())
	return ln, nil
}

// Server is one listener and the HTTP server on it.
type Server struct {
	srv *http.Server
	ln  net.Listener
	tls bool
}

// Close closes the listener without serving (a unix socket's file is
// removed): for a command whose start failed after Listen.
func (s *Server) Close() error { return s.ln.Close() }

func (s *Server) serve() error {
	if s.tls {
		// The certificate comes from TLSConfig.GetCertificate.
		return s.srv.ServeTLS(s.ln, "", "")
	}
	return s.srv.Serve(s.ln)
}

// Listen creates the listeners of p and their servers, and says on log
// where it serves what; on error it closes those already made (which
// removes their socket files). metrics is the agent's Handler.
func (p Listeners) Listen(metrics http.Handler, scrapeTimeout time.Duration, log io.Writer) ([]*Server, error) {
	var out []*Server
	fail := func(err error) ([]*Server, error) {
		for _, s := range out {
			s.ln.Close()
		}
		return nil, err
	}
	newServer := func(h http.Handler, ln net.Listener) *Server {
		s := &Server{ln: ln, srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			WriteTimeout:      scrapeTimeout + 30*time.Second,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    maxHeaderBytes,
		}}
		out = append(out, s)
		return s
	}
	maxConns := p.maxConns()
	// newMetricsServer serves metrics on ln, at most maxConns
	// connections at a time; h has protect behind its access check.
	newMetricsServer := func(h http.Handler, ln net.Listener) *Server {
		ll := newLimitListener(ln, maxConns)
		s := newServer(refuseBody(h), ll)
		s.srv.ConnState = ll.connState
		s.srv.ConnContext = ll.connContext
		// HTTP/1.1 unless the web configuration allows HTTP/2 (below).
		s.srv.Protocols = new(http.Protocols)
		s.srv.Protocols.SetHTTP1(true)
		return s
	}
	// Behind the access check (none on the socket but its mode), a
	// request's connection is no longer closed to make room.
	metrics = protect(metrics)
	if p.Socket != "" {
		ln, err := ListenUnix(p.Socket, SocketOptions{Mode: 0o660, GID: p.SocketGID})
		if err != nil {
			return fail(fmt.Errorf("--socket: %w", err))
		}
		newMetricsServer(metrics, ln)
		fmt.Fprintf(log, "memwho: serving metrics on unix socket %s (curl --unix-socket %[1]s http://localhost/metrics)\n", ln.Addr())
	}
	if p.TCP != "" {
		ln, err := net.Listen("tcp", p.TCP)
		if err != nil {
			return fail(fmt.Errorf("--listen: %w", err))
		}
		h, scheme, how := metrics, "http", "no authentication"
		if p.Web != nil {
			h = p.Web.Handler(metrics)
			var ways []string
			if p.Web.BasicAuth() {
				ways = append(ways, "basic auth")
			}
			if c := p.Web.TLSConfig(); c != nil {
				scheme = "https"
				if c.ClientAuth == tls.RequireAndVerifyClientCert {
					ways = append(ways, "client certificates")
				}
			}
			how = strings.Join(ways, " and ")
		}
		s := newMetricsServer(h, ln)
		if p.Web != nil && p.Web.TLSConfig() != nil {
			s.srv.TLSConfig = p.Web.TLSConfig()
			s.tls = true
		}
		if p.Web != nil && p.Web.HTTP2() {
			s.srv.Protocols.SetHTTP2(true)
			s.srv.HTTP2 = http2Limits()
			how += ", HTTP/2"
		}
		fmt.Fprintf(log, "memwho: serving metrics on %s://%s/metrics (%s)\n", scheme, ln.Addr(), how)
		if p.Web != nil {
			for _, w := range p.Web.Warnings() {
				fmt.Fprintf(log, "memwho: warning: --web-config: %s\n", w)
			}
		}
		if p.Web == nil {
			fmt.Fprintf(log, "memwho: warning: --no-auth: anyone who can connect to %s reads the figures\n", ln.Addr())
		} else if !s.tls && !loopback(p.TCP) {
			fmt.Fprintln(log, "memwho: warning: basic auth without tls_server_config: passwords cross the network in clear")
		}
	}
	if p.Debug != "" {
		mode := os.FileMode(0o600)
		if p.DebugGID >= 0 {
			mode = 0o660
		}
		ln, err := ListenUnix(p.Debug, SocketOptions{Mode: mode, GID: p.DebugGID})
		if err != nil {
			return fail(fmt.Errorf("--debug-socket: %w", err))
		}
		// Bounded as the metrics listeners are, so that a member of
		// --debug-socket-group cannot take the walk's descriptors;
		// every request is allowed (the socket's mode is the check).
		ll := newLimitListener(ln, debugConns)
		s := newServer(protect(pprofMux()), ll)
		s.srv.ConnState = ll.connState
		s.srv.ConnContext = ll.connContext
		s.srv.WriteTimeout = 0 // profiles take --seconds
		fmt.Fprintf(log, "memwho: serving pprof on unix socket %s\n", ln.Addr())
	}
	return out, nil
}

// http2Limits bounds an HTTP/2 connection as an HTTP/1.1 one is bounded:
// one request at a time (an HTTP/2 connection would otherwise carry 250
// at once, which --max-connections, counting connections, would not
// bound; the access check and protect see one request per connection, as
// with HTTP/1.1), header tables and frames at the protocol's minimum, and
// 64 KiB of request body buffered (nothing the agent serves takes a body:
// refuseBody).
func http2Limits() *http.HTTP2Config {
	return &http.HTTP2Config{
		MaxConcurrentStreams:          1,
		MaxDecoderHeaderTableSize:     4 << 10,
		MaxEncoderHeaderTableSize:     4 << 10,
		MaxReadFrameSize:              16 << 10,
		MaxReceiveBufferPerConnection: 64 << 10,
		MaxReceiveBufferPerStream:     64 << 10,
		SendPingTimeout:               time.Minute,
		PingTimeout:                   15 * time.Second,
	}
}

// Serve serves until ctx is done or a server fails, then shuts every
// server down (allowing 5 seconds for scrapes in flight).
func Serve(ctx context.Context, servers []*Server) error {
	errc := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errc <- s.serve() }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		s.srv.Shutdown(sctx)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// loopback reports whether HOST:PORT names a loopback host, where a
// password sent in clear does not leave the machine.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// pprofMux serves net/http/pprof's handlers on a mux of its own: the
// package registers them on http.DefaultServeMux, which the metrics
// server does not use.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
