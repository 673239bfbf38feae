// Command memwho-agent holds memwho's agent and history commands: serve
// (the Prometheus agent), record (history into SQLite or PostgreSQL),
// leaks and export. memwho runs it for those commands; systemd units run
// it directly.
//
// It is never installed with capabilities: what it links (HTTP and TLS,
// SQLite, PostgreSQL, SSH) stays out of the binary the privileged install
// gives capabilities to. serve and record keep only what root or a unit's
// ambient capabilities gave them, through the same policy as memwho
// (privilege.EnterScan).
package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/store"
)

// version is set by release builds with -ldflags "-X main.version=...".
var version = ""

// init: see memwho's. memwho-agent is not meant to carry capabilities,
// but if an admin gives it some, the same rules hold.
func init() { privilege.MustSetup() }

func main() { cli.Main(run) }

// commandList is what "memwho-agent help" lists, in this order.
var commandList = []cli.Command{
	{Name: "serve", Summary: "Prometheus agent: serve per-group memory and TCP metrics"},
	{Name: "record", Summary: "sample memory periodically into a history database"},
	{Name: "leaks", Summary: "rank what grows in the recorded history (leak suspects)"},
	{Name: "export", Summary: "write recorded history as CSV (gzip, SFTP upload)"},
	{Name: "diff", Summary: "compare now, or another time, with the recorded history (--since 1h)"},
	{Name: "version", Summary: "print the version"},
	{Name: "help", Summary: "print this help"},
}

// usageTexts are the commands' --help texts, kept as text files so that
// they read, and are reviewed, as the user sees them.
//
//go:embed usage/*.txt
var usageTexts embed.FS

// usage returns the help text of command name. {{DefaultDBHelp}} in it
// stands for the description of the default history database, which
// package store owns.
func usage(name string) string {
	return strings.ReplaceAll(cli.UsageText(usageTexts, name), "{{DefaultDBHelp}}", store.DefaultDBHelp)
}

// run is main without os.Exit, so that tests can call it. It is the one
// dispatch: serve and record may keep what the environment granted,
// through privilege.EnterScan; leaks and export give up every capability
// first.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Every command here keeps something to close or finish when
	// stopped: a listener and its sockets, a database, an upload.
	ctx, stop := cli.Interruptible(ctx)
	defer stop()
	if privilege.Separated() {
		// memwho-agent installed with file capabilities or setuid (the
		// install never does that): no command keeps them, and none
		// looks at anything before they are gone.
		if err := privilege.Drop(); err != nil {
			return privilege.Exit(err, stderr)
		}
	}
	name, rest := cli.SplitCommand(args, "")
	if len(args) == 0 || name == "" && (args[0] == "--help" || args[0] == "-help" || args[0] == "-h") {
		name = "help"
	}
	var err error
	switch name {
	case "serve":
		err = runServe(ctx, rest, stdout, stderr)
	case "record":
		err = runRecord(ctx, rest, stdout, stderr)
	default:
		if err = privilege.Drop(); err != nil {
			break
		}
		switch name {
		case "leaks":
			err = runLeaks(ctx, rest, stdout, stderr)
		case "export":
			err = runExport(ctx, rest, stdout, stderr)
		case "diff":
			err = runDiff(ctx, rest, stdout, stderr)
		case "version":
			err = cli.PrintVersion("memwho-agent", buildVersion(), rest, stdout)
		case "help":
			fmt.Fprintln(stdout, "Usage: memwho-agent COMMAND [flags]   (memwho runs it as memwho COMMAND)")
			cli.PrintCommands(stdout, commandList)
		case "":
			err = cli.Usagef("a command comes first: serve, record, leaks, export or diff")
		default:
			err = cli.UnknownCommand(name, commandList)
		}
	}
	// A usage error of a command points to its own --help, as memwho's
	// do: "memwho leaks --bogus" is not helped by memwho --help, the
	// report's.
	var ue *cli.UsageError
	if errors.As(err, &ue) && ue.Command == "" {
		switch name {
		case "serve", "record", "leaks", "export", "diff":
			ue.Command = name
		}
	}
	return privilege.Exit(err, stderr)
}

// buildVersion is what "memwho-agent --version" prints (cli.Version).
func buildVersion() string { return cli.Version(version) }
