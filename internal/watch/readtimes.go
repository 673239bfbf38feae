package watch

import (
	"time"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/sample"
)

// detailer is implemented by the sampling engine: what it knows of each
// process of the last scan, in the snapshot's order.
type detailer interface {
	Details() []engine.Detail
}

// readTimes returns, for each process of snap, when the figures it holds
// were read, or nil when they all describe snap.Time: the sampler says
// nothing of the kind (a test's fake sampler), or it held no figure back
// (a OneShot engine never does). The engine holds a figure back when a process
// changed but its cost budget postponed the walk (Detail.Deferred); a
// process it did not re-walk because it did not change has figures that
// are still current.
func readTimes(s Sampler, snap *sample.Snapshot) []time.Time {
	d, ok := s.(detailer)
	if !ok {
		return nil
	}
	ds := d.Details()
	if len(ds) != len(snap.Procs) {
		return nil
	}
	var at []time.Time
	for i := range ds {
		if !ds[i].Deferred || ds[i].PID != snap.Procs[i].PID || ds[i].SampledAt.IsZero() {
			continue
		}
		if at == nil {
			at = make([]time.Time, len(ds))
			for j := range at {
				at[j] = snap.Time
			}
		}
		at[i] = ds[i].SampledAt
	}
	return at
}
