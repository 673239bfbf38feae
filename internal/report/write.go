package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/memwho/memwho/internal/sample"
)

// Format is the form of the report on standard output.
type Format int

// The formats, one per output flag.
const (
	FormatTable Format = iota // the human table (Table), the default
	FormatJSON                // --json (JSON)
	FormatCSV                 // --csv (CSV)
	FormatTotal               // -t/--total: one number (TotalLine)
)

// Write renders groups and their total in format to w, built in memory
// and written at once, and then writes the warnings about estimates to
// stderr (Warn, with opt.Fast and opt.Scanner). procs are the processes the groups were
// made of (after -p and -u).
func Write(w, stderr io.Writer, format Format, groups []sample.Group, total sample.Group, procs []sample.Process, snap *sample.Snapshot, opt Options) error {
	var err error
	switch format {
	case FormatTotal:
		err = TotalLine(w, total)
	case FormatJSON:
		err = JSON(w, groups, total, snap, opt)
	case FormatCSV:
		err = CSV(w, groups, total, snap, opt)
	default:
		err = Table(w, groups, total, snap, opt)
	}
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	Warn(stderr, snap, procs, groups, opt.Fast, opt.Scanner)
	return nil
}

// MissingPIDs names on stderr the -p PIDs that the scan did not find (no
// such process, or one without memory: a kernel thread or a zombie), out
// of the asked many. When none of the asked were found, it returns an
// error instead: an empty report would read as "these processes use
// nothing".
func MissingPIDs(stderr io.Writer, missing []int, asked int) error {
	if len(missing) == 0 {
		return nil
	}
	ids := make([]string, len(missing))
	for i, pid := range missing {
		ids[i] = strconv.Itoa(pid)
	}
	list := strings.Join(ids, ", ")
	if len(missing) == asked {
		return fmt.Errorf("-p: no such process: %s (or only kernel threads and zombies, which have no memory)", list)
	}
	fmt.Fprintf(stderr, "memwho: warning: -p: no such process: %s (or a kernel thread or zombie, which has no memory)\n", list)
	return nil
}

// ConnsWarning is the warning line for --conns after
// engine.CountConns returned denied and err, or "" when every process's
// connections were counted.
func ConnsWarning(denied int, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("memwho: warning: --conns: %v", err)
	case denied > 0:
		return fmt.Sprintf("memwho: warning: --conns: %d processes' descriptors were not readable and count 0 connections", denied)
	}
	return ""
}
