package store

import (
	"fmt"
	"strings"

	"github.com/memwho/memwho/internal/sample"
)

// Limit is the cgroup memory limit that applies to a process: the
// tightest over its cgroup and that cgroup's ancestors, in bytes, with
// the room left under it (Limit minus the limiting cgroup's usage). The
// zero value means no limit or unknown.
type Limit struct {
	Limit, Free uint64
}

// Builder turns snapshots into Samples, reusing its buffers. The zero
// value records only process rows; set Kinds for groups.
type Builder struct {
	// Host and BootID are copied into every sample.
	Host, BootID string
	// Kinds are the group kinds to add besides the process rows
	// (KindProgram, KindUser, KindCgroup, KindUnit, KindSlice,
	// KindContainer). KindUser needs snapshots taken with
	// engine.Options.NeedUID, the others NeedCgroup.
	Kinds []Kind
	// Containers names containers for KindContainer (see sample.Namer);
	// nil keys them by short id.
	Containers interface {
		Key(cgroupPath string) string
	}
	// Limit, if set, returns the cgroup memory limit of a process (from
	// its Cgroup path).
	Limit func(p *sample.Process) Limit

	names  sample.Namer
	limits []Limit
	groups map[groupKey]int
}

type groupKey struct {
	kind Kind
	key  string
}

// Fill sets dst from snap: one row per process (keyed by program name)
// and one per group of each of b.Kinds, in SortRows order. dst.Rows is
// reused.
func (b *Builder) Fill(dst *Sample, snap *sample.Snapshot) {
	*dst = Sample{Rows: dst.Rows[:0], Time: snap.Time, Host: b.Host, BootID: b.BootID, Procs: len(snap.Procs), Denied: snap.Denied}
	if snap.MeminfoOK {
		dst.Meminfo = snap.Meminfo
	}
	b.limits = b.limits[:0]
	for i := range snap.Procs {
		var l Limit
		if b.Limit != nil {
			l = b.Limit(&snap.Procs[i])
		}
		b.limits = append(b.limits, l)
	}
	for i := range snap.Procs {
		p := &snap.Procs[i]
		r := Row{Kind: KindProcess, Key: CleanKey(p.Name), PID: p.PID, StartTime: p.StartTime, Count: 1,
			PSS: p.RAM, Private: p.Private, Shared: p.Shared, Swap: p.Swap,
			MemLimit: b.limits[i].Limit, MemLimitFree: b.limits[i].Free}
		if p.Accuracy == sample.Estimate {
			r.Estimated = 1
		}
		dst.Rows = append(dst.Rows, r)
	}
	if b.groups == nil {
		b.groups = make(map[groupKey]int)
	}
	b.names.Containers = b.Containers
	for _, k := range b.Kinds {
		clear(b.groups)
		for i := range snap.Procs {
			p := &snap.Procs[i]
			gk := groupKey{k, CleanKey(groupName(p, k, &b.names))}
			j, ok := b.groups[gk]
			if !ok {
				j = len(dst.Rows)
				b.groups[gk] = j
				dst.Rows = append(dst.Rows, Row{Kind: k, Key: gk.key, MemLimit: b.limits[i].Limit, MemLimitFree: b.limits[i].Free})
			}
			g := &dst.Rows[j]
			g.Count++
			g.PSS += p.RAM
			g.Private += p.Private
			g.Shared += p.Shared
			g.Swap += p.Swap
			if p.Accuracy == sample.Estimate {
				g.Estimated++
			}
			// A group has a limit only if all its processes are under
			// the same one.
			if g.MemLimit != b.limits[i].Limit || g.MemLimitFree != b.limits[i].Free {
				g.MemLimit, g.MemLimitFree = 0, 0
			}
		}
	}
	SortRows(dst.Rows)
}

// groupName is the key of p in a group of kind k, as `memwho report --by`
// names it.
func groupName(p *sample.Process, k Kind, names *sample.Namer) string {
	switch k {
	case KindUser:
		return sample.Key(p, sample.ByUser, names)
	case KindCgroup:
		return sample.Key(p, sample.ByCgroup, names)
	case KindUnit:
		return sample.Key(p, sample.ByUnit, names)
	case KindSlice:
		return sample.Key(p, sample.BySlice, names)
	case KindContainer:
		return sample.Key(p, sample.ByContainer, names)
	}
	return p.Name
}

// ParseKinds parses a comma-separated list of group kinds ("program,
// user,cgroup"); "" and "none" mean no groups.
func ParseKinds(s string) ([]Kind, error) {
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []Kind
	for _, f := range strings.Split(s, ",") {
		k, err := ParseKind(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if k == KindProcess {
			return nil, fmt.Errorf("process rows are always recorded; want program, user, cgroup, unit, slice or container")
		}
		out = append(out, k)
	}
	return out, nil
}
