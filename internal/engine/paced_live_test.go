package engine_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/testload"
)

// TestPacedMatchesRollup scans processes past the paced walk size both
// ways, one-shot and incrementally: read page by page they show
// smaps_rollup's private memory, and as root every figure of it, with
// no bound; as another user, their RAM within the bound above it.
func TestPacedMatchesRollup(t *testing.T) {
	g := startLoad(t, 2, testload.Spec{Private: 80 * miB, FileShared: 16 * miB, OwnText: true})
	pids := g.All()
	root := os.Geteuid() == 0
	// The shares of the test binary's pages move while other processes
	// map it (other tests, other engineers' builds): a round is taken
	// again, up to five times, until the two reads agree.
	var rollup map[int]sample.Process
	for round := 1; ; round++ {
		var msgs []string
		rollup, msgs = pacedRound(t, pids, root)
		if len(msgs) == 0 {
			break
		}
		if round == 5 {
			for _, m := range msgs {
				t.Error(m)
			}
			break
		}
	}

	// The incremental sampler reads them page by page too.
	e, err := engine.New(engine.Options{FS: fstest.Open(t, "/proc"), PIDs: pids, WalkBudget: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var snap sample.Snapshot
	if err := e.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Paced != len(pids) {
		t.Errorf("incremental scan read %d processes page by page, want %d", st.Paced, len(pids))
	}
	for _, p := range snap.Procs {
		if p.Private != rollup[p.PID].Private {
			t.Errorf("incremental pid %d: Private %d, smaps_rollup %d", p.PID, p.Private, rollup[p.PID].Private)
		}
	}
}

// pacedRound scans pids by smaps_rollup and page by page, and returns
// the rollup's processes and what disagrees.
func pacedRound(t *testing.T, pids []int, root bool) (rollup map[int]sample.Process, msgs []string) {
	rollup = scanPIDs(t, engine.Options{PacedMin: -1}, pids...)
	paced := scanPIDs(t, engine.Options{}, pids...)
	for _, pid := range pids {
		r, p := rollup[pid], paced[pid]
		t.Logf("pid %d: rollup RAM %s private %s; paced RAM %s private %s bound %s (%v %v)",
			pid, kb(int64(r.RAM)), kb(int64(r.Private)), kb(int64(p.RAM)), kb(int64(p.Private)), kb(int64(p.Bound)), p.Accuracy, p.Cause)
		if p.Private != r.Private {
			msgs = append(msgs, fmt.Sprintf("pid %d: Private %d, smaps_rollup %d", pid, p.Private, r.Private))
		}
		if root {
			if p.RAM != r.RAM || p.Shared != r.Shared || p.PssAnon != r.PssAnon || p.PssFile != r.PssFile ||
				p.Accuracy != sample.Exact || p.Bound != 0 {
				msgs = append(msgs, fmt.Sprintf("pid %d as root: paced %+v, smaps_rollup %+v", pid, p, r))
			}
		} else if p.Cause == sample.CausePaced && (p.RAM < r.RAM || p.RAM > r.RAM+p.Bound+kiB) {
			msgs = append(msgs, fmt.Sprintf("pid %d: RAM %d (bound %d), smaps_rollup %d", pid, p.RAM, p.Bound, r.RAM))
		}
	}
	return rollup, msgs
}
