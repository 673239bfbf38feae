// Command fleetsim simulates a fleet of hosts on one machine and drives
// memwho's real code with it: what it measures is memwho, not a model of
// memwho.
//
//	fleetsim record --db URL --hosts 1000 --duration 1h     # history, time-compressed
//	fleetsim record --db URL --hosts 1000 --realtime ...    # 1,000 recorders at their interval
//	fleetsim serve --hosts 1000 --listen 127.0.0.1:9200 --sd-file targets.json
//	fleetsim snapshot --host 7 -o host7.snap               # one host, for memwho --from
//	fleetsim leaks --hosts 1000                            # the leaks it plants
//
// # The hosts
//
// Each simulated host runs a base of system programs (systemd, sshd,
// cron, journald, an exporter, memwho's agent…) and one or two roles
// (web, db, app, k8s, ci), with process counts scaled so that hosts run
// about --procs processes on average, sizes drawn log-normally around
// those of real servers (template.go). Or, with --seed-snapshot, the
// processes of recorded snapshots (memwho snapshot -o FILE on real
// hosts, or a captured /proc tree read by the engine). Then, as time
// passes: processes with a lifetime (shell sessions, cron jobs, pool
// workers, PostgreSQL backends, compilers) exit and are replaced by new
// ones (new pid and start time); busy processes' figures move by about
// 1% between samples while most others sit still; caches and heaps grow
// and level off; and in --leaks of the hosts one long-lived process
// leaks at a steady 20 MiB to 2 GiB an hour, until the host's memory is
// full and the OOM killer restarts it. The same --seed gives the same
// fleet and the same changes.
//
// # What it drives
//
//   - record: each host has a real history writer, record.Open and
//     record.Recorder (the code of memwho record: Builder.Fill, the
//     store's Write, retention), each with its own connection pool, as
//     1,000 recorders have. Time-compressed (the default), hosts take
//     their samples one interval apart in simulated time as fast as the
//     database takes them: timestamps are simulated, everything else is
//     the real write. With --realtime, record.Run itself runs once per
//     host at the real interval, the hosts' phases spread over it.
//   - serve: one memwho agent (agent.New, walks on its own clock,
//     agent.Handler) per host, over a simulated host instead of /proc,
//     all behind one HTTP listener at /host/NAME/metrics, with a
//     Prometheus file_sd target list that labels each with its instance.
//     Prometheus scrapes in real time: this cannot be compressed.
//
// It is a tool, not part of memwho: nothing in the memwho binaries
// imports it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "fleetsim: error: %v\n", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

const usage = `Usage: fleetsim record|serve|snapshot|leaks [flags]  (fleetsim COMMAND -h for flags)`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	switch args[0] {
	case "record":
		return runRecord(ctx, args[1:], stdout, stderr)
	case "serve":
		return runServe(ctx, args[1:], stdout, stderr)
	case "snapshot":
		return runSnapshot(args[1:], stdout, stderr)
	case "leaks":
		return runLeaks(args[1:], stdout, stderr)
	}
	return fmt.Errorf("%w: unknown command %q; %s", errUsage, args[0], usage)
}

// fleetFlags are the flags every command shares: which fleet.
type fleetFlags struct {
	f     Fleet
	start string
	seeds multi
}

type multi []string

func (m *multi) String() string     { return fmt.Sprint(*m) }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

func (ff *fleetFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&ff.f.Hosts, "hosts", 50, "simulated hosts")
	fs.IntVar(&ff.f.Procs, "procs", 300, "mean processes per host")
	fs.Uint64Var(&ff.f.Seed, "seed", 1, "the fleet and its changes (the same seed, the same fleet)")
	fs.Float64Var(&ff.f.LeakShare, "leaks", 0.03, "share of hosts with a leaking process")
	fs.StringVar(&ff.start, "start", "", "when the history starts, RFC 3339 (default: now, less --duration for a compressed record)")
	fs.Var(&ff.seeds, "seed-snapshot", "a recorded snapshot file (memwho snapshot -o) to build hosts from instead of the template; repeat for several")
}

// fleet returns the fleet, starting at def unless --start says otherwise.
func (ff *fleetFlags) fleet(def time.Time) (*Fleet, error) {
	f := ff.f
	if f.Hosts < 1 || f.Procs < 1 {
		return nil, fmt.Errorf("%w: --hosts and --procs must be at least 1", errUsage)
	}
	f.Start = def
	if ff.start != "" {
		t, err := time.Parse(time.RFC3339, ff.start)
		if err != nil {
			return nil, fmt.Errorf("%w: --start: %v", errUsage, err)
		}
		f.Start = t
	}
	for _, name := range ff.seeds {
		file, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		var s sample.Snapshot
		_, err = snapshot.ReadFile(file, &s)
		file.Close()
		if err != nil {
			return nil, fmt.Errorf("--seed-snapshot %s: %w", name, err)
		}
		f.Seeds = append(f.Seeds, &s)
	}
	return &f, nil
}

func parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fs.PrintDefaults()
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}

// runSnapshot writes one simulated host as a snapshot file, which memwho
// reads with --from (and diff).
func runSnapshot(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fleetsim snapshot", flag.ContinueOnError)
	var ff fleetFlags
	ff.register(fs)
	host := fs.Int("host", 0, "which host")
	after := fs.Duration("after", 0, "the host this long after --start")
	out := fs.String("o", "", "output file (default standard output)")
	if err := parse(fs, args); err != nil {
		return err
	}
	f, err := ff.fleet(time.Now().Truncate(time.Second))
	if err != nil {
		return err
	}
	h := f.NewHost(*host)
	var s sample.Snapshot
	t := f.Start.Add(*after)
	h.Fill(&s, t)
	w := stdout
	if *out != "" {
		file, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		defer file.Close()
		w = file
	}
	return snapshot.WriteFile(w, &s, t)
}

// runLeaks lists the leaks the fleet plants, fastest first, to check
// memwho leaks --all-hosts against.
func runLeaks(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fleetsim leaks", flag.ContinueOnError)
	var ff fleetFlags
	ff.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	f, err := ff.fleet(time.Now())
	if err != nil {
		return err
	}
	for _, l := range f.Leaks() {
		fmt.Fprintf(stdout, "%s\t%d\t%s\t%.0f MiB/h\n", l.Host, l.PID, l.Program, l.Rate/mib)
	}
	return nil
}

// Leak is a planted leak: the process that leaks at the start.
type Leak struct {
	Host, Program string
	PID           int
	Rate          float64 // bytes per hour
}

// Leaks returns the planted leaks, fastest first.
func (f *Fleet) Leaks() []Leak {
	var out []Leak
	for i := range f.Hosts {
		if h := f.NewHost(i); h.Leak > 0 && h.leaker != nil {
			out = append(out, Leak{h.Name, h.LeakName, h.leaker.pid, h.Leak})
		}
	}
	sortLeaks(out)
	return out
}
