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
	// ExitEstimate: the one number printed (memwho -t) holds RSS-based
	// estimates; it is printed all the same, for scripts that accept it.
	ExitEstimate = 3
)

// EstimateError is the error of a command that printed a figure a
// script could take for exact while it holds estimates: Exit prints it
// as a warning and returns ExitEstimate.
type EstimateError struct{ Msg string }

func (e *EstimateError) Error() string { return e.Msg }

// Exit prints err as one "memwho: error:" line (and, for a usage error,
// a hint) and maps it to an exit code. nil and ErrHelp are success.
func Exit(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, ErrHelp) {
		return ExitOK
	}
	var ee *EstimateError
	if errors.As(err, &ee) {
		fmt.Fprintf(stderr, "memwho: warning: %s\n", OneLine(ee.Msg))
		return ExitEstimate
	}
	fmt.Fprintf(stderr, "memwho: error: %s\n", OneLine(err.Error()))
	var ue *UsageError
	if errors.As(err, &ue) {
		if ue.Hint != "" {
			fmt.Fprintf(stderr, "memwho: hint: %s\n", OneLine(ue.Hint))
		}
		if ue.Command != "" {
			fmt.Fprintf(stderr, "memwho: hint: see 'memwho %s --help'\n", ue.Command)
		} else {
			fmt.Fprintln(stderr, "memwho: hint: see 'memwho --help'")
		}
		return ExitUsage
	}
	return ExitFailure
}
