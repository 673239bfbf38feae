package sample

import (
	"fmt"
	"os/user"
	"regexp"
	"slices"
	"strconv"
)

// Selection chooses, after a scan, what a report shows: which processes
// (-p, -u), how they are grouped, and which groups in which order
// (--filter, --sort, --reverse, --top).
type Selection struct {
	// PIDs keeps only these processes (sorted, as ParsePIDs returns
	// them); nil keeps all.
	PIDs []int
	// UID keeps only the processes of this user when HasUID is set.
	UID    uint32
	HasUID bool
	By     By
	// Filter keeps the groups whose key matches; nil keeps all.
	Filter  *regexp.Regexp
	Sort    SortKey
	Reverse bool
	// Top keeps the Top largest groups by Sort; 0 keeps all.
	Top int
	// Names names users and containers; nil uses a zero Namer.
	Names *Namer
}

// Procs keeps, in place, the processes of procs that PIDs and UID
// select, and returns them with the PIDs that were asked for and not
// found (no such process, or one without memory: a kernel thread or a
// zombie), sorted.
func (s *Selection) Procs(procs []Process) (kept []Process, missing []int) {
	if len(s.PIDs) > 0 {
		procs = slices.DeleteFunc(procs, func(p Process) bool {
			_, ok := slices.BinarySearch(s.PIDs, p.PID)
			return !ok
		})
		for _, pid := range s.PIDs {
			if !slices.ContainsFunc(procs, func(p Process) bool { return p.PID == pid }) {
				missing = append(missing, pid)
			}
		}
	}
	if s.HasUID {
		procs = slices.DeleteFunc(procs, func(p Process) bool { return p.UID != s.UID })
	}
	return procs, missing
}

// Groups groups procs as s.By says and returns the groups shown, in the
// order shown, and their total.
func (s *Selection) Groups(procs []Process) ([]Group, Group) {
	names := s.Names
	if names == nil {
		names = new(Namer)
	}
	groups := GroupProcs(procs, s.By, names)
	groups = Filter(groups, s.Filter)
	Sort(groups, s.Sort, s.Reverse)
	groups = Top(groups, s.Top, s.Reverse)
	return groups, Total(groups)
}

// LookupUser resolves -u: a user name from the user database, or a
// numeric uid.
func LookupUser(s string) (uint32, error) {
	if u, err := user.Lookup(s); err == nil {
		n, err := strconv.ParseUint(u.Uid, 10, 32)
		return uint32(n), err
	}
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return uint32(n), nil
	}
	return 0, fmt.Errorf("unknown user %q", s)
}

// ScanPIDs returns the processes a scan must read for s: PIDs, or nil
// (every process) when the report needs them all, as --system's ledger
// of the host does (the rows are chosen after the scan).
func (s *Selection) ScanPIDs(all bool) []int {
	if all {
		return nil
	}
	return s.PIDs
}
