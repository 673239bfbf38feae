// Command memwho reports who is using RAM and swap: proportional set size
// per program, process, user or cgroup.
package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/store"
)

// version is set by release builds with -ldflags "-X main.version=...".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the command could not do its work
	exitUsage   = 2 // the command line was wrong
)

// usageError is a mistake on the command line: exit code 2. Packages
// that validate a command's configuration return it too.
type usageError = cli.UsageError

// usagef returns a usageError.
var usagef = cli.Usagef

// errHelp is --help: the usage was printed to standard output.
var errHelp = cli.ErrHelp

// commandList is what "memwho help" lists, in this order.
var commandList = []struct{ name, summary string }{
	{"report", "who uses RAM and swap now (the default)"},
	{"watch", "live view of who uses RAM and swap, with growth and leak suspects"},
	{"serve", "Prometheus agent: serve per-group memory and TCP metrics"},
	{"record", "sample memory periodically into a history database"},
	{"leaks", "rank what grows in the recorded history (leak suspects)"},
	{"export", "write recorded history as CSV (gzip, SFTP upload)"},
	{"version", "print the version"},
	{"help", "print this help"},
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
	b, err := usageTexts.ReadFile("usage/" + name + ".txt")
	if err != nil {
		panic(err) // a missing embedded file is a build mistake
	}
	return strings.ReplaceAll(string(b), "{{DefaultDBHelp}}", store.DefaultDBHelp)
}

// run is main without os.Exit, so that tests can call it. It is the one
// dispatch: each command parses its flags into its configuration, and
// only report, watch, serve and record may keep a capability, through
// enterScan; every other command gives them all up first.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name, rest := "report", args
	if len(args) > 0 {
		switch a := args[0]; {
		case a == "--version" || a == "-version":
			name = "version"
		case !strings.HasPrefix(a, "-"):
			name, rest = a, args[1:]
		}
	}
	var err error
	switch name {
	case "report":
		err = runReport(ctx, rest, stdout, stderr)
	case "watch":
		err = runWatch(ctx, rest, stdout, stderr)
	case "serve":
		err = runServe(ctx, rest, stdout, stderr)
	case "record":
		err = runRecord(ctx, rest, stdout, stderr)
	default:
		if err = dropPrivileges(); err != nil {
			break
		}
		switch name {
		case "leaks":
			err = runLeaks(ctx, rest, stdout, stderr)
		case "export":
			err = runExport(ctx, rest, stdout, stderr)
		case "version":
			fmt.Fprintln(stdout, "memwho", buildVersion())
		case "help":
			fmt.Fprint(stdout, reportUsage)
			printCommands(stdout)
		default:
			err = usagef("unknown command %q", name)
		}
	}
	if err != nil {
		// A command that failed while holding capabilities (between
		// enterScan and its drop) gives them up before its error is
		// written: a write to stderr can block.
		if derr := dropPrivileges(); derr != nil {
			err = errors.Join(err, derr)
		}
	}
	return exitCode(err, stderr)
}

func printCommands(w io.Writer) {
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commandList {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
}

// newFlagSet and parseFlags are the commands' flag parsing (package
// cli): errors are one usage line, --help prints to standard output.
var (
	newFlagSet = cli.NewFlagSet
	parseFlags = cli.Parse
)

// exitCode prints err as one "memwho: error:" line (plus hints) and maps
// it to an exit code.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "memwho: error: %s\n", sanitizeMessage(err.Error()))
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr, "memwho: hint: see 'memwho --help'")
		return exitUsage
	}
	return exitFailure
}

// sanitizeMessage keeps error text on one line: errors can quote user input
// and process names.
func sanitizeMessage(s string) string { return cli.OneLine(s) }

// buildVersion is what "memwho --version" prints (cli.Version).
func buildVersion() string { return cli.Version(version) }
