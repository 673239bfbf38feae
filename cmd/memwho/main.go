// Command memwho reports who is using RAM and swap: proportional set size
// per program, process, user or cgroup.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"syscall"
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

// usageError is a mistake on the command line: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// command is one subcommand: its run function gets the arguments after
// its name.
type command struct {
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	summary string // one line for "memwho help"
}

// commands maps subcommand names to their implementations. Each
// subcommand's file adds itself from an init function, so that a command
// compiled out by a build tag (notui, nopostgres, ...) leaves no trace
// here.
var commands = map[string]command{
	"report": {runReport, "who uses RAM and swap now (the default)"},
}

// run is main without os.Exit, so that tests can call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name, rest := "report", args
	if len(args) > 0 {
		switch args[0] {
		case "version", "--version", "-version":
			fmt.Fprintln(stdout, "memwho", buildVersion())
			return exitOK
		case "help":
			fmt.Fprint(stdout, reportUsage)
			printCommands(stdout)
			return exitOK
		}
		if _, ok := commands[args[0]]; ok {
			name, rest = args[0], args[1:]
		}
	}
	return exitCode(commands[name].run(ctx, rest, stdout, stderr), stderr)
}

func printCommands(w io.Writer) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	fmt.Fprintln(w, "\nCommands:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
}

// newFlagSet returns the flag set of a subcommand: flag errors and -h go to
// stderr with usage.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	return fs
}

// parseFlags parses a subcommand's arguments. --help prints usage to
// stdout and returns errHelp; a bad flag, already reported by the flag
// package, returns errFlagParse; a stray argument is a usage error.
func parseFlags(fs *flag.FlagSet, usage string, args []string, stdout io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, usage)
			return errHelp
		}
		return errFlagParse
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// exitCode prints err as one "memwho: error:" line (plus hints) and maps
// it to an exit code.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if errors.Is(err, errFlagParse) {
		// The flag package has printed its own message.
		return exitUsage
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
func sanitizeMessage(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n':
			b = append(b, `\n`...)
		case c < 0x20 || c == 0x7f:
			b = append(b, fmt.Sprintf(`\x%02x`, c)...)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
