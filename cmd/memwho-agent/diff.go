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
	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/progress"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
	"github.com/memwho/memwho/internal/store"
)

func diffUsage() string { return usage("diff") }

// defaultAgentSocket is where diff asks for the agent's latest snapshot
// as "now". The tests clear it: an agent running on the test machine
// must not answer for their /proc.
var defaultAgentSocket = snapshot.DefaultSocket

type diffFlags struct {
	history         historyFlags
	since, to, host string
	by, filter      string
	procDir, socket string
	top             int
	asJSON, fresh   bool
	fast, quiet     bool
}

// meteredStore counts the samples a read of the history goes through on
// a progress line (a big history on a slow server).
type meteredStore struct {
	store.Store
	m *progress.Meter
}

func (s meteredStore) Samples(ctx context.Context, q store.Query, fn func(*store.Sample) error) error {
	return s.Store.Samples(ctx, q, func(x *store.Sample) error {
		s.m.Add(1)
		return fn(x)
	})
}

func runDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("memwho diff")
	var f diffFlags
	f.history.register(fs)
	fs.StringVar(&f.since, "since", "", "")
	fs.StringVar(&f.to, "to", "", "")
	fs.StringVar(&f.host, "host", "", "")
	fs.StringVar(&f.by, "by", "program", "")
	fs.StringVar(&f.filter, "filter", "", "")
	fs.IntVar(&f.top, "top", 0, "")
	fs.BoolVar(&f.asJSON, "json", false, "")
	fs.StringVar(&f.procDir, "proc", proc.DefaultRoot, "")
	fs.BoolVar(&f.fast, "fast", false, "")
	fs.BoolVar(&f.fresh, "fresh", false, "")
	fs.BoolVar(&f.quiet, "quiet", false, "")
	fs.StringVar(&f.socket, "agent-socket", defaultAgentSocket, "")
	if err := cli.Parse(fs, diffUsage(), args, stdout); err != nil {
		var ue *cli.UsageError
		if errors.As(err, &ue) && fs.NArg() > 0 {
			return cli.Usagef("--since compares with the history, not with snapshot files (memwho diff BEFORE AFTER compares files)")
		}
		return err
	}
	if f.since == "" {
		return cli.Usagef("--since DURATION is required (memwho diff BEFORE AFTER compares snapshot files)")
	}
	kind, err := store.ParseKind(f.by)
	if err != nil || kind == store.KindProcess {
		return cli.Usagef("--by: want program, user, cgroup, unit, slice or container (what record --groups stores), got %q", f.by)
	}
	re, err := cli.CompileFilter(f.filter)
	if err != nil {
		return err
	}
	if f.top < 0 {
		return cli.Usagef("--top: must not be negative")
	}
	now := time.Now()
	then, err := cli.ParseTime(f.since, now)
	if err != nil {
		return cli.Usagef("--since: %v", err)
	}
	var to time.Time
	if f.to != "" {
		if to, err = cli.ParseTime(f.to, now); err != nil {
			return cli.Usagef("--to: %v", err)
		}
		if !to.After(then) {
			return cli.Usagef("--to must be later than --since")
		}
	}
	self, err := os.Hostname()
	if err != nil && f.host == "" {
		return fmt.Errorf("host name: %w (use --host)", err)
	}
	host := f.host
	if host == "" {
		host = self
	}
	if f.to == "" && host != self {
		return cli.Usagef("--host %s is not this host: compare two times of its history with --to", cli.OneLine(host))
	}
	db, err := f.history.target()
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, db, store.OpenOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer st.Close()
	if progress.Show(stderr, f.quiet) {
		// Drawn only when the reads take longer than progress.Interval.
		m := progress.Start(stderr, true, "diff", "samples", 0)
		st = meteredStore{st, m}
		defer m.Done()
	}

	var sides [2]report.DiffSide
	var groups [2][]sample.Group
	histName := "history of " + host
	if groups[0], sides[0].Taken, err = store.GroupsAt(ctx, st, host, kind, then, now); err != nil {
		return err
	}
	sides[0].Name = histName
	if f.to != "" {
		groups[1], sides[1].Taken, err = store.GroupsAt(ctx, st, host, kind, to, now)
		sides[1].Name = histName
	} else {
		groups[1], sides[1], err = f.nowGroups(kind, stderr)
	}
	if err != nil {
		return err
	}
	for i := range groups {
		groups[i] = sample.Filter(groups[i], re)
	}
	changes := sample.Diff(groups[0], groups[1])
	if f.top > 0 && len(changes) > f.top {
		changes = changes[:f.top]
	}
	if ctx.Err() != nil {
		return cli.ErrInterrupted
	}
	if f.asJSON {
		return report.DiffJSON(stdout, changes, sides[0], sides[1], kind.String())
	}
	return report.DiffTable(stdout, changes, sides[0], sides[1], report.KeyHeader(store.ByOf(kind)))
}

