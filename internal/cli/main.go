package cli

import (
	"context"
	"embed"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main starts the runtime's poller (StartPoller), then runs a command's
// dispatch with a context that SIGINT and SIGTERM cancel, and exits with
// its code.
func Main(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	if err := StartPoller(); err != nil {
		fmt.Fprintf(os.Stderr, "memwho: error: %s\n", OneLine(err.Error()))
		os.Exit(ExitFailure)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Command is one line of a binary's command list ("memwho help").
type Command struct{ Name, Summary string }

// PrintCommands writes the command list under a "Commands:" heading.
func PrintCommands(w io.Writer, list []Command) {
	fmt.Fprintln(w, "\nCommands:")
	width := 0
	for _, c := range list {
		width = max(width, len(c.Name))
	}
	for _, c := range list {
		fmt.Fprintf(w, "  %-*s %s\n", width, c.Name, c.Summary)
	}
}

// UsageText returns usage/NAME.txt of a command's embedded usage texts,
// kept as text files so that they read, and are reviewed, as the user
// sees them. A missing file is a build mistake: it panics.
func UsageText(texts embed.FS, name string) string {
	b, err := texts.ReadFile("usage/" + name + ".txt")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// SplitCommand returns the command a binary's arguments name and the
// arguments left for it: the first argument unless it is a flag, then
// def; --version (or -version) is the command "version".
func SplitCommand(args []string, def string) (name string, rest []string) {
	if len(args) == 0 {
		return def, args
	}
	switch a := args[0]; {
	case a == "--version" || a == "-version":
		return "version", args[1:]
	case len(a) > 0 && a[0] != '-':
		return a, args[1:]
	}
	return def, args
}
