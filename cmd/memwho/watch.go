package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/container"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
	"github.com/memwho/memwho/internal/watch"
)

func watchUsage() string { return usage("watch") }

func runWatch(ctx context.Context, hangup <-chan struct{}, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("memwho watch")
	var (
		interval                time.Duration
		by, filter, sortCol, pr string
		count                   int
		plain, fast, conns      bool
		agentF                  agentFlags
		from                    string
	)
	interval = 2 * time.Second
	fs.Var((*cli.Seconds)(&interval), "interval", "")
	fs.Var((*cli.Seconds)(&interval), "n", "")
	fs.StringVar(&by, "by", "program", "")
	fs.StringVar(&filter, "filter", "", "")
	fs.StringVar(&sortCol, "sort", "ram", "")
	fs.IntVar(&count, "count", 0, "")
	fs.BoolVar(&plain, "plain", false, "")
	fs.BoolVar(&fast, "fast", false, "")
	fs.BoolVar(&conns, "conns", false, "")
	fs.StringVar(&pr, "proc", "/proc", "")
	agentF.register(fs)
	fs.StringVar(&from, "from", "", "")
	if err := cli.Parse(fs, watchUsage(), args, stdout); err != nil {
		return err
	}
	if err := cli.NoEmpty(fs, "from", "proc"); err != nil {
		return err
	}
	if err := excludesFrom(fs); err != nil {
		return err
	}
	opt := watch.Options{Interval: interval, Count: count, Fast: fast, Conns: conns, Hangup: hangup}
	var err error
	if interval <= 0 {
		return cli.Usagef("--interval: must be positive")
	}
	if count < 0 {
		return cli.Usagef("--count: must not be negative")
	}
	if opt.By, err = sample.ParseBy(by); err != nil {
		return cli.Usagef("--by: %v", err)
	}
	if opt.Sort, err = watch.ParseSort(sortCol); err != nil {
		return cli.Usagef("--sort: %v", err)
	}
	if opt.Filter, err = cli.CompileFilter(filter); err != nil {
		return err
	}

	live := watch.TUI && !plain && report.IsTerminal(stdout) && os.Getenv("TERM") != "dumb"
	var (
		snap      *sample.Snapshot
		fromAgent bool
		note      string
		// askCtx bounds waits for the agent: a signal or the
		// terminal's hang-up ends them. The view keeps ctx, which the
		// hang-up does not end: it tells the two apart (it gives
		// nothing back to a terminal that is gone).
		askCtx = ctx
	)
	if from != "" {
		if snap, err = readSnapshotFile(ctx, from, stderr); err != nil {
			return err
		}
	} else {
		// The agent's answer is waited for until a signal or the
		// terminal's hang-up, which end the watch there (status 0, as
		// they end it later), within cli.StopWithin.
		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-hangup:
				cancel()
			case <-fctx.Done():
			}
		}()
		askCtx = fctx
		snap, fromAgent, note, err = agentF.fetch(askCtx, pr, agentNeeds{by: opt.By, conns: conns}, stderr)
		if errors.Is(err, cli.ErrInterrupted) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	var s watch.Sampler
	if from != "" {
		// A snapshot file: one moment, shown as it was.
		s = &agentSampler{first: snap, file: snap}
		opt.Source = "from " + from
		opt.Fast = false
	} else if fromAgent {
		// The agent walks on its own clock; every refresh asks it for
		// its latest snapshot, and the view shows when it was taken.
		s = &agentSampler{ctx: askCtx, socket: agentF.socket, first: snap}
		opt.Source = "from memwho-agent"
		opt.Fast = false
	} else {
		// The sampling engine re-walks a process's page tables only
		// when its resident size moved (and every process at least
		// every 60 ticks): the right cost for a view that refreshes
		// every few seconds. The note is written before the engine
		// takes its capabilities, which it holds for the whole watch:
		// a write to stderr can block.
		if note != "" {
			fmt.Fprintln(stderr, note)
		}
		walker, stop, err := watchSampler(ctx, pr, engine.Options{
			Fast: fast,
			// The live view switches grouping with a key and keeps the
			// history of every grouping, so it reads what all of them
			// need.
			NeedUID:    live || opt.By == sample.ByUser,
			NeedCgroup: live || opt.By.NeedsCgroup(),
			Conns:      conns,
		}, interval, stderr)
		if errors.Is(err, cli.ErrInterrupted) {
			return nil
		}
		if err != nil {
			return err
		}
		defer stop()
		s = walker
	}
	opt.Containers = container.NewNames(container.RootFor(pr))

	if live {
		opt.Color = report.UseColor(stdout)
		return watch.RunTUI(ctx, s, opt)
	}
	who := scanner(from, fromAgent)
	return watch.RunPlain(ctx, stdout, s, opt, func(snap *sample.Snapshot, shown []sample.Group) {
		report.Warn(stderr, snap, snap.Procs, shown, fast, who)
	})
}

// agentSampler gives watch the agent's latest snapshot at each refresh.
type agentSampler struct {
	ctx    context.Context
	socket string
	first  *sample.Snapshot
	// file, for --from FILE, is given again at every refresh.
	file *sample.Snapshot
}

// Scan fills snap with the agent's latest snapshot (the one fetched at
// start first). An agent that stops answering ends the watch with its
// error: walking /proc instead would need the capabilities given up
// when the agent was chosen.
func (a *agentSampler) Scan(snap *sample.Snapshot) error {
	if a.first != nil {
		*snap, a.first = *a.first, nil
		return nil
	}
	if a.file != nil {
		*snap = *a.file
		return nil
	}
	_, err := fetchAgent(a.ctx, a.socket, snap)
	if errors.Is(err, cli.ErrInterrupted) {
		return err
	}
	if err == nil {
		err = snapshot.Check(snap)
	}
	if err == nil && estimatesByChoice(snap) {
		// An agent restarted with --fast: its estimates were shown
		// as a refused walk's, as the first fetch refuses them
		// (seventeenth review).
		err = errors.New("memwho-agent now serves RSS-based estimates only (memwho-agent serve --fast)")
	}
	if err != nil {
		return fmt.Errorf("%w (memwho watch --fresh walks /proc itself)", err)
	}
	return nil
}
