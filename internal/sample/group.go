package sample

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"os/user"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/memwho/memwho/internal/cgroup"
	"github.com/memwho/memwho/internal/container"
)

// By names a grouping of processes.
type By uint8

const (
	// ByProgram groups by program name (see ProgramName).
	ByProgram By = iota
	// ByPID gives every process its own group, keyed "NAME [PID]".
	ByPID
	// ByUser groups by real user.
	ByUser
	// ByCgroup groups by cgroup path.
	ByCgroup
	// ByUnit groups by systemd unit (cgroup.Unit of SystemdCgroup).
	ByUnit
	// BySlice groups by the slice of the systemd unit (cgroup.Slice).
	BySlice
	// ByContainer groups by container name, "host" outside any
	// (Namer.Containers).
	ByContainer
)

var byNames = []string{"program", "pid", "user", "cgroup", "unit", "slice", "container"}

// String returns the flag spelling of b.
func (b By) String() string { return byNames[b] }

// ParseBy parses a --by value.
func ParseBy(s string) (By, error) {
	for i, n := range byNames {
		if s == n {
			return By(i), nil
		}
	}
	return 0, fmt.Errorf("unknown grouping %q (want program, pid, user, cgroup, unit, slice or container)", s)
}

// NeedsCgroup reports whether keys of grouping b need Process.Cgroup and
// SystemdCgroup (engine.Options.NeedCgroup).
func (b By) NeedsCgroup() bool {
	return b == ByCgroup || b == ByUnit || b == BySlice || b == ByContainer
}

// Namer names groups: user names, and container names through
// Containers. The zero value is ready to use and names containers by
// their short ids only, reading no file.
type Namer struct {
	Users
	// Containers names the container of a cgroup path (ByContainer);
	// nil keys containers by container.Parse alone. Commands set a
	// container.Names reading the runtimes' state.
	Containers interface {
		Key(cgroupPath string) string
	}
}

// ContainerKey returns the ByContainer key of a cgroup path.
func (n *Namer) ContainerKey(path string) string {
	if n.Containers != nil {
		return n.Containers.Key(path)
	}
	ref, ok := container.Parse(path)
	if !ok {
		return container.Host
	}
	return ref.Short()
}

// Users maps uids to user names, remembering each answer. The zero value
// is ready to use.
type Users struct{ m map[uint32]string }

// Name returns the user name of uid, or the number when the user database
// has none.
func (u *Users) Name(uid uint32) string {
	if n, ok := u.m[uid]; ok {
		return n
	}
	if u.m == nil {
		u.m = make(map[uint32]string)
	}
	id := strconv.FormatUint(uint64(uid), 10)
	n := id
	if usr, err := user.LookupId(id); err == nil {
		n = usr.Username
	}
	u.m[uid] = n
	return n
}

// Key returns the key p is grouped under.
func Key(p *Process, by By, names *Namer) string {
	switch by {
	case ByPID:
		return p.Name + " [" + strconv.Itoa(p.PID) + "]"
	case ByUser:
		if !p.UIDKnown {
			return "?"
		}
		return names.Name(p.UID)
	case ByCgroup:
		if p.Cgroup == "" {
			return "?"
		}
		return CgroupName(p.Cgroup)
	case ByUnit, BySlice, ByContainer:
		path := p.SystemdCgroup
		if path == "" {
			path = p.Cgroup
		}
		switch {
		case path == "":
			return "?"
		case by == ByUnit:
			return shortIDs(cgroup.Unit(path))
		case by == BySlice:
			return shortIDs(cgroup.Slice(path))
		}
		return names.ContainerKey(path)
	}
	return p.Name
}

