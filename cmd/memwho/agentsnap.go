package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
)

// agentFlags choose between the agent's latest snapshot and a walk of
// /proc (report and watch).
type agentFlags struct {
	fresh  bool
	socket string
	maxAge time.Duration
}

// defaultAgentSocket is --agent-socket's default. The tests clear it:
// an agent running on the test machine must not answer for /proc.
var defaultAgentSocket = snapshot.DefaultSocket

func (f *agentFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.fresh, "fresh", false, "")
	fs.StringVar(&f.socket, "agent-socket", defaultAgentSocket, "")
	f.maxAge = snapshot.DefaultMaxAge
	fs.Var((*cli.Seconds)(&f.maxAge), "max-age", "")
}

// agentNeeds is what the command will do with the snapshot: a snapshot
// that lacks it is not used.
type agentNeeds struct {
	by     sample.By
	conns  bool
	system bool
}

// fetch returns the agent's latest snapshot when one may be used: no
// --fresh, the kernel's /proc (an agent snapshot is of the host), an
// agent listening on --agent-socket that lets this user connect (its
// socket's group decides), a snapshot at most --max-age old that holds
// what the command needs. Otherwise it returns false, and a note for the
// user when an agent answered but could not be used; the caller walks
// /proc and prints the note once the walk has given up its capabilities
// (a write to stderr can block).
//
// The socket is opened with the user's own rights: no capability is
// effective before privilege.EnterScan. When the snapshot is used, every
// capability is given up for good before anything is written, and one
// note on stderr says how old the figures are.
func (f *agentFlags) fetch(ctx context.Context, procDir string, need agentNeeds, stderr io.Writer) (snap *sample.Snapshot, used bool, note string, err error) {
	if f.fresh || f.socket == "" || procDir != proc.DefaultRoot {
		return nil, false, "", nil
	}
	snap = new(sample.Snapshot)
	taken, err := fetchAgent(ctx, f.socket, snap)
	if errors.Is(err, cli.ErrInterrupted) {
		return nil, false, "", err
	}
	if err == nil {
		err = snapshot.Check(snap)
	}
	var why string
	switch {
	case errors.Is(err, snapshot.ErrUnavailable):
		return nil, false, "", nil
	case err != nil:
		why = err.Error()
	case time.Since(taken) > f.maxAge:
		why = fmt.Sprintf("its snapshot is %s old (--max-age %s)", age(time.Since(taken)), f.maxAge)
	case time.Until(taken) > f.maxAge:
		// Dated ahead (a clock stepped back, or a server that lies):
		// its age is unknown, and it would pass --max-age until the
		// clock caught up.
		why = fmt.Sprintf("its snapshot is dated %s in the future (--max-age %s)", age(time.Until(taken)), f.maxAge)
	case need.conns && !snap.ConnsOK:
		why = "its snapshot has no TCP counts (--conns)"
	case need.system && !snap.MeminfoOK:
		why = "its snapshot has no meminfo (--system)"
	case !hasDetail(snap, need.by):
		why = fmt.Sprintf("its snapshot lacks what --by %s needs", need.by)
	case estimatesByChoice(snap):
		// Every row would be marked ~ with a reason that is not the
		// one: the walk gives exact figures.
		why = "its snapshot holds RSS-based estimates only (memwho-agent serve --fast)"
	}
	if why != "" {
		// A stale or broken agent is worth knowing about: every run
		// pays for asking it.
		return nil, false, "memwho: note: not using memwho-agent: " + cli.OneLine(why) + "; walked /proc", nil
	}
	if err := privilege.Drop(); err != nil {
		return nil, false, "", err
	}
	fmt.Fprintf(stderr, "memwho: figures from memwho-agent, %s old%s (--fresh reads /proc now)\n", age(time.Since(taken)), staleNote(snap))
	return snap, true, "", nil
}

// fetchAgent is snapshot.Fetch, given up on when ctx ends first (a
// signal while an agent takes its second to answer, or never does): the
// command then ends at once with cli.ErrInterrupted, the fetch's own
// goroutine left to its timeout.
func fetchAgent(ctx context.Context, socket string, snap *sample.Snapshot) (time.Time, error) {
	type answer struct {
		taken time.Time
		err   error
	}
	into := new(sample.Snapshot)
	done := make(chan answer, 1)
	go func() {
		taken, err := snapshot.Fetch(socket, snapshot.DefaultFetchTimeout, into)
		done <- answer{taken, err}
	}()
	select {
	case a := <-done:
		*snap = *into
		return a.taken, a.err
	case <-ctx.Done():
		return time.Time{}, cli.ErrInterrupted
	}
}

// staleNote says how stale an agent's figures may be, when that matters:
// the agent walks again only the processes that changed, so the others'
// figures come from earlier walks, and the pages they share may have been
// mapped or unmapped by others since (docs/agent.md, error bound): they
// are not exact, and the note says so. Below 1% of the processes'
// RAM the bound is left out: every incremental walk has some.
func staleNote(snap *sample.Snapshot) string {
	var total uint64
	for i := range snap.Procs {
		total += snap.Procs[i].RAM
	}
	if snap.StaleBound == 0 || snap.StaleBound < total/100 || snap.Oldest.IsZero() {
		return ""
	}
	return fmt.Sprintf("; unchanged processes' figures are up to %s old, and their sum may be off by up to %s",
		age(time.Since(snap.Oldest)), report.HumanBytes(nil, snap.StaleBound))
}

// estimatesByChoice reports whether the snapshot's estimates were chosen
// (the agent's --fast: CauseNone), not forced by a refused walk.
func estimatesByChoice(snap *sample.Snapshot) bool {
	for i := range snap.Procs {
		if p := &snap.Procs[i]; p.Accuracy == sample.Estimate && p.Cause == sample.CauseNone {
			return true
		}
	}
	return false
}

// hasDetail reports whether the snapshot's processes carry what grouping
// by needs: the uid for users, the cgroup paths for cgroups, units,
// slices and containers. An agent serving snapshots reads both for every
// process.
func hasDetail(snap *sample.Snapshot, by sample.By) bool {
	switch {
	case by == sample.ByUser:
		for i := range snap.Procs {
			if !snap.Procs[i].UIDKnown {
				return false
			}
		}
	case by.NeedsCgroup():
		for i := range snap.Procs {
			if snap.Procs[i].Cgroup != "" || snap.Procs[i].SystemdCgroup != "" {
				return true
			}
		}
		return len(snap.Procs) == 0
	}
	return true
}

// age prints a duration to a tenth of a second.
func age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Round(100 * time.Millisecond).String()
}
