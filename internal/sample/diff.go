package sample

import (
	"cmp"
	"slices"
)

// ChangeKind says how a group changed between two snapshots.
type ChangeKind uint8

const (
	// Grew: in both, more RAM in the second.
	Grew ChangeKind = iota
	// Shrank: in both, less RAM in the second.
	Shrank
	// Same: in both, the same RAM.
	Same
	// Appeared: only in the second.
	Appeared
	// Vanished: only in the first.
	Vanished
)

var changeNames = [...]string{"grew", "shrank", "same", "appeared", "vanished"}

// String returns "grew", "shrank", "same", "appeared" or "vanished".
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

// Diff compares the groups of two snapshots, grouped the same way, key by
// key, and returns every key of either, the largest change of RAM (grown
// or shrunk) first; ties by key.
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
			switch {
			case g.RAM > out[i].Before.RAM:
				out[i].Kind = Grew
			case g.RAM < out[i].Before.RAM:
				out[i].Kind = Shrank
			default:
				out[i].Kind = Same
			}
			continue
		}
		out = append(out, Change{Key: g.Key, Kind: Appeared, After: g})
	}
	slices.SortFunc(out, func(a, b Change) int {
		if c := cmp.Compare(abs64(b.RAMDelta()), abs64(a.RAMDelta())); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return out
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
