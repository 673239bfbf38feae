// Command memwho reports who is using RAM and swap: proportional set size
// per program, process, user, cgroup, unit, slice or container, once (report) or live (watch).
//
// This is the binary a user runs, and the one the privileged install
// gives capabilities to, so it holds only what reading /proc and showing
// it needs. The agent and history commands (serve, record, leaks,
// export) live in memwho-agent, which memwho runs in its place, with no
// capability left, when one of them is asked for (agent.go).
package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"

	"github.com/memwho/memwho/internal/atomicfile"
	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/reader"
	"github.com/memwho/memwho/internal/watch"
)

// version is set by release builds with -ldflags "-X main.version=...".
var version = ""

// init runs before main, flags and files: a setuid-root install becomes
// the real user here, and no capability is effective until a command has
// parsed its configuration and decided what it keeps
// (privilege.EnterScan); in the privileged install only the reader keeps
// any (run). It looks at no argument and no variable but the kernel's
// AT_SECURE flag.
func init() { privilege.MustSetup() }

func main() { cli.Main(run) }

// commandList is what "memwho help" lists, in this order.
var commandList = []cli.Command{
	{Name: "report", Summary: "who uses RAM and swap now (the default)"},
	{Name: "watch", Summary: "live view of who uses RAM and swap, with growth and leak suspects"},
	{Name: "snapshot", Summary: "write what a report needs to a file, to read later (--from) or compare (diff)"},
	{Name: "diff", Summary: "compare two snapshot files, or now with the history (--since 1h): what grew, shrank"},
	{Name: "serve", Summary: "Prometheus agent: serve per-group memory and TCP metrics (memwho-agent)"},
	{Name: "record", Summary: "sample memory periodically into a history database (memwho-agent)"},
	{Name: "leaks", Summary: "rank what grows in the recorded history (memwho-agent)"},
	{Name: "export", Summary: "write recorded history as CSV, gzip, SFTP upload (memwho-agent)"},
	{Name: "completion", Summary: "print a shell completion script: bash, zsh or fish"},
	{Name: "version", Summary: "print the version"},
	{Name: "help", Summary: "print this help; help COMMAND prints that command's"},
}

// usageTexts are the commands' --help texts, kept as text files so that
// they read, and are reviewed, as the user sees them.
//
//go:embed usage/*.txt
var usageTexts embed.FS

// usage returns the help text of command name.
func usage(name string) string {
	return cli.UsageText(usageTexts, name)
}

// run is main without os.Exit, so that tests can call it. It is the one
// dispatch. In the privileged install (privilege.Separated) only the
// reader (reader.Command, which memwho starts itself for a walk of /proc)
// keeps a capability: every other command gives up every one here, before
// its flags, the environment, files, the terminal or the agent's socket
// are looked at. Elsewhere report and watch may keep one through
// privilege.EnterScan. The agent's commands are handed to memwho-agent
// (runAgent), with every capability given up first when the exec of
// memwho gained them.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name, rest := cli.SplitCommand(args, "report")
	if name == reader.Command {
		return reader.Main(rest)
	}
	if privilege.Separated() {
		if err := privilege.Drop(); err != nil {
			return privilege.Exit(err, stderr)
		}
		switch name {
		case "report", "watch", "snapshot", "diff":
			// The reader starts now and waits for its options (a
			// fixed argv, an empty environment): its exec and the Go
			// runtime's start-up run while this process parses its
			// flags. After the drop: a reader forked while this
			// process still held its capabilities would not have
			// gained them by its exec, and the kernel would have left
			// it dumpable. Unused (an agent's snapshot, a file,
			// another --proc), it is ended.
			prestarted, _ = reader.Prestart()
			defer func() {
				if prestarted != nil {
					prestarted.Close()
					prestarted = nil
				}
			}()
		}
	}
	var err error
	switch name {
	case "report":
		err = runReport(ctx, rest, stdout, stderr)
	case "watch", "snapshot", "diff":
		// A terminal to restore, a file to publish or remove: these
		// stop cleanly at SIGINT and SIGTERM. A report asks only when
		// it writes files (runReport).
		var stop context.CancelFunc
		var hangup <-chan struct{}
		if name == "watch" {
			// The view handles the terminal's hang-up itself.
			ctx, hangup, stop = cli.InterruptibleView(ctx, watch.AbandonTerminal)
		} else {
			ctx, stop = cli.InterruptibleOnce(ctx, atomicfile.RemoveTemps)
		}
		defer stop()
		switch name {
		case "watch":
			err = runWatch(ctx, hangup, rest, stdout, stderr)
		case "snapshot":
			err = runSnapshot(ctx, rest, stdout, stderr)
		default:
			err = runDiff(ctx, rest, stdout, stderr)
		}
	case "serve", "record", "leaks", "export":
		err = runAgent(name, rest)
	default:
		if err = privilege.Drop(); err != nil {
			break
		}
		switch name {
		case "version":
			err = cli.PrintVersion("memwho", buildVersion(), rest, stdout)
		case "completion":
			err = runCompletion(rest, stdout)
		case "help":
			err = runHelp(rest, stdout)
		default:
			err = cli.UnknownCommand(name, commandList)
		}
	}
	// A usage error of a subcommand points to its own --help.
	var ue *cli.UsageError
	if errors.As(err, &ue) && ue.Command == "" {
		switch name {
		case "watch", "snapshot", "diff", "completion":
			ue.Command = name
		}
	}
	return privilege.Exit(err, stderr)
}

// runHelp is "memwho help [COMMAND]": the report's usage and the
// commands, or one command's usage (not the report's for every word).
func runHelp(args []string, stdout io.Writer) error {
	if len(args) > 1 {
		return cli.Usagef("help takes one command, not %d words", len(args))
	}
	name := ""
	if len(args) == 1 {
		name = args[0]
	}
	switch name {
	case "", "help", "version", "--help", "-help", "-h":
		// help --help too: help's own help is this, not a usage
		// error.
		fmt.Fprint(stdout, reportUsage())
		cli.PrintCommands(stdout, commandList)
	case "report", "watch", "snapshot", "diff", "completion":
		fmt.Fprint(stdout, usage(name))
	case "serve", "record", "leaks", "export":
		// memwho-agent's own --help, run as any of these is.
		return runAgent(name, []string{"--help"})
	default:
		return cli.Usagef("help: unknown command %q", name)
	}
	return nil
}

// buildVersion is what "memwho --version" prints (cli.Version).
func buildVersion() string { return cli.Version(version) }