// GroupProcs sums procs into groups by key, in no particular order.
//
// Every group's PIDs share one backing array, sized once: a report
// allocates it once and the live view and the agent once per tick,
// where appending to each group's own slice grew each by doubling.
func GroupProcs(procs []Process, by By, names *Namer) []Group {
	idx := make(map[string]int)
	var groups []Group
	// of[i] is the group of procs[i], so that keys (which allocate for
	// --by pid) are made once.
	of := make([]int32, len(procs))
	for i := range procs {
		p := &procs[i]
		k := Key(p, by, names)
		j, ok := idx[k]
		if !ok {
			j = len(groups)
			idx[k] = j
			groups = append(groups, Group{Key: k})
		}
		of[i] = int32(j)
		groups[j].add(p)
	}
	pids := make([]int, len(procs))
	off := 0
	for i := range groups {
		g := &groups[i]
		g.PIDs = pids[off : off : off+g.Count]
		off += g.Count
	}
	for i := range procs {
		g := &groups[of[i]]
		g.PIDs = append(g.PIDs, procs[i].PID)
	}
	for i := range groups {
		if pids := groups[i].PIDs; !slices.IsSorted(pids) {
			slices.Sort(pids)
		}
	}
	return groups
}

// add adds p's figures to g (not its PID).
func (g *Group) add(p *Process) {
	g.Count++
	g.addFigures(p.RAM, p.Private, p.Shared, p.Swap, p.PssAnon, p.PssFile, p.PssShmem, p.PrivateHugetlb)
	g.Conns += uint64(p.Conns)
	if p.Accuracy == Estimate {
		g.Estimated++
		if p.Swap == 0 {
			g.EstimatedNoSwap++
		}
	}
	if p.Cause == CausePaced {
		g.Paced++
		g.Bound = addSat(g.Bound, p.Bound)
		g.SwapBound = addSat(g.SwapBound, p.SwapBound)
	}
	if p.SwapPssMissing {
		g.SwapPssMissing = true
	}
}

// addFigures adds figures in bytes to g's sums, saturating: the one
// summing rule of a group from processes (add) and of a total from
// groups (Total).
func (g *Group) addFigures(ram, private, shared, swap, anon, file, shmem, hugetlb uint64) {
	g.RAM = addSat(g.RAM, ram)
	g.Private = addSat(g.Private, private)
	g.Shared = addSat(g.Shared, shared)
	g.Swap = addSat(g.Swap, swap)
	g.PssAnon = addSat(g.PssAnon, anon)
	g.PssFile = addSat(g.PssFile, file)
	g.PssShmem = addSat(g.PssShmem, shmem)
	g.PrivateHugetlb = addSat(g.PrivateHugetlb, hugetlb)
}

// SumProcs sums procs into one group keyed "total" (without PIDs): the
// host's ledger of --system, whatever groups a report shows.
func SumProcs(procs []Process) Group {
	g := Group{Key: "total"}
	for i := range procs {
		g.add(&procs[i])
	}
	return g
}

// Total sums groups into one group keyed "total" (without PIDs).
func Total(groups []Group) Group {
	t := Group{Key: "total"}
	for i := range groups {
		g := &groups[i]
		t.Count += g.Count
		t.addFigures(g.RAM, g.Private, g.Shared, g.Swap, g.PssAnon, g.PssFile, g.PssShmem, g.PrivateHugetlb)
		t.Conns += g.Conns
		t.Estimated += g.Estimated
		t.SwapPssMissing = t.SwapPssMissing || g.SwapPssMissing
		t.EstimatedNoSwap += g.EstimatedNoSwap
		t.Paced += g.Paced
		t.Bound = addSat(t.Bound, g.Bound)
		t.SwapBound = addSat(t.SwapBound, g.SwapBound)
	}
	return t
}

// SortKey names a --sort column.
type SortKey uint8

// Sort columns.
const (
	SortRAM SortKey = iota
	SortPrivate
	SortShared
	SortSwap
	SortCount
	SortName
)

var sortNames = []string{"ram", "private", "shared", "swap", "count", "name"}

// ParseSort parses a --sort value.
func ParseSort(s string) (SortKey, error) {
	for i, n := range sortNames {
		if s == n {
			return SortKey(i), nil
		}
	}
	return 0, fmt.Errorf("unknown sort column %q (want ram, private, shared, swap, count or name)", s)
}

