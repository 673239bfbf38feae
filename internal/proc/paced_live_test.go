package proc

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/testload"
)

// pacedCase is a process of known kinds of pages whose paced read is
// compared with smaps_rollup.
type pacedCase struct {
	name string
	n    int // children sharing what they share
	spec testload.Spec
	// setup readies the host (and spec) before the children start;
	// started works on them once they have.
	setup   func(t *testing.T, spec *testload.Spec)
	started func(t *testing.T, g *testload.Group)
}

// swapped pushes half of each child's memory (and its COW partner's) to
// swap through a memory cgroup.
func swapped(half int64) (func(*testing.T, *testload.Spec), func(*testing.T, *testload.Group)) {
	var cg *testload.MemCgroup
	return func(t *testing.T, spec *testload.Spec) {
			testload.EnsureSwap(t, 256<<20)
			cg = testload.NewMemCgroup(t)
			spec.Cgroup = cg.Path
		}, func(t *testing.T, g *testload.Group) {
			cg.PushToSwap(t, half, g.All()...)
		}
}

func swapCase(name string, spec testload.Spec, half int64) pacedCase {
	setup, started := swapped(half)
	return pacedCase{name: name, spec: spec, setup: setup, started: started}
}

var pacedCases = []pacedCase{
	{name: "anonymous", spec: testload.Spec{Private: 48 << 20}},
	{name: "file shared by three", n: 3, spec: testload.Spec{FileShared: 24 << 20}},
	{name: "memfd shared by two", n: 2, spec: testload.Spec{MemfdShared: 24 << 20}},
	{name: "own shmem", spec: testload.Spec{Shmem: 16 << 20}},
	{name: "copy-on-write after fork", spec: testload.Spec{COW: 32 << 20, Private: 8 << 20}},
	{name: "transparent huge pages", spec: testload.Spec{THP: 32 << 20}},
	{name: "zero page", spec: testload.Spec{ZeroRead: 32 << 20, Private: 4 << 20}},
	{name: "private file half written", spec: testload.Spec{FilePrivate: 16 << 20}},
	{name: "hugetlb", spec: testload.Spec{Hugetlb: 8 << 20, Private: 4 << 20},
		setup: func(t *testing.T, _ *testload.Spec) { testload.EnsureHugePages(t, 4) }},
	// A terabyte reserved and barely used beside 80 MiB: its pages are
	// found by PAGEMAP_SCAN, not by reading 2 GiB of empty entries.
	{name: "sparse terabyte", spec: testload.Spec{Private: 80 << 20, Sparse: 1 << 40}},
	// More shared pages than Paced looks up: their shares come from a
	// sample, within Bound.
	{name: "memfd shared beyond the lookups", n: 2, spec: testload.Spec{MemfdShared: 96 << 20}},
	swapCase("partly swapped", testload.Spec{Private: 48 << 20}, 24<<20),
	swapCase("swapped copy-on-write", testload.Spec{COW: 32 << 20}, 16<<20),
}

