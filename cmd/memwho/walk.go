package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/reader"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/watch"
)

// byReader reports whether a walk of procDir is the reader's: in the
// privileged install (privilege.Separated) the kernel's /proc is walked
// by a reader process, the only one that holds a capability, and this
// one has given up every one at its dispatch. Any other tree is walked
// here, with the user's rights.
func byReader(procDir string) bool {
	return privilege.Separated() && procDir == proc.DefaultRoot
}

// readerOptions are the reader's options for what the engine reads.
func readerOptions(opt engine.Options, conns bool) reader.Options {
	return reader.Options{Fast: opt.Fast, UID: opt.NeedUID, Cgroup: opt.NeedCgroup, NoNames: opt.NoNames, PIDs: opt.PIDs, Conns: conns}
}

// prestarted is the reader run started at its dispatch, waiting for its
// options (reader.Prestart), until startReader takes it.
var prestarted *reader.Client

// startReader starts the reader (or gives the one started at the
// dispatch its options); then nothing this process executes
// gains privilege any more (no_new_privs: it was left off for the
// reader's exec).
func startReader(ctx context.Context, opt reader.Options) (*reader.Client, error) {
	// The reader would fail at the same check, with a less clear word.
	if err := engine.CheckFiles(); err != nil {
		return nil, err
	}
	c := prestarted
	prestarted = nil
	var err error
	if c == nil {
		c, err = reader.Start(ctx, opt)
	} else if err = c.Begin(ctx, opt); err != nil {
		c.Close()
	}
	if err != nil {
		return nil, stopped(ctx, err)
	}
	if err := privilege.NoNewPrivs(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// stopped is err, or cli.ErrInterrupted when ctx ended meanwhile (a
// SIGTERM, SIGINT or SIGHUP): the reader's wait given up, or the reader
// ended by the same signal as its process group, is the command being
// stopped, and says so as every command does.
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return cli.ErrInterrupted
	}
	return err
}

// printNotes writes the reader's notes to stderr, one line each.
func printNotes(stderr io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(stderr, cli.OneLine(n))
	}
}

// watchSampler returns what watch walks procDir with every interval, and
// the function that ends it: the reader (byReader), else an engine in
// this process that keeps the capabilities the policy grants for the
// whole watch (privilege.EnterScan). A notice about the capabilities (a
// hidepid= mount) is written to stderr before it returns.
func watchSampler(ctx context.Context, procDir string, opt engine.Options, interval time.Duration, stderr io.Writer) (watch.Sampler, func(), error) {
	if byReader(procDir) {
		ro := readerOptions(opt, opt.Conns)
		ro.Interval = max(interval, reader.MinInterval)
		c, err := startReader(ctx, ro)
		if err != nil {
			return nil, nil, err
		}
		printNotes(stderr, c.Notes())
		return c, func() { c.Close() }, nil
	}
	procFS, err := privilege.EnterScan("watch", procDir, opt.Conns, stderr)
	if err != nil {
		return nil, nil, err
	}
	opt.FS = procFS
	eng, err := engine.New(opt)
	if err != nil {
		procFS.Close()
		return nil, nil, err
	}
	return eng, func() { eng.Close(); procFS.Close() }, nil
}

// scanOnce walks the procfs tree at procDir once (engine.Options.OneShot;
// opt's FS is set here): by the reader (byReader), else here, holding
// the capabilities the policy grants only until the walk is done.
// Warnings found meanwhile are returned for the caller to print once no
// capability is left (a write to stderr can block).
func scanOnce(ctx context.Context, procDir string, opt engine.Options, conns, sandbox bool, stderr io.Writer) (*sample.Snapshot, []string, error) {
	if byReader(procDir) {
		ro := readerOptions(opt, conns)
		ro.Once, ro.Sandbox = true, sandbox
		c, err := startReader(ctx, ro)
		if err != nil {
			return nil, nil, err
		}
		defer c.Close()
		snap := new(sample.Snapshot)
		if err := c.Scan(snap); err != nil {
			return nil, nil, stopped(ctx, err)
		}
		if sandbox {
			// This process too: the rest of the run reads only
			// what the sandbox lets it (procDir, user names, zones).
			if err := privilege.Sandbox(procDir); err != nil {
				return nil, nil, err
			}
		}
		return snap, c.Notes(), nil
	}
	procFS, err := privilege.EnterScan("report", procDir, conns, stderr)
	if err != nil {
		return nil, nil, err
	}
	defer procFS.Close()
	var warnings []string
	if sandbox {
		w, err := privilege.SandboxScan(procFS)
		if err != nil {
			return nil, nil, err
		}
		warnings = append(warnings, w)
	}
	opt.OneShot, opt.FS = true, procFS
	sc, err := engine.New(opt)
	if err != nil {
		return nil, nil, err
	}
	defer sc.Close()
	snap := new(sample.Snapshot)
	if err := sc.Scan(snap); err != nil {
		return nil, nil, err
	}
	if conns {
		warnings = append(warnings, report.ConnsWarning(engine.CountConns(procFS, snap)))
	}
	// The scan was the only step that needed privilege.
	if err := privilege.Drop(); err != nil {
		return nil, nil, err
	}
	return snap, warnings, nil
}
