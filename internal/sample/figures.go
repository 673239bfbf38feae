package sample

import "github.com/memwho/memwho/internal/proc"

// This file exports the pieces of a scan that the sampling engine
// (internal/engine) reuses, so that a process read by the engine gets
// exactly the figures and names a report would give it.

// ExactFigures fills p's RAM, Private, Shared, Swap and Accuracy from a
// smaps_rollup (or summed smaps), as a report does.
func ExactFigures(p *Process, ru *proc.Rollup) { setExact(p, ru) }

// EstimateFigures fills p's figures from status (RSS-based estimates), as
// a report does when the page-table walk is refused or --fast is given.
func EstimateFigures(p *Process, ss *proc.Status) { setEstimate(p, ss) }

// IsInterpreter reports whether exe (a basename) is a script interpreter
// whose command line names the program (python3, bash, node...).
func IsInterpreter(exe string) bool { return isInterpreter(exe) }

// ScriptOf returns the basename of the script the interpreter exe runs,
// given its NUL-separated /proc/PID/cmdline, or nil when it runs none.
// The result aliases cmdline.
func ScriptOf(exe string, cmdline []byte) []byte { return scriptOf(exe, cmdline) }
