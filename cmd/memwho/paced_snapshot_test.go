package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/sample"
)

// pacedSnap is plausibleSnap with both processes read page by page, their
// bounds set by bounds.
func pacedSnap(taken time.Time, bounds func(p []sample.Process)) *sample.Snapshot {
	return plausibleSnap(taken, func(s *sample.Snapshot) {
		for i := range s.Procs {
			s.Procs[i].Accuracy, s.Procs[i].Cause = sample.Estimate, sample.CausePaced
			s.Procs[i].Bound = 1 << 20
		}
		bounds(s.Procs)
	})
}

// TestPacedBoundsInSnapshots: the bounds of processes read page by page
// (snapshot sections 36 and 37) come from snapshot files and agents too.
// Their sums must not wrap: bounds of 2^64 - 1 and 2 made the report's
// note say "RAM within 1.0 B" over processes whose figures could be off
// by anything. Totals of bounds stay within an int64, and a swap bound
// over the process's swap, which no sampler writes, is refused, from a
// file as from an agent (whose snapshot the report then walks /proc
// instead of showing).
func TestPacedBoundsInSnapshots(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	good := writeSnap(t, pacedSnap(now, func([]sample.Process) {}), now)
	out, errOut, code := runArgs("--from", good, "--by", "pid")
	if code != cli.ExitOK || !strings.Contains(errOut, "RAM within 2.0 MiB") {
		t.Fatalf("a plausible snapshot of paced processes: exit %d\n%s%s", code, out, errOut)
	}
	for name, spoil := range map[string]func(p []sample.Process){
		"bounds wrap":          func(p []sample.Process) { p[0].Bound, p[1].Bound = math.MaxUint64, 2 },
		"bounds over 2^63":     func(p []sample.Process) { p[0].Bound, p[1].Bound = 1<<62, 1<<62 },
		"swap bounds wrap":     func(p []sample.Process) { p[1].SwapBound, p[0].SwapBound = 1<<20, math.MaxUint64 },
		"swap bound over swap": func(p []sample.Process) { p[1].SwapBound = p[1].Swap + 1 },
	} {
		spoilt := pacedSnap(now, spoil)
		bad := writeSnap(t, spoilt, now)
		for _, args := range [][]string{
			{"--from", bad, "--by", "pid"},
			{"--from", bad, "--json"},
			{"watch", "--plain", "--count", "1", "--from", bad},
		} {
			out, errOut, code := runArgs(args...)
			if code != cli.ExitFailure || out != "" || !strings.Contains(errOut, "malformed snapshot") {
				t.Errorf("%s: memwho %s: exit %d, want a malformed snapshot refused\n%s%s", name, strings.Join(args[:len(args)-1], " "), code, out, errOut)
			}
		}
		sock, _ := startAgent(t, spoilt)
		out, errOut, _ := runArgs("--agent-socket", sock, "--by", "pid", "--csv")
		if strings.Contains(out, "from-agent") || !strings.Contains(errOut, "malformed") {
			t.Errorf("%s: the report showed the agent's spoilt snapshot:\n%s%s", name, out, errOut)
		}
	}
}
