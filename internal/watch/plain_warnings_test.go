package watch

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

// TestRunPlainWarnings: the skipped-process warning of
// plain watch can be neither hidden nor made to flood. A count that
// comes back after a clean snapshot is warned again (a steady count once:
// the message would be the same); an attacker who makes the count change
// at every snapshot gets at most one warning per snapshot, after its
// table, never more.
func TestRunPlainWarnings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		broken []int
		want   []int
	}{
		{"back after a clean snapshot", []int{3, 0, 3, 3, 0, 0, 3}, []int{3, 3, 3}},
		{"flapping every snapshot", []int{0, 4, 5, 4, 5, 4}, []int{0, 4, 5, 4, 5, 4}},
		{"steady", []int{7, 7, 7, 7}, []int{7}},
		{"clean", []int{0, 0, 0}, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &brokenSampler{seqSampler: seqSampler{procs: []proc{{pid: 1, name: "a", ram: constant(1 << 20)}}}, broken: tc.broken}
			var warned []int
			var out bytes.Buffer
			tables := 0
			err := RunPlain(context.Background(), &out, s, Options{Interval: time.Millisecond, Count: len(tc.broken)},
				func(snap *sample.Snapshot, _ []sample.Group) {
					// After this snapshot's table: as many tables
					// written as warnings plus those not warned.
					tables = bytes.Count(out.Bytes(), []byte("total"))
					if tables < len(warned)+1 {
						t.Errorf("warning %d before its table (%d tables)", len(warned)+1, tables)
					}
					warned = append(warned, snap.Broken)
				})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(warned, tc.want) {
				t.Errorf("warned with Broken %v, want %v", warned, tc.want)
			}
		})
	}
}
