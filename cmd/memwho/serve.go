package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/memwho/memwho/internal/agent"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/sample"
)

const serveUsage = `Usage: memwho serve [flags]

Serves memory figures in the Prometheus text format on /metrics: per
group (program, user or cgroup) RAM (PSS), private, shared, swap, process
count and ESTABLISHED TCP connections; optionally the largest processes;
the host's meminfo and what no process accounts for; and the agent's own
cost. Walks of /proc happen when Prometheus scrapes, at most once per
--min-interval; between full page-table walks, unchanged processes keep
their figures (see docs/agent.md).

Flags:
  --socket PATH          serve metrics over HTTP on a unix socket at PATH
                         (default /run/memwho/memwho.sock when --listen is
                         not given); mode 0660: the owner and the group
                         read the figures
  --socket-group NAME    group of the socket (default: the process's group)
  --listen ADDR          also serve metrics on TCP ADDR; needs --web-config
                         or --no-auth
  --web-config FILE      TLS and basic auth for --listen, in the format of
                         Prometheus' web configuration file (see
                         docs/agent.md)
  --no-auth              allow --listen without --web-config: anyone who
                         can connect to ADDR reads the figures
  --by KEY               group by program (default), user or cgroup
  --top-processes K      add per-process series for the K processes using
                         the most RAM (default 0, at most 1000)
  --conns                count ESTABLISHED TCP connections per process and
                         group (default true; --conns=false to skip the
                         /proc/PID/fd walk)
  --min-interval DUR     least time between two walks (default 10s)
  --scrape-timeout DUR   longest a scrape waits for a walk before it gets
                         the previous snapshot (default 5s)
  --full-every K         walk every process's page tables at least every K
                         walks (default 20)
  --walk-budget F        fraction of time one process's page walks may
                         take (default 0.01)
  --fast                 RSS-based estimates only, no page-table walks
  --proc DIR             read the procfs tree at DIR (default /proc)
  --debug-socket PATH    serve net/http/pprof on a unix socket at PATH
                         (mode 0600; off)
  --debug-socket-group NAME
                         let group NAME use the debug socket too (0660)
  --once                 print the metrics of one walk to stdout and exit

The figures (exact memory of every process on the host) are gathered with
capabilities, so they are served only to whom the socket's permissions
or the web configuration admit. Both sockets are created in a directory
only their owner may write (created 0750 when missing); a symlink or any
file but a stale socket at PATH is refused.

Every flag can also be set by an environment variable named MEMWHO_ and
the flag in capitals with - as _ (MEMWHO_LISTEN, MEMWHO_TOP_PROCESSES);
a flag on the command line wins. The agent needs CAP_SYS_PTRACE for exact
figures of other users' processes, and CAP_DAC_READ_SEARCH with it for
their TCP connections (contrib/memwho.service grants both).

Examples:
  memwho serve
  curl --unix-socket /run/memwho/memwho.sock http://localhost/metrics
  memwho serve --socket-group memwho --by cgroup --top-processes 20
  memwho serve --listen :9743 --web-config /etc/memwho/web.yml
  MEMWHO_LISTEN=127.0.0.1:9743 MEMWHO_NO_AUTH=1 memwho serve
  memwho serve --once | promtool check metrics
`

type serveFlags struct {
	listen, by, procDir, debugListen string
	top, fullEvery                   int
	conns, fast, once                bool
	minInterval, scrapeTimeout       time.Duration
	walkBudget                       float64

	// Who reads the figures (docs/agent.md, "Who can read the figures").
	socket, socketGroup, webConfig string
	debugSocket, debugSocketGroup  string
	noAuth                         bool
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.socket, "socket", "", "")
	fs.StringVar(&f.socketGroup, "socket-group", "", "")
	fs.StringVar(&f.listen, "listen", "", "")
	fs.StringVar(&f.webConfig, "web-config", "", "")
	fs.BoolVar(&f.noAuth, "no-auth", false, "")
	fs.StringVar(&f.debugSocket, "debug-socket", "", "")
	fs.StringVar(&f.debugSocketGroup, "debug-socket-group", "", "")
	fs.StringVar(&f.by, "by", "program", "")
	fs.IntVar(&f.top, "top-processes", 0, "")
	fs.BoolVar(&f.conns, "conns", true, "")
	fs.DurationVar(&f.minInterval, "min-interval", agent.DefaultMinInterval, "")
	fs.DurationVar(&f.scrapeTimeout, "scrape-timeout", agent.DefaultScrapeTimeout, "")
	fs.IntVar(&f.fullEvery, "full-every", 20, "")
	fs.Float64Var(&f.walkBudget, "walk-budget", engine.DefaultWalkBudget, "")
	fs.BoolVar(&f.fast, "fast", false, "")
	fs.StringVar(&f.procDir, "proc", "/proc", "")
	fs.StringVar(&f.debugListen, "debug-listen", "", "")
	fs.BoolVar(&f.once, "once", false, "")
}

