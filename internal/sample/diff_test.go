package sample

import "testing"

func TestDiff(t *testing.T) {
	before := []Group{{Key: "a", RAM: 100}, {Key: "b", RAM: 50}, {Key: "gone", RAM: 30}, {Key: "same", RAM: 7}}
	after := []Group{{Key: "a", RAM: 90}, {Key: "b", RAM: 500}, {Key: "new", RAM: 20}, {Key: "same", RAM: 7}}
	got := Diff(before, after)
	want := []struct {
		key   string
		kind  ChangeKind
		delta int64
	}{
		{"b", Grew, 450}, {"gone", Vanished, -30}, {"new", Appeared, 20}, {"a", Shrank, -10}, {"same", Same, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d changes, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Key != w.key || got[i].Kind != w.kind || got[i].RAMDelta() != w.delta {
			t.Errorf("change %d = %s %v %d, want %s %v %d", i, got[i].Key, got[i].Kind, got[i].RAMDelta(), w.key, w.kind, w.delta)
		}
	}
}

// TestDiffKind: "same" means RAM, swap and process count all stayed;
// RAM decides grew or shrank when it moved, swap when it did not, and a
// process count that moved alone is "changed". Kinds are compared by
// name, the form the table and the JSON show.
func TestDiffKind(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name          string
		before, after Group
		want          string
	}{
		{"nothing moved", Group{RAM: mib, Swap: mib, Count: 2}, Group{RAM: mib, Swap: mib, Count: 2}, "same"},
		{"swap grew", Group{RAM: mib, Count: 1}, Group{RAM: mib, Swap: 100 * mib, Count: 1}, "grew"},
		{"swap shrank", Group{RAM: mib, Swap: 100 * mib, Count: 1}, Group{RAM: mib, Count: 1}, "shrank"},
		{"one more process", Group{RAM: mib, Count: 1}, Group{RAM: mib, Count: 2}, "changed"},
		{"one process fewer", Group{RAM: mib, Count: 2}, Group{RAM: mib, Count: 1}, "changed"},
		{"RAM grew, swap shrank more", Group{RAM: mib, Swap: 10 * mib}, Group{RAM: 2 * mib}, "grew"},
		{"RAM shrank, swap grew more", Group{RAM: 2 * mib}, Group{RAM: mib, Swap: 10 * mib}, "shrank"},
		{"RAM grew, fewer processes", Group{RAM: mib, Count: 3}, Group{RAM: 2 * mib, Count: 1}, "grew"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.before.Key, c.after.Key = "k", "k"
			got := Diff([]Group{c.before}, []Group{c.after})
			if len(got) != 1 || got[0].Kind.String() != c.want {
				t.Errorf("Diff = %+v, want one change %q", got, c.want)
			}
		})
	}
}

// TestDiffOrder: rows come largest |ΔRAM| + |Δswap| first, so that --top
// keeps a group whose swap moved; then the largest move of the process
// count; then by key.
func TestDiffOrder(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name          string
		before, after []Group
		want          []string
	}{
		{"swap outranks a smaller RAM change",
			[]Group{{Key: "ram", RAM: 10 * mib, Count: 1}, {Key: "swap", RAM: mib, Count: 1}},
			[]Group{{Key: "ram", RAM: 11 * mib, Count: 1}, {Key: "swap", RAM: mib, Swap: 100 * mib, Count: 1}},
			[]string{"swap", "ram"}},
		{"RAM and swap add up",
			[]Group{{Key: "a", RAM: 10 * mib}, {Key: "b", RAM: 10 * mib}},
			[]Group{{Key: "a", RAM: 13 * mib}, {Key: "b", RAM: 8 * mib, Swap: 2 * mib}},
			[]string{"b", "a"}},
		{"swapped out: RAM down, swap up, both count",
			[]Group{{Key: "a", RAM: 10 * mib}, {Key: "b", RAM: 10 * mib}},
			[]Group{{Key: "a", RAM: 7 * mib}, {Key: "b", RAM: 8 * mib, Swap: 2 * mib}},
			[]string{"b", "a"}},
		{"a count change before an unchanged group",
			[]Group{{Key: "a", RAM: mib, Count: 1}, {Key: "b", RAM: mib, Count: 1}, {Key: "c", RAM: mib, Count: 1}},
			[]Group{{Key: "a", RAM: mib, Count: 1}, {Key: "b", RAM: mib, Count: 2}, {Key: "c", RAM: mib, Count: 4}},
			[]string{"c", "b", "a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Diff(c.before, c.after)
			var keys []string
			for _, ch := range got {
				keys = append(keys, ch.Key)
			}
			if len(keys) != len(c.want) {
				t.Fatalf("order %q, want %q", keys, c.want)
			}
			for i := range keys {
				if keys[i] != c.want[i] {
					t.Fatalf("order %q, want %q", keys, c.want)
				}
			}
		})
	}
}
