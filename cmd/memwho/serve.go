package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/memwho/memwho/internal/agent"
	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/sample"
)

var serveUsage = usage("serve")

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

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("memwho serve")
	var f serveFlags
	f.register(fs)
	if err := cli.ApplyEnv(fs); err != nil {
		return err
	}
	if err := parseFlags(fs, serveUsage, args, stdout); err != nil {
		return err
	}
	opt, err := f.options()
	if err != nil {
		return err
	}
	var lp agent.Listeners
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

	servers, err := lp.Listen(a.Handler(), opt.ScrapeTimeout, stderr)
	if err != nil {
		return err
	}
	// The first walk reads every process in full; start it now so that
	// the first scrape finds a snapshot.
	go a.Refresh(ctx, 0)
	return agent.Serve(ctx, servers)
}

// plan checks the listener flags. Without --socket and --listen the
// agent serves the default socket; --listen alone serves TCP only.
func (f *serveFlags) plan() (agent.Listeners, error) {
	p := agent.Listeners{Socket: f.socket, TCP: f.listen, Debug: f.debugSocket}
	if f.debugListen != "" {
		return p, usagef("--debug-listen was removed: pprof exposes the agent's memory and is served only on a unix socket; use --debug-socket PATH")
	}
	if p.Socket == "" && p.TCP == "" {
		p.Socket = agent.DefaultSocket
	}
	var err error
	if p.SocketGID, err = cli.GroupID("--socket-group", f.socketGroup); err != nil {
		return p, err
	}
	if f.socketGroup != "" && p.Socket == "" {
		return p, usagef("--socket-group: applies to --socket, and --listen alone serves no socket")
	}
	if p.DebugGID, err = cli.GroupID("--debug-socket-group", f.debugSocketGroup); err != nil {
		return p, err
	}
	if f.debugSocketGroup != "" && p.Debug == "" {
		return p, usagef("--debug-socket-group: applies to --debug-socket")
	}
	if p.Debug != "" && p.Debug == p.Socket {
		return p, usagef("--debug-socket: %s is also the metrics socket", p.Debug)
	}
	if p.TCP == "" {
		if f.webConfig != "" || f.noAuth {
			return p, usagef("--web-config and --no-auth apply to --listen ADDR; the unix socket is guarded by its permissions")
		}
		return p, nil
	}
	if _, _, err := net.SplitHostPort(p.TCP); err != nil {
		return p, usagef("--listen: %v", err)
	}
	switch {
	case f.webConfig != "" && f.noAuth:
		return p, usagef("--no-auth contradicts --web-config: choose one")
	case f.webConfig == "" && !f.noAuth:
		return p, usagef("--listen %s needs --web-config FILE (TLS, basic auth) to say who may read the figures, or --no-auth to let anyone who can connect read them", p.TCP)
	case f.webConfig != "":
		// Opened with the user's rights: the agent may hold
		// CAP_DAC_READ_SEARCH, and a YAML error quotes the file.
		p.Web, err = agent.LoadWebConfig(f.webConfig, openInput)
		if errors.Is(err, agent.ErrNoAccessControl) {
			return p, usagef("--web-config: %v; --no-auth says that openly", err)
		}
		if err != nil {
			return p, fmt.Errorf("--web-config: %w", err)
		}
	}
	return p, nil
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