// envName is the environment variable that sets flag name.
func envName(name string) string {
	return "MEMWHO_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applyEnv sets every flag of fs that has an environment variable, before
// the command line is parsed (so that the command line wins).
func applyEnv(fs *flag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil {
			return
		}
		env := envName(f.Name)
		// An empty variable counts as unset, as in most tools.
		if v, ok := os.LookupEnv(env); ok && v != "" {
			if e := f.Value.Set(v); e != nil {
				err = usagef("%s=%q: %v", env, v, e)
			}
		}
	})
	return err
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("memwho serve")
	var f serveFlags
	f.register(fs)
	if err := applyEnv(fs); err != nil {
		return err
	}
	if err := parseFlags(fs, serveUsage, args, stdout); err != nil {
		return err
	}
	opt, err := f.options()
	if err != nil {
		return err
	}
	var lp listenPlan
	if !f.once {
		// Refuse a listener that would expose the figures before the
		// first walk, and before any socket exists. The web config and
		// its certificates are read here, before enterScan, with the
		// user's own rights.
		if lp, err = f.plan(); err != nil {
			return err
		}
	}
	procFS, err := enterScan("serve", f.procDir, f.conns && !f.fast, stderr)
	if err != nil {
		return err
	}
	defer procFS.Close()
	opt.Engine.FS = procFS

	a, err := agent.New(opt)
	if err != nil {
		return err
	}
	defer a.Close()

	if f.once {
		// One walk, waited for however long it takes.
		if !a.Refresh(ctx, 24*time.Hour) {
			return errors.New("the walk of /proc failed")
		}
		_, err := stdout.Write(a.WriteMetrics(nil))
		return err
	}

	servers, err := lp.listen(a.Handler(), opt.ScrapeTimeout, stderr)
	if err != nil {
		return err
	}
	errc := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errc <- s.serve() }()
	}

	// The first walk reads every process in full; start it now so that
	// the first scrape finds a snapshot.
	go a.Refresh(ctx, 0)

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

// listenPlan is what serve listens on, checked before anything is
// created.
type listenPlan struct {
	socket   string // "" for none
	sockGID  int    // -1: the process's group
	tcp      string // "" for none
	web      *agent.WebConfig
	debug    string
	debugGID int
}

// plan checks the listener flags. Without --socket and --listen the
// agent serves the default socket; --listen alone serves TCP only.
func (f *serveFlags) plan() (listenPlan, error) {
	p := listenPlan{socket: f.socket, tcp: f.listen, debug: f.debugSocket}
	if f.debugListen != "" {
		return p, usagef("--debug-listen was removed: pprof exposes the agent's memory and is served only on a unix socket; use --debug-socket PATH")
	}
	if p.socket == "" && p.tcp == "" {
		p.socket = agent.DefaultSocket
	}
	var err error
	if p.sockGID, err = groupID("--socket-group", f.socketGroup); err != nil {
		return p, err
	}
	if f.socketGroup != "" && p.socket == "" {
		return p, usagef("--socket-group: applies to --socket, and --listen alone serves no socket")
	}
	if p.debugGID, err = groupID("--debug-socket-group", f.debugSocketGroup); err != nil {
		return p, err
	}
	if f.debugSocketGroup != "" && p.debug == "" {
		return p, usagef("--debug-socket-group: applies to --debug-socket")
	}
	if p.debug != "" && p.debug == p.socket {
		return p, usagef("--debug-socket: %s is also the metrics socket", p.debug)
	}
	if p.tcp == "" {
		if f.webConfig != "" || f.noAuth {
			return p, usagef("--web-config and --no-auth apply to --listen ADDR; the unix socket is guarded by its permissions")
		}
		return p, nil
	}
	if _, _, err := net.SplitHostPort(p.tcp); err != nil {
		return p, usagef("--listen: %v", err)
	}
	switch {
	case f.webConfig != "" && f.noAuth:
		return p, usagef("--no-auth contradicts --web-config: choose one")
	case f.webConfig == "" && !f.noAuth:
		return p, usagef("--listen %s needs --web-config FILE (TLS, basic auth) to say who may read the figures, or --no-auth to let anyone who can connect read them", p.tcp)
	case f.webConfig != "":
		// Opened with the user's rights: the agent may hold
		// CAP_DAC_READ_SEARCH, and a YAML error quotes the file.
		p.web, err = agent.LoadWebConfig(f.webConfig, openInput)
		if errors.Is(err, agent.ErrNoAccessControl) {
			return p, usagef("--web-config: %v; --no-auth says that openly", err)
		}
		if err != nil {
			return p, fmt.Errorf("--web-config: %w", err)
		}
	}
	return p, nil
}

// groupID resolves --socket-group: a name from the group database or a
// number; "" is -1, the process's own group.
func groupID(flagName, name string) (int, error) {
	if name == "" {
		return -1, nil
	}
	if n, err := strconv.Atoi(name); err == nil && n >= 0 {
		return n, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return -1, usagef("%s: %v", flagName, err)
	}
	n, err := strconv.Atoi(g.Gid)
	if err != nil {
		return -1, usagef("%s: group %s has gid %q", flagName, name, g.Gid)
	}
	return n, nil
}

