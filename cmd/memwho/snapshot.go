package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/memwho/memwho/internal/atomicfile"
	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/container"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
)

func snapshotUsage() string { return usage("snapshot") }

func diffUsage() string { return usage("diff") }

// runSnapshot writes what a report needs, for every process, to a
// snapshot file (docs/snapshot.md): from the agent's latest snapshot when
// one is there (as the report), else from a walk of /proc.
func runSnapshot(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := cli.NewFlagSet("memwho snapshot")
	var (
		out, procDir string
		fast, conns  bool
		agentF       agentFlags
	)
	fs.StringVar(&out, "o", "", "")
	fs.StringVar(&out, "output", "", "")
	fs.StringVar(&procDir, "proc", "/proc", "")
	fs.BoolVar(&fast, "fast", false, "")
	fs.BoolVar(&conns, "conns", false, "")
	agentF.register(fs)
	if err := cli.Parse(fs, snapshotUsage(), args, stdout); err != nil {
		return err
	}
	if err := cli.NoEmpty(fs, "o", "output", "proc"); err != nil {
		return err
	}
	// The file is opened before the walk, with the user's rights, as a
	// redirection of the shell would be.
	var w io.Writer = stdout
	if out == "-" {
		out = "" // standard output, as for export -o -
	}
	if out != "" {
		// "f, ferr": the deferred functions below must see the
		// function's result, err. With "f, err :=" they saw this
		// block's own err, nil once the file was created, so every
		// failure after it (an interruption, a refused --proc, a
		// scan error) committed the empty file over the old
		// snapshot, and a failed Commit would be lost: exit 0.
		f, ferr := atomicfile.CreateAsUser(out)
		if ferr != nil {
			return fmt.Errorf("-o: %w", ferr)
		}
		defer func() {
			if err != nil {
				f.Abort()
			}
		}()
		w = f
		defer func() {
			if err == nil {
				err = f.Commit()
			}
		}()
		// Warnings go to stderr while the temporary file is open.
		defer cli.CatchPipe()()
	} else if report.IsTerminal(stdout) {
		return cli.Usagef("a snapshot is binary: write it with -o FILE or redirect standard output")
	}
	// The zram devices of the host the tree is of, read as the report's
	// --system reads them, so that the file carries the ledger's line.
	var zram uint64
	var zramErr error
	if root := container.RootFor(procDir); root != "" {
		zram, zramErr = proc.ZramUsed(filepath.Join(root, "sys"))
	}
	snap, fromAgent, note, err := agentF.fetch(ctx, procDir, agentNeeds{by: sample.ByUnit, conns: conns, system: true}, stderr)
	if err != nil {
		return err
	}
	if !fromAgent {
		var warnings []string
		// Everything any grouping needs: uid, cgroups and names.
		snap, warnings, err = scanOnce(ctx, procDir, engine.Options{Fast: fast, NeedUID: true, NeedCgroup: true}, conns, false, stderr)
		if err != nil {
			return err
		}
		for _, w := range append(warnings, note) {
			if w != "" {
				fmt.Fprintln(stderr, w)
			}
		}
	}
	// When the figures were read: the agent's walk, not this copy of it
	// (a diff's "later" and the report's time come from here).
	taken := snap.Time
	if taken.IsZero() {
		taken = time.Now()
	}
	if ctx.Err() != nil {
		return cli.ErrInterrupted
	}
	// An agent that reads zram itself has the figure of its walk.
	if snap.MeminfoOK && snap.Meminfo.Zram == 0 {
		snap.Meminfo.Zram = zram
	}
	if zramErr != nil {
		fmt.Fprintf(stderr, "memwho: zram: %v: the snapshot counts the devices read before it\n", zramErr)
	}
	return snapshot.WriteFile(w, snap, taken)
}

// openSnapshot opens a snapshot file the user named, with their rights
// (privilege.OpenInput); "-" is standard input, as for export -o, not a
// file named "-". A directory is refused here:
// reading it failed as "not a gzip stream".
func openSnapshot(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	f, err := privilege.OpenInput(path)
	if err != nil {
		return nil, privilege.UnwrapPath(err)
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: is a directory, not a snapshot file", path)
	}
	return f, nil
}

// snapshotName is how messages and diff's header name a snapshot file.
func snapshotName(path string) string {
	if path == "-" {
		return "standard input"
	}
	return path
}

