package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
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
  --listen ADDR          serve metrics on ADDR (default 127.0.0.1:9743)
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
  --debug-listen ADDR    serve net/http/pprof on ADDR, loopback only (off)
  --once                 print the metrics of one walk to stdout and exit

Every flag can also be set by an environment variable named MEMWHO_ and
the flag in capitals with - as _ (MEMWHO_LISTEN, MEMWHO_TOP_PROCESSES);
a flag on the command line wins. The agent needs CAP_SYS_PTRACE for exact
figures of other users' processes, and CAP_DAC_READ_SEARCH with it for
their TCP connections (contrib/memwho.service grants both).

Examples:
  memwho serve
  memwho serve --listen :9743 --by cgroup --top-processes 20
  MEMWHO_LISTEN=0.0.0.0:9743 memwho serve
  memwho serve --once | promtool check metrics
`

// defaultListen is the agent's address: loopback, so that nothing is
// exposed until someone chooses to. Port 9743 is in the range Prometheus
// exporters use (9100-9999) and not in /etc/services; see docs/agent.md.
const defaultListen = "127.0.0.1:9743"

type serveFlags struct {
	listen, by, procDir, debugListen string
	top, fullEvery                   int
	conns, fast, once                bool
	minInterval, scrapeTimeout       time.Duration
	walkBudget                       float64
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "listen", defaultListen, "")
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
	fs := newFlagSet("memwho serve", serveUsage, stderr)
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

	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	srv := &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      opt.ScrapeTimeout + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stderr, "memwho: serving metrics on http://%s/metrics\n", ln.Addr())

	var dbg *http.Server
	if f.debugListen != "" {
		dln, err := net.Listen("tcp", f.debugListen)
		if err != nil {
			srv.Close()
			return fmt.Errorf("--debug-listen: %w", err)
		}
		dbg = &http.Server{Handler: pprofMux(), ReadHeaderTimeout: 10 * time.Second}
		go func() { errc <- dbg.Serve(dln) }()
		fmt.Fprintf(stderr, "memwho: serving pprof on http://%s/debug/pprof/\n", dln.Addr())
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
	srv.Shutdown(sctx)
	if dbg != nil {
		dbg.Shutdown(sctx)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
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
	if !f.once {
		if _, _, err := net.SplitHostPort(f.listen); err != nil {
			return opt, usagef("--listen: %v", err)
		}
	}
	if f.debugListen != "" {
		if err := loopbackOnly(f.debugListen); err != nil {
			return opt, usagef("--debug-listen: %v", err)
		}
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

// loopbackOnly accepts HOST:PORT whose host is a loopback address or
// "localhost": pprof exposes memory contents and must not leave the host.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q is not a loopback address (use 127.0.0.1 or [::1]): pprof must not be reachable from the network", host)
	}
	return nil
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