// TestPacedMatchesRollup reads real processes holding each kind of page
// both ways. With frame lookups (root), every figure is smaps_rollup's to
// the byte but SwapPss; without, Private is, and Pss lies within Bound
// above smaps_rollup's.
func TestPacedMatchesRollup(t *testing.T) {
	fs := openLive(t)
	var kp *KPages
	if os.Geteuid() == 0 {
		var err error
		if kp, err = fs.OpenKPages(); err != nil {
			t.Fatalf("OpenKPages as root: %v", err)
		}
	}
	for _, c := range pacedCases {
		t.Run(c.name, func(t *testing.T) {
			spec := c.spec
			spec.OwnText = true
			if c.setup != nil {
				c.setup(t, &spec)
			}
			n := max(c.n, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			g, err := testload.Start(ctx, n, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Stop()
			if c.started != nil {
				c.started(t, g)
			}
			for _, pid := range g.All() {
				if kp != nil {
					comparePaced(t, fs, pid, kp, true)
				}
				comparePaced(t, fs, pid, nil, false)
			}
		})
	}
}

// comparePaced reads pid by smaps_rollup, paced, and smaps_rollup again,
// and checks the paced figures against them. Pages the child shares
// with the rest of the host (the C library of a test binary built with
// cgo, the vDSO) change their shares whenever some process starts or
// exits, by less than the kB smaps_rollup shows: a round whose two
// rollups agree can still have seen a short-lived process come and go.
// So rounds are repeated until one matches, up to 20.
func comparePaced(t *testing.T, fs *FS, pid int, kp *KPages, exact bool) {
	t.Helper()
	r := fs.NewReader()
	defer r.Close()
	// As root the Pacer opens its frame lookups itself.
	pc := &Pacer{NoLookups: kp == nil}
	var before, after, paced Rollup
	var errs []string
	for try := 0; try < 20; try++ {
		r.Select(pid)
		if err := r.SmapsRollup(&before); err != nil {
			t.Fatalf("pid %d: smaps_rollup: %v", pid, err)
		}
		st, err := r.Statm()
		if err != nil {
			t.Fatalf("pid %d: statm: %v", pid, err)
		}
		if err := r.HoldPagemap(); err != nil {
			t.Fatalf("pid %d: pagemap: %v", pid, err)
		}
		if err := r.Paced(&paced, pc, st); err != nil {
			t.Fatalf("pid %d: paced: %v", pid, err)
		}
		if err := r.SmapsRollup(&after); err != nil {
			t.Fatalf("pid %d: smaps_rollup: %v", pid, err)
		}
		// The first round is not compared: this process runs code
		// for the first time in it, and the pages of the test binary
		// it faults in are shared with the child.
		if try == 0 || before.Pss != after.Pss || before.Rss != after.Rss || before.Swap != after.Swap {
			continue
		}
		if errs = pacedDiffs(pid, &paced, &after, pc, kp, exact); len(errs) == 0 {
			break
		}
	}
	for _, e := range errs {
		t.Error(e)
	}
	ru := &after
	if exact && paced.Bound != 0 {
		// Sampled: near, whatever the bound allows.
		if d := float64(paced.Pss) - float64(ru.Pss); d > 0.02*float64(ru.Pss) || -d > 0.02*float64(ru.Pss) {
			t.Errorf("pid %d: sampled Pss %d, smaps_rollup %d: off by more than 2%%", pid, paced.Pss, ru.Pss)
		}
	}
	priv := func(x *Rollup) uint64 { return x.PrivateClean + x.PrivateDirty }
	if paced.Rss > 0 && pc.Entries > 64*(paced.Rss/pageSize)+1<<20 {
		t.Errorf("pid %d: %d entries read for %d resident pages", pid, pc.Entries, paced.Rss/pageSize)
	}
	t.Logf("pid %d (frame lookups %v): Pss %d (rollup %d, bound %d) Private %d Rss %d SwapPss %d (rollup %d), %d entries, %d scans, %d pauses",
		pid, kp != nil, paced.Pss, ru.Pss, paced.Bound, priv(&paced), paced.Rss, paced.SwapPss, ru.SwapPss, pc.Entries, pc.Scans, pc.Pauses)
}

// pacedDiffs lists how paced differs from smaps_rollup's ru beyond what
// it may: with frame lookups (exact) and no bound, in nothing; else in
// nothing but Pss, within Bound (from above without lookups).
func pacedDiffs(pid int, paced, ru *Rollup, pc *Pacer, kp *KPages, exact bool) []string {
	var errs []string
	if exact && pc.KP == nil {
		errs = append(errs, fmt.Sprintf("pid %d: the Pacer did not open its frame lookups as root", pid))
	}
	if !paced.Paced {
		errs = append(errs, fmt.Sprintf("pid %d: Paced not set", pid))
	}
	priv := func(x *Rollup) uint64 { return x.PrivateClean + x.PrivateDirty }
	shared := func(x *Rollup) uint64 { return x.SharedClean + x.SharedDirty }
	type fig struct {
		name      string
		got, want uint64
	}
	figs := []fig{
		{"Private", priv(paced), priv(ru)},
		{"Private_Hugetlb", paced.PrivateHugetlb, ru.PrivateHugetlb},
		{"Shared_Hugetlb", paced.SharedHugetlb, ru.SharedHugetlb},
		{"Swap", paced.Swap, ru.Swap},
	}
	if exact && paced.Bound == 0 {
		figs = append(figs,
			fig{"Rss", paced.Rss, ru.Rss},
			fig{"Pss", paced.Pss, ru.Pss},
			fig{"Pss_Anon", paced.PssAnon, ru.PssAnon},
			fig{"Pss_File", paced.PssFile, ru.PssFile},
			fig{"Pss_Shmem", paced.PssShmem, ru.PssShmem},
			fig{"Shared", shared(paced), shared(ru)},
			fig{"Anonymous", paced.Anonymous, ru.Anonymous},
		)
	}
	for _, f := range figs {
		if f.got != f.want {
			errs = append(errs, fmt.Sprintf("pid %d (frame lookups %v): %s = %d, smaps_rollup %d", pid, kp != nil, f.name, f.got, f.want))
		}
	}
	// Within Bound of smaps_rollup (kB truncation of the two sums
	// aside); without lookups, from above.
	if paced.Pss > ru.Pss+paced.Bound+1024 || paced.Pss+paced.Bound+1024 < ru.Pss || !exact && paced.Pss+1024 < ru.Pss {
		errs = append(errs, fmt.Sprintf("pid %d (frame lookups %v): Pss %d (bound %d), smaps_rollup %d", pid, kp != nil, paced.Pss, paced.Bound, ru.Pss))
	}
	if paced.SwapPss < ru.SwapPss || paced.SwapPss > ru.SwapPss+paced.SwapBound {
		errs = append(errs, fmt.Sprintf("pid %d: SwapPss %d (bound %d), smaps_rollup %d", pid, paced.SwapPss, paced.SwapBound, ru.SwapPss))
	}
	return errs
}