// Compare orders a and b by the column key, ascending; 0 when they are
// equal in it. SortName compares nothing: the name breaks every tie, and
// each view decides how (Sort here, watch.SortRows for the live view).
// This is the one definition of what a sort column means.
func (key SortKey) Compare(a, b *Group) int {
	switch key {
	case SortRAM:
		return cmp.Compare(a.RAM, b.RAM)
	case SortPrivate:
		return cmp.Compare(a.Private, b.Private)
	case SortShared:
		return cmp.Compare(a.Shared, b.Shared)
	case SortSwap:
		return cmp.Compare(a.Swap, b.Swap)
	case SortCount:
		return cmp.Compare(a.Count, b.Count)
	}
	return 0
}

// Sort orders groups ascending by key (so the largest is printed last,
// just above the prompt), ties broken by name; reverse flips the order,
// ties included.
func Sort(groups []Group, key SortKey, reverse bool) {
	slices.SortStableFunc(groups, func(a, b Group) int {
		c := key.Compare(&a, &b)
		if c == 0 {
			c = strings.Compare(a.Key, b.Key)
		}
		if reverse {
			c = -c
		}
		return c
	})
}

// Top keeps the n largest groups by key of groups sorted by Sort; with
// the default ascending order they are the last n. n <= 0 keeps all.
func Top(groups []Group, n int, reverse bool) []Group {
	if n <= 0 || n >= len(groups) {
		return groups
	}
	if reverse {
		return groups[:n]
	}
	return groups[len(groups)-n:]
}

// Filter keeps the groups whose key matches re.
func Filter(groups []Group, re *regexp.Regexp) []Group {
	if re == nil {
		return groups
	}
	out := groups[:0]
	for _, g := range groups {
		if re.MatchString(g.Key) {
			out = append(out, g)
		}
	}
	return out
}

// containerID matches the 64-hex-digit ids that container runtimes put in
// cgroup paths. It is compiled on first use: most runs never group by
// cgroup.
var containerID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[0-9a-f]{64}`) })

// CgroupName makes a cgroup path readable: container ids are shortened
// to their first 12 hex digits, as docker and podman show them. The rest
// of the path (slices, units, scopes) is kept so that no two cgroups
// share a name.
func CgroupName(path string) string {
	if !strings.Contains(path, "/") {
		return path
	}
	return shortIDs(path)
}

// shortIDs shortens the container ids in s to 12 hex digits: every run
// of 64 lower-case hex digits, left to right, as containerID would match
// them (TestShortIDs holds the two equal). A scan instead of the regular
// expression: it runs for every process of every grouping by cgroup, unit
// or slice, and allocates only when it shortens.
func shortIDs(s string) string {
	if len(s) < 64 {
		return s
	}
	var b []byte
	run, last := 0, 0 // hex digits in the current run; s[last:] not yet copied
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			run = 0
			continue
		}
		if run++; run == 64 {
			start := i + 1 - 64
			b = append(b, s[last:start+12]...)
			last, run = i+1, 0
		}
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

// addSat is a + b, or the largest uint64 when that overflows: a total of
// bytes that wrapped would show less than one of its rows. Each process's
// figure is at most proc.MaxBytes (4 PiB), but a fake tree can hold
// millions of such processes.
func addSat(a, b uint64) uint64 {
	if s, carry := bits.Add64(a, b, 0); carry == 0 {
		return s
	}
	return math.MaxUint64
}

// ParsePIDs parses a -p list, "1,2,3", into process ids, sorted and
// without repeats: a pid named twice is still one process, and the
// commands that filter by it search the list. Spaces around an id are
// allowed; anything that is not a positive decimal number, written in
// digits alone, is an error.
func ParsePIDs(list string) ([]int, error) {
	var pids []int
	for _, s := range strings.Split(list, ",") {
		id := strings.TrimSpace(s)
		n, err := strconv.Atoi(id)
		// Digits only: Atoi also takes "+5", which no tool prints.
		if err != nil || n <= 0 || strings.TrimLeft(id, "0123456789") != "" {
			return nil, fmt.Errorf("%q is not a process id", s)
		}
		pids = append(pids, n)
	}
	slices.Sort(pids)
	return slices.Compact(pids), nil
}
