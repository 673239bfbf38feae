package engine

import (
	"testing"

	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/memwho/memwho/internal/sample"
)

// TestScanReadsHostBefore: both kinds of walk read the host's figures
// before the walk as well as after it, so that the ledger can say what
// moved while the processes were read (sample.SnapshotLedger); meminfo
// was read after the walk only, and whatever was allocated or freed
// meanwhile landed in "not accounted" unsaid.
func TestScanReadsHostBefore(t *testing.T) {
	root := proctest.Root(t, "../proc/testdata/basic.txtar")
	for _, oneShot := range []bool{true, false} {
		s, err := New(Options{FS: fstest.Open(t, root), OneShot: oneShot})
		if err != nil {
			t.Fatal(err)
		}
		var snap sample.Snapshot
		if err := s.Scan(&snap); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if !snap.BeforeOK || !snap.MeminfoOK {
			t.Errorf("OneShot %v: read before %v, after %v", oneShot, snap.BeforeOK, snap.MeminfoOK)
		}
		// The tree does not move: the same figures, and a span.
		if snap.Before != snap.Meminfo || snap.BeforeSpan <= 0 {
			t.Errorf("OneShot %v: before %+v after %+v, span %v", oneShot, snap.Before, snap.Meminfo, snap.BeforeSpan)
		}
	}
}
