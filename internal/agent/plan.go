package agent

import (
	"errors"
	"fmt"
	"math"
	"net"
	"path/filepath"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/sample"
	"golang.org/x/sys/unix"
)

// ListenFlags are serve's flags that say who reads the figures
// (docs/agent.md, "Who can read the figures"), as the user gave them.
type ListenFlags struct {
	Socket, SocketGroup           string // --socket, --socket-group
	TCP, WebConfig                string // --listen, --web-config
	NoAuth                        bool   // --no-auth
	DebugSocket, DebugSocketGroup string // --debug-socket, --debug-socket-group
	DebugListen                   string // --debug-listen (removed)
	// SnapshotSocket is --snapshot-socket, where memwho (report and
	// watch) asks for the latest snapshot; SnapshotSet says the flag was
	// given (an empty value then serves none).
	SnapshotSocket string
	SnapshotSet    bool
	// MaxConnections is --max-connections: connections each metrics
	// listener holds at once.
	MaxConnections int
}

// maxMaxConnections bounds --max-connections: each connection is a
// descriptor, and the walk keeps half of the descriptor limit.
const maxMaxConnections = 4096

// Plan checks the listener flags into Listeners, before the agent exists
// or any socket is created: a listener that would expose the figures is
// refused here. Without --socket and --listen the agent serves
// DefaultSocket; --listen alone serves TCP only. The web config and the
// certificates it names are read here with open (memwho's opens with the
// user's rights: the agent may hold CAP_DAC_READ_SEARCH, and a YAML error
// quotes the file). Mistakes are cli usage errors.
func (f *ListenFlags) Plan(open OpenFunc) (Listeners, error) {
	p := Listeners{Socket: f.Socket, TCP: f.TCP, Debug: f.DebugSocket, MaxConns: f.MaxConnections}
	if p.MaxConns < 1 || p.MaxConns > maxMaxConnections {
		return p, cli.Usagef("--max-connections: %d is not from 1 to %d", p.MaxConns, maxMaxConnections)
	}
	if f.DebugListen != "" {
		return p, cli.Usagef("--debug-listen was removed: pprof exposes the agent's memory and is served only on a unix socket; use --debug-socket PATH")
	}
	if p.Socket == "" && p.TCP == "" {
		p.Socket = DefaultSocket
	}
	var err error
	if p.SocketGID, err = cli.GroupID("--socket-group", f.SocketGroup); err != nil {
		return p, err
	}
	if f.SocketGroup != "" && p.Socket == "" {
		return p, cli.Usagef("--socket-group: applies to --socket, and --listen alone serves no socket")
	}
	if p.DebugGID, err = cli.GroupID("--debug-socket-group", f.DebugSocketGroup); err != nil {
		return p, err
	}
	if f.DebugSocketGroup != "" && p.Debug == "" {
		return p, cli.Usagef("--debug-socket-group: applies to --debug-socket")
	}
	if p.Debug != "" && p.Debug == p.Socket {
		return p, cli.Usagef("--debug-socket: %s is also the metrics socket", p.Debug)
	}
	// The snapshot socket sits beside the metrics socket, with its group:
	// whoever may read the metrics may read the snapshot they come from.
	p.Snapshot = f.SnapshotSocket
	if !f.SnapshotSet && p.Socket != "" {
		p.Snapshot = filepath.Join(filepath.Dir(p.Socket), SnapshotSocketName)
	}
	if p.Snapshot != "" && (p.Snapshot == p.Socket || p.Snapshot == p.Debug) {
		return p, cli.Usagef("--snapshot-socket: %s is also another socket of the agent", p.Snapshot)
	}
	if p.TCP == "" {
		if f.WebConfig != "" || f.NoAuth {
			return p, cli.Usagef("--web-config and --no-auth apply to --listen ADDR; the unix socket is guarded by its permissions")
		}
		return p, nil
	}
	if _, _, err := net.SplitHostPort(p.TCP); err != nil {
		return p, cli.Usagef("--listen: %v", err)
	}
	switch {
	case f.WebConfig != "" && f.NoAuth:
		return p, cli.Usagef("--no-auth contradicts --web-config: choose one")
	case f.WebConfig == "" && !f.NoAuth:
		return p, cli.Usagef("--listen %s needs --web-config FILE (TLS, basic auth) to say who may read the figures, or --no-auth to let anyone who can connect read them", p.TCP)
	case f.WebConfig != "":
		p.Web, err = LoadWebConfig(f.WebConfig, open)
		if errors.Is(err, ErrNoAccessControl) {
			return p, cli.Usagef("--web-config: %v; --no-auth says that openly", err)
		}
		if err != nil {
			return p, fmt.Errorf("--web-config: %w", err)
		}
	}
	return p, nil
}

