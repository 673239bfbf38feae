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
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/privilege"
)

// version is set by release builds with -ldflags "-X main.version=...".
var version = ""

// init runs before main, flags and files: a setuid-root install becomes
// the real user here, and no capability is effective until a command has
// parsed its configuration and decided what it keeps
// (privilege.EnterScan). It looks at no argument and no variable but the
// kernel's AT_SECURE flag.
func init() { privilege.MustSetup() }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// commandList is what "memwho help" lists, in this order.
var commandList = []struct{ name, summary string }{
	{"report", "who uses RAM and swap now (the default)"},
	{"watch", "live view of who uses RAM and swap, with growth and leak suspects"},
	{"serve", "Prometheus agent: serve per-group memory and TCP metrics (memwho-agent)"},
	{"record", "sample memory periodically into a history database (memwho-agent)"},
	{"leaks", "rank what grows in the recorded history (memwho-agent)"},
	{"export", "write recorded history as CSV, gzip, SFTP upload (memwho-agent)"},
	{"version", "print the version"},
	{"help", "print this help"},
}

// usageTexts are the commands' --help texts, kept as text files so that
// they read, and are reviewed, as the user sees them.
//
//go:embed usage/*.txt
var usageTexts embed.FS

// usage returns the help text of command name.
func usage(name string) string {
	b, err := usageTexts.ReadFile("usage/" + name + ".txt")
	if err != nil {
		panic(err) // a missing embedded file is a build mistake
	}
	return string(b)
}

// run is main without os.Exit, so that tests can call it. It is the one
// dispatch: report and watch may keep a capability, through
// privilege.EnterScan; the agent's commands are handed to memwho-agent
// (runAgent), with every capability given up first when the exec of
// memwho gained them.
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
	case "serve", "record", "leaks", "export":
		err = runAgent(name, rest)
	default:
		if err = privilege.Drop(); err != nil {
			break
		}
		switch name {
		case "version":
			fmt.Fprintln(stdout, "memwho", buildVersion())
		case "help":
			fmt.Fprint(stdout, reportUsage)
			printCommands(stdout)
		default:
			err = cli.Usagef("unknown command %q", name)
		}
	}
	if err != nil {
		// A command that failed while holding capabilities (between
		// EnterScan and its drop) gives them up before its error is
		// written: a write to stderr can block.
		if derr := privilege.Drop(); derr != nil {
			err = errors.Join(err, derr)
		}
	}
	return cli.Exit(err, stderr)
}

func printCommands(w io.Writer) {
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commandList {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
}

// buildVersion is what "memwho --version" prints (cli.Version).
func buildVersion() string { return cli.Version(version) }