// readSnapshotFile reads a snapshot file the user named, with their
// rights and no capability (every one is given up first: nothing is
// walked), and says on stderr when it was taken.
func readSnapshotFile(ctx context.Context, path string, stderr io.Writer) (*sample.Snapshot, error) {
	if err := privilege.Drop(); err != nil {
		return nil, err
	}
	snap, taken, err := readSnapshot(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	fmt.Fprintf(stderr, "memwho: figures from %s, taken %s\n", cli.OneLine(snapshotName(path)), taken.Format(time.RFC3339))
	return snap, nil
}

// readSnapshot opens, reads and checks (snapshot.Check) a snapshot file
// and returns it with when it was taken. A file that never ends (standard
// input from a stalled pipe or a terminal, a FIFO nobody opens for
// writing) is left at ctx's end, with cli.ErrInterrupted: diff and
// watch catch SIGINT to end cleanly, and the first one was lost while
// the read blocked. The errors of the read name the
// file; those of the open name it already.
func readSnapshot(ctx context.Context, path string) (*sample.Snapshot, time.Time, error) {
	type result struct {
		snap  *sample.Snapshot
		taken time.Time
		err   error
	}
	done := make(chan result, 1)
	go func() {
		f, err := openSnapshot(path)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer f.Close()
		snap := new(sample.Snapshot)
		taken, err := snapshot.ReadFile(f, snap)
		if err == nil {
			err = snapshot.Check(snap)
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", cli.OneLine(snapshotName(path)), err)
		}
		done <- result{snap, taken, err}
	}()
	select {
	case r := <-done:
		return r.snap, r.taken, r.err
	case <-ctx.Done():
		return nil, time.Time{}, cli.ErrInterrupted
	}
}

// runDiff compares two snapshot files group by group.
func runDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("memwho diff")
	var (
		by, filter string
		top        int
		asJSON     bool
	)
	fs.StringVar(&by, "by", "program", "")
	fs.StringVar(&filter, "filter", "", "")
	fs.IntVar(&top, "top", 0, "")
	fs.BoolVar(&asJSON, "json", false, "")
	// The history's flags: memwho-agent reads them (runAgent), since only
	// it links the store. They are parsed here all the same, so that
	// what is handed over is decided by the flags as parsed.
	var since, to, db, host, procDir, socket string
	var fast, fresh, quiet bool
	fs.StringVar(&since, "since", "", "")
	fs.StringVar(&to, "to", "", "")
	fs.StringVar(&db, "db", "", "")
	fs.StringVar(&host, "host", "", "")
	fs.StringVar(&procDir, "proc", "/proc", "")
	fs.StringVar(&socket, "agent-socket", "", "")
	fs.BoolVar(&fast, "fast", false, "")
	fs.BoolVar(&fresh, "fresh", false, "")
	fs.BoolVar(&quiet, "quiet", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, diffUsage())
			return cli.ErrHelp
		}
		return cli.FlagError(err)
	}
	if since != "" {
		if fs.NArg() > 0 {
			return cli.Usagef("--since compares with the history, not with snapshot files (memwho diff BEFORE AFTER compares files)")
		}
		return runAgent("diff", args)
	}
	history := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "to", "db", "host", "proc", "agent-socket", "fast", "fresh", "quiet":
			history = true
		}
	})
	if history {
		return cli.Usagef("--to, --db, --host, --proc, --agent-socket, --fast, --fresh and --quiet go with --since")
	}
	if fs.NArg() != 2 {
		return cli.Usagef("want two snapshot files, BEFORE and AFTER (flags first), or --since TIME; got %d argument(s)", fs.NArg())
	}
	files := fs.Args()
	groupBy, err := sample.ParseBy(by)
	if err != nil {
		return cli.Usagef("--by: %v", err)
	}
	re, err := cli.CompileFilter(filter)
	if err != nil {
		return err
	}
	if top < 0 {
		return cli.Usagef("--top: must not be negative")
	}
	if err := privilege.Drop(); err != nil {
		return err
	}
	var sides [2]report.DiffSide
	var groups [2][]sample.Group
	names := &sample.Namer{Containers: container.NewNames("/")}
	if files[0] == "-" && files[1] == "-" {
		return cli.Usagef("standard input (-) can be only one of the two files")
	}
	for i, path := range files {
		snap, taken, err := readSnapshot(ctx, path)
		if err != nil {
			return err
		}
		sides[i] = report.DiffSide{Name: snapshotName(path), Taken: taken}
		groups[i] = sample.Filter(sample.GroupProcs(snap.Procs, groupBy, names), re)
	}
	changes := sample.Diff(groups[0], groups[1])
	if top > 0 && len(changes) > top {
		changes = changes[:top]
	}
	if ctx.Err() != nil {
		return cli.ErrInterrupted
	}
	if asJSON {
		return report.DiffJSON(stdout, changes, sides[0], sides[1], groupBy.String())
	}
	return report.DiffTable(stdout, changes, sides[0], sides[1], report.KeyHeader(groupBy))
}