// Check validates o as serve's flags set it, before anything is opened:
// the grouping (--by), --top-processes, --min-interval, --scrape-timeout,
// --full-every and --walk-budget. Where New would quietly choose a
// default or a bound, a command line that asked for a wrong value is told
// so. Mistakes are cli usage errors.
func (o *Options) Check() error {
	if o.By == sample.ByPID {
		return cli.Usagef("--by pid would make one series per process; use --top-processes K")
	}
	if o.TopProcesses < 0 || o.TopProcesses > MaxTopProcesses {
		return cli.Usagef("--top-processes: %d is out of range 0..%d", o.TopProcesses, MaxTopProcesses)
	}
	if o.MinInterval <= 0 {
		return cli.Usagef("--min-interval: must be positive")
	}
	if o.ScrapeTimeout <= 0 {
		return cli.Usagef("--scrape-timeout: must be positive")
	}
	if o.Engine.FullEvery < 1 {
		return cli.Usagef("--full-every: must be at least 1")
	}
	if b := o.Engine.WalkBudget; !(b > 0 && b <= 1) { // NaN fails too
		return cli.Usagef("--walk-budget: %g is not a fraction in (0, 1]", b)
	}
	return nil
}

// debugConns bounds the debug socket's connections: a profile or two
// at a time, for whoever may read pprof.
const debugConns = 8

// snapshotConns is snapserve.DefaultMaxConns, the snapshot socket's
// clients at once (TestSnapshotConns: snapserve's tests import this
// package, so this one cannot import snapserve).
const snapshotConns = 8

// Files is how many descriptors p's listeners may hold at once: each
// listener, each metrics listener's MaxConns connections and the one
// waiting for a slot, the snapshot socket's clients, and the debug
// socket's debugConns and one waiting.
func (p Listeners) Files() int {
	maxConns := p.maxConns()
	n := 0
	for _, on := range []bool{p.Socket != "", p.TCP != ""} {
		if on {
			n += 1 + maxConns + 1
		}
	}
	if p.Snapshot != "" {
		n += 1 + snapshotConns
	}
	if p.Debug != "" {
		n += 1 + debugConns + 1
	}
	return n
}

// CheckFileLimit refuses listeners whose connections, with the
// descriptors the process holds already, would leave the walk fewer than
// engine.MinFiles descriptors under the open-file limit (by then the Go
// runtime has raised the soft limit to the hard one). It returns how many
// descriptors the rest of the process may hold: the listeners' and those
// open now below the limit (engine.OpenBelow: the standard three, the Go
// runtime's poller and cgroup files, any a parent left open: a shell's,
// a supervisor's). Above the minimum the engine keeps fewer descriptors
// between ticks (engine.Options.OtherFiles), which costs CPU, not
// figures.
func (p Listeners) CheckFileLimit() (int, error) {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil {
		return p.Files() + 3, nil
	}
	open, err := engine.OpenBelow(rl.Cur)
	switch {
	case errors.Is(err, unix.EMFILE):
		// Not one free: the check refuses, naming them all.
		open = int(min(rl.Cur, math.MaxInt32))
	case err != nil:
		// Not known: the standard three, as before they were counted.
		open = 3
	}
	return p.Files() + open, checkFileLimit(p, open, rl.Cur)
}

func checkFileLimit(p Listeners, open int, limit uint64) error {
	need := uint64(p.Files() + open + engine.MinFiles)
	if limit >= need {
		return nil
	}
	return cli.Usagef("--max-connections: the listeners may hold %d descriptors, %d are open already and the walk needs %d more, but the open-file limit (ulimit -n) is %d: lower --max-connections, close what the agent inherits, or raise the limit (LimitNOFILE= in the unit)",
		p.Files(), open, engine.MinFiles, limit)
}

// maxConns is MaxConns, or DefaultMaxConnections when unset.
func (p Listeners) maxConns() int {
	if p.MaxConns <= 0 {
		return DefaultMaxConnections
	}
	return p.MaxConns
}