// server is one listener and the HTTP server on it.
type server struct {
	srv *http.Server
	ln  net.Listener
	tls bool
}

func (s *server) serve() error {
	if s.tls {
		// The certificate comes from TLSConfig.GetCertificate.
		return s.srv.ServeTLS(s.ln, "", "")
	}
	return s.srv.Serve(s.ln)
}

// listen creates the listeners of p and their servers; on error it
// closes those already made (which removes their socket files).
func (p listenPlan) listen(metrics http.Handler, scrapeTimeout time.Duration, stderr io.Writer) ([]*server, error) {
	var out []*server
	fail := func(err error) ([]*server, error) {
		for _, s := range out {
			s.ln.Close()
		}
		return nil, err
	}
	newServer := func(h http.Handler, ln net.Listener) *server {
		s := &server{ln: ln, srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			WriteTimeout:      scrapeTimeout + 30*time.Second,
			IdleTimeout:       2 * time.Minute,
		}}
		out = append(out, s)
		return s
	}
	if p.socket != "" {
		ln, err := agent.ListenUnix(p.socket, agent.SocketOptions{Mode: 0o660, GID: p.sockGID})
		if err != nil {
			return fail(fmt.Errorf("--socket: %w", err))
		}
		newServer(metrics, ln)
		fmt.Fprintf(stderr, "memwho: serving metrics on unix socket %s (curl --unix-socket %[1]s http://localhost/metrics)\n", ln.Addr())
	}
	if p.tcp != "" {
		ln, err := net.Listen("tcp", p.tcp)
		if err != nil {
			return fail(fmt.Errorf("--listen: %w", err))
		}
		h, scheme, how := metrics, "http", "no authentication"
		if p.web != nil {
			h = p.web.Handler(metrics)
			var ways []string
			if p.web.BasicAuth() {
				ways = append(ways, "basic auth")
			}
			if c := p.web.TLSConfig(); c != nil {
				scheme = "https"
				if c.ClientAuth == tls.RequireAndVerifyClientCert {
					ways = append(ways, "client certificates")
				}
			}
			how = strings.Join(ways, " and ")
		}
		s := newServer(h, ln)
		if p.web != nil && p.web.TLSConfig() != nil {
			s.srv.TLSConfig = p.web.TLSConfig()
			s.tls = true
		}
		fmt.Fprintf(stderr, "memwho: serving metrics on %s://%s/metrics (%s)\n", scheme, ln.Addr(), how)
		if p.web == nil {
			fmt.Fprintf(stderr, "memwho: warning: --no-auth: anyone who can connect to %s reads the figures\n", ln.Addr())
		} else if !s.tls && !loopback(p.tcp) {
			fmt.Fprintln(stderr, "memwho: warning: basic auth without tls_server_config: passwords cross the network in clear")
		}
	}
	if p.debug != "" {
		mode := os.FileMode(0o600)
		if p.debugGID >= 0 {
			mode = 0o660
		}
		ln, err := agent.ListenUnix(p.debug, agent.SocketOptions{Mode: mode, GID: p.debugGID})
		if err != nil {
			return fail(fmt.Errorf("--debug-socket: %w", err))
		}
		newServer(pprofMux(), ln).srv.WriteTimeout = 0 // profiles take --seconds
		fmt.Fprintf(stderr, "memwho: serving pprof on unix socket %s\n", ln.Addr())
	}
	return out, nil
}

// options validates the flags into agent options.
func (f *serveFlags) options() (agent.Options, error) {
	var opt agent.Options
	by, err := sample.ParseBy(f.by)
	if err != nil {
		return opt, usagef("--by: %v", err)
	}
	if by == sample.ByPID {
		return opt, usagef("--by pid would make one series per process; use --top-processes K")
	}
	if f.top < 0 || f.top > agent.MaxTopProcesses {
		return opt, usagef("--top-processes: %d is out of range 0..%d", f.top, agent.MaxTopProcesses)
	}
	if f.minInterval <= 0 {
		return opt, usagef("--min-interval: must be positive")
	}
	if f.scrapeTimeout <= 0 {
		return opt, usagef("--scrape-timeout: must be positive")
	}
	if f.fullEvery < 1 {
		return opt, usagef("--full-every: must be at least 1")
	}
	if !(f.walkBudget > 0 && f.walkBudget <= 1) { // NaN fails too
		return opt, usagef("--walk-budget: %g is not a fraction in (0, 1]", f.walkBudget)
	}
	return agent.Options{
		Engine: engine.Options{
			FullEvery:  f.fullEvery,
			WalkBudget: f.walkBudget,
			Fast:       f.fast,
			Conns:      f.conns,
		},
		By:            by,
		TopProcesses:  f.top,
		MinInterval:   f.minInterval,
		ScrapeTimeout: f.scrapeTimeout,
		Version:       buildVersion(),
	}, nil
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
