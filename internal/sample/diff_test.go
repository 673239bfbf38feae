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