// nowGroups returns the groups of kind k now: from the agent's latest
// snapshot when it answers on --agent-socket with one at most
// snapshot.DefaultMaxAge old (and neither --fresh nor --proc say
// otherwise), else from a walk of --proc with this user's rights.
func (f *diffFlags) nowGroups(k store.Kind, stderr io.Writer) ([]sample.Group, report.DiffSide, error) {
	snap, side, err := f.nowSnapshot(k, stderr)
	if err != nil {
		return nil, side, err
	}
	// The same builder as record's, so that keys match the recorded ones
	// byte for byte.
	b := store.Builder{Kinds: []store.Kind{k}, Containers: container.NewNames(container.RootFor(f.procDir))}
	var s store.Sample
	b.Fill(&s, snap)
	return store.GroupsOf(&s, k), side, nil
}

func (f *diffFlags) nowSnapshot(k store.Kind, stderr io.Writer) (*sample.Snapshot, report.DiffSide, error) {
	snap := new(sample.Snapshot)
	if !f.fresh && f.socket != "" && f.procDir == proc.DefaultRoot {
		taken, err := snapshot.Fetch(f.socket, snapshot.DefaultFetchTimeout, snap)
		switch {
		case errors.Is(err, snapshot.ErrUnavailable):
		case err != nil:
			fmt.Fprintf(stderr, "memwho: note: not using memwho-agent: %s; walked /proc\n", cli.OneLine(err.Error()))
		case store.AbsDuration(time.Since(taken)) > snapshot.DefaultMaxAge:
			fmt.Fprintf(stderr, "memwho: note: not using memwho-agent: its snapshot is %s old; walked /proc\n", time.Since(taken).Round(100*time.Millisecond))
		default:
			return snap, report.DiffSide{Name: "memwho-agent snapshot", Taken: taken}, nil
		}
	}
	fs, err := proc.Open(f.procDir)
	if err != nil {
		return nil, report.DiffSide{}, err
	}
	defer fs.Close()
	sc, err := engine.New(engine.Options{FS: fs, OneShot: true, Fast: f.fast, NeedUID: k == store.KindUser, NeedCgroup: k != store.KindProgram && k != store.KindUser})
	if err != nil {
		return nil, report.DiffSide{}, err
	}
	defer sc.Close()
	*snap = sample.Snapshot{}
	if err := sc.Scan(snap); err != nil {
		return nil, report.DiffSide{}, err
	}
	if snap.Denied > 0 {
		// memwho-agent holds no capability in the privileged install:
		// what memwho report reads exactly may be an estimate here.
		fmt.Fprintf(stderr, "memwho: note: now, %d processes are RSS-based estimates (marked ~): their exact figures were refused; diff --since walks /proc as memwho-agent, with your own rights and no capability, so other users' processes are estimates unless memwho serve's snapshot is used\n", snap.Denied)
	}
	return snap, report.DiffSide{Name: cli.OneLine(f.procDir), Taken: snap.Time}, nil
}
