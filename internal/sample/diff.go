package sample

import (
	"cmp"
	"slices"
)

// ChangeKind says how a group changed between two snapshots.
type ChangeKind uint8

const (
	// Grew: in both, more RAM in the second; or the same RAM and more
	// swap.
	Grew ChangeKind = iota
	// Shrank: in both, less RAM in the second; or the same RAM and less
	// swap.
	Shrank
	// Same: in both, with the same RAM, swap and process count.
	Same
	// Changed: in both, with the same RAM and swap but another process
	// count.
	Changed
	// Appeared: only in the second.
	Appeared
	// Vanished: only in the first.
	Vanished
)

var changeNames = [...]string{"grew", "shrank", "same", "changed", "appeared", "vanished"}

// String returns "grew", "shrank", "same", "changed", "appeared" or
// "vanished".
func (k ChangeKind) String() string { return changeNames[k] }

// Change is one group of a comparison of two snapshots: its figures in
// the first (Before) and the second (After); a group missing from one has
// the zero Group there.
type Change struct {
	Key           string
	Kind          ChangeKind
	Before, After Group
}

// RAMDelta is After.RAM - Before.RAM in bytes.
func (c *Change) RAMDelta() int64 { return int64(c.After.RAM) - int64(c.Before.RAM) }

// SwapDelta is After.Swap - Before.Swap in bytes.
func (c *Change) SwapDelta() int64 { return int64(c.After.Swap) - int64(c.Before.Swap) }

// Size is the size of the change in bytes, |RAMDelta| + |SwapDelta|: what
// Diff orders by. Both count, so that memory moved out to swap, or swap
// filling while RAM stays, ranks as the change it is.
func (c *Change) Size() uint64 {
	return absDiff(c.After.RAM, c.Before.RAM) + absDiff(c.After.Swap, c.Before.Swap)
}

// Diff compares the groups of two snapshots, grouped the same way, key by
// key, and returns every key of either, the largest change first (Size:
// RAM and swap), then the largest change of process count; ties by key.
func Diff(before, after []Group) []Change {
	idx := make(map[string]int, len(before)+len(after))
	out := make([]Change, 0, max(len(before), len(after)))
	for _, g := range before {
		idx[g.Key] = len(out)
		out = append(out, Change{Key: g.Key, Kind: Vanished, Before: g})
	}
	for _, g := range after {
		if i, ok := idx[g.Key]; ok {
			out[i].After = g
			out[i].Kind = kindOf(out[i].Before, g)
			continue
		}
		out = append(out, Change{Key: g.Key, Kind: Appeared, After: g})
	}
	slices.SortFunc(out, func(a, b Change) int {
		if c := cmp.Compare(b.Size(), a.Size()); c != 0 {
			return c
		}
		if c := cmp.Compare(countChange(&b), countChange(&a)); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return out
}

// kindOf classes a group present in both snapshots. RAM decides when it
// moved, as RAM is the figure the report and the diff lead with; swap
// decides only when RAM stayed. A process count that moved alone is
// neither growth nor shrinkage of memory, yet not Same either: Changed.
func kindOf(b, a Group) ChangeKind {
	switch {
	case a.RAM > b.RAM:
		return Grew
	case a.RAM < b.RAM:
		return Shrank
	case a.Swap > b.Swap:
		return Grew
	case a.Swap < b.Swap:
		return Shrank
	case a.Count != b.Count:
		return Changed
	}
	return Same
}

// countChange is |After.Count - Before.Count|, in processes.
func countChange(c *Change) int {
	if d := c.After.Count - c.Before.Count; d >= 0 {
		return d
	}
	return c.Before.Count - c.After.Count
}

func absDiff(a, b uint64) uint64 {
	if a < b {
		return b - a
	}
	return a - b
}
