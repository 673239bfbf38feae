package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/memwho/memwho/internal/agent"
	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/container"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot/snapserve"
)

func serveUsage() string { return usage("serve") }

type serveFlags struct {
	by, procDir                string
	top, fullEvery             int
	conns, fast, once          bool
	minInterval, scrapeTimeout time.Duration
	idleAfter                  time.Duration
	walkBudget                 float64
	listen                     agent.ListenFlags
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen.Socket, "socket", "", "")
	fs.StringVar(&f.listen.SocketGroup, "socket-group", "", "")
	fs.StringVar(&f.listen.TCP, "listen", "", "")
	fs.StringVar(&f.listen.WebConfig, "web-config", "", "")
	fs.BoolVar(&f.listen.NoAuth, "no-auth", false, "")
	fs.StringVar(&f.listen.DebugSocket, "debug-socket", "", "")
	fs.StringVar(&f.listen.DebugSocketGroup, "debug-socket-group", "", "")
	fs.StringVar(&f.listen.SnapshotSocket, "snapshot-socket", "", "")
	fs.IntVar(&f.listen.MaxConnections, "max-connections", agent.DefaultMaxConnections, "")
	fs.StringVar(&f.by, "by", "program", "")
	fs.IntVar(&f.top, "top-processes", 0, "")
	fs.BoolVar(&f.conns, "conns", true, "")
	fs.DurationVar(&f.minInterval, "min-interval", agent.DefaultMinInterval, "")
	fs.DurationVar(&f.scrapeTimeout, "scrape-timeout", agent.DefaultScrapeTimeout, "")
	fs.DurationVar(&f.idleAfter, "idle-after", agent.DefaultIdleAfter, "")
	fs.IntVar(&f.fullEvery, "full-every", 20, "")
	fs.Float64Var(&f.walkBudget, "walk-budget", engine.DefaultWalkBudget, "")
	fs.BoolVar(&f.fast, "fast", false, "")
	fs.StringVar(&f.procDir, "proc", "/proc", "")
	fs.StringVar(&f.listen.DebugListen, "debug-listen", "", "")
	fs.BoolVar(&f.once, "once", false, "")
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("memwho serve")
	var f serveFlags
	f.register(fs)
	if err := cli.ApplyEnv(fs); err != nil {
		return err
	}
	if err := cli.Parse(fs, serveUsage(), args, stdout); err != nil {
		return err
	}
	fs.Visit(func(fl *flag.Flag) { f.listen.SnapshotSet = f.listen.SnapshotSet || fl.Name == "snapshot-socket" })
	opt, err := f.options()
	if err != nil {
		return err
	}
	// Refuse a listener that would expose the figures before the first
	// walk, and before any socket exists. The web config and its
	// certificates are read here, before enterScan, with the user's own
	// rights. --once serves nothing, but its listener flags are checked
	// all the same: a unit file tried with --once must not hide a
	// mistake (audit of 2026-11-26: --once accepted --listen without
	// auth, a missing --web-config, --debug-listen).
	lp, err := f.listen.Plan(openWebFile)
	if err != nil {
		return err
	}
	if f.once {
		lp = agent.Listeners{}
	} else if opt.Engine.OtherFiles, err = lp.CheckFileLimit(); err != nil {
		return err
	}
	// Snapshots served to memwho carry what any grouping needs.
	opt.FullDetail = lp.Snapshot != ""
	procFS, err := privilege.EnterScan("serve", f.procDir, f.conns && !f.fast, stderr)
	if err != nil {
		return err
	}
	defer procFS.Close()
	opt.Engine.FS = procFS
	if root := container.RootFor(f.procDir); root != "" {
		opt.SysRoot = filepath.Join(root, "sys")
	}

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
	snapLn, err := lp.ListenSnapshot(stderr)
	if err != nil {
		for _, s := range servers {
			s.Close() // removes socket files
		}
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	if snapLn != nil {
		wg.Go(func() {
			srv := snapserve.Server{Latest: a.Latest, Logf: func(format string, args ...any) {
				fmt.Fprintf(stderr, "memwho: "+format+"\n", args...)
			}}
			srv.Serve(ctx, snapLn)
		})
	}
	// Walks run on the agent's own clock, the first at once (every
	// process read in full), so that the first scrape finds a snapshot.
	wg.Go(func() { a.Run(ctx) })
	err = agent.Serve(ctx, servers)
	cancel()
	wg.Wait()
	return err
}

// openWebFile opens a file the web configuration names with the user's
// rights, without blocking on a FIFO (the agent then refuses anything but
// a regular file: agent.OpenFunc). It is called again for a renewed
// certificate while the walk holds the capabilities a unit granted:
// privilege.OpenOwnRights opens with the user's rights all the same
// (privilege.OpenFile would refuse, and the renewal be missed).
func openWebFile(path string) (*os.File, error) {
	return privilege.OpenOwnRights(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// options validates the flags into agent options.
func (f *serveFlags) options() (agent.Options, error) {
	by, err := sample.ParseBy(f.by)
	if err != nil {
		return agent.Options{}, cli.Usagef("--by: %v", err)
	}
	if f.idleAfter < 0 {
		return agent.Options{}, cli.Usagef("--idle-after: must not be negative (0s never pauses)")
	}
	opt := agent.Options{
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
		IdleAfter:     idleAfter(f.idleAfter),
		Version:       buildVersion(),
	}
	return opt, opt.Check()
}

// idleAfter maps --idle-after to agent.Options.IdleAfter, where 0 means
// the default and a negative value never pauses.
func idleAfter(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
