package cli

import (
	"errors"
	"fmt"
	"io"
)

// Exit codes of every memwho command.
const (
	ExitOK      = 0
	ExitFailure = 1 // the command could not do its work
	ExitUsage   = 2 // the command line was wrong
)

// Exit prints err as one "memwho: error:" line (and, for a usage error,
// a hint) and maps it to an exit code. nil and ErrHelp are success.
func Exit(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, ErrHelp) {
		return ExitOK
	}
	fmt.Fprintf(stderr, "memwho: error: %s\n", OneLine(err.Error()))
	var ue *UsageError
	if errors.As(err, &ue) {
		if ue.Command != "" {
			fmt.Fprintf(stderr, "memwho: hint: see 'memwho %s --help'\n", ue.Command)
		} else {
			fmt.Fprintln(stderr, "memwho: hint: see 'memwho --help'")
		}
		return ExitUsage
	}
	return ExitFailure
}
