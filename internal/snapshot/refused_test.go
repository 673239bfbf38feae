package snapshot

import (
	"testing"

	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/sample"
)

// TestRefusedAfterPaced encodes a process read page by page (a bound)
// whose next read was refused or malformed: the snapshot decodes, the
// process an estimate with the refusal's cause and no bound. A watch's
// reader sent such a process with the bound of its earlier tick beside
// the refusal, and memwho refused the whole snapshot as malformed.
func TestRefusedAfterPaced(t *testing.T) {
	for _, cause := range []sample.Cause{sample.CauseDenied, sample.CauseMalformed} {
		p := sample.Process{PID: 42, Comm: "big", RAM: 8 << 30, Private: 6 << 30}
		sample.ExactFigures(&p, &proc.Rollup{Pss: 8 << 30, PrivateDirty: 6 << 30, Bound: 1 << 20})
		if p.Cause != sample.CausePaced || p.Bound == 0 {
			t.Fatalf("paced figures: %+v", p)
		}
		sample.Refused(&p, cause)
		in := sample.Snapshot{Procs: []sample.Process{p}}
		var out sample.Snapshot
		if err := Decode(Encode(nil, &in), &out); err != nil {
			t.Fatalf("cause %v: %v", cause, err)
		}
		q := out.Procs[0]
		if q.Cause != cause || q.Accuracy != sample.Estimate || q.Bound != 0 || q.SwapBound != 0 {
			t.Errorf("cause %v: decoded %+v", cause, q)
		}
	}
}
