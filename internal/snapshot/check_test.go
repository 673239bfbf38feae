package snapshot

import (
	"errors"
	"math"
	"testing"

	"github.com/memwho/memwho/internal/sample"
)

// Attacks tabled in docs/safe.md: snapshots that passed Check and
// still printed impossible figures.

// TestCheckSpoilt: each spoilt snapshot passed Check before the review
// and printed what no sampler writes: "10.0 MiB + 10.0 MiB = 10.0 MiB"
// (private and shared each under RAM, their sum over it), a group's swap
// of 2^64 - 1 summed with 2 into 1 B and diffed as "-1 B" beside
// "grew", a RAM of 2^63 + 5 that diff and the ledger's "used by
// processes" turned negative through int64, and an Anon column of 16 EiB
// in a 10 MiB row. BROKE before the fix; every one is refused now, and
// what the samplers write still passes (TestRoundTripScanned).
func TestCheckSpoilt(t *testing.T) {
	ok := func() *sample.Snapshot {
		return &sample.Snapshot{Procs: []sample.Process{
			{PID: 1, RAM: 10 << 20, Private: 8 << 20, Shared: 2 << 20, Swap: 1 << 20,
				PssAnon: 6 << 20, PssFile: 2 << 20, PssShmem: 1 << 20, PrivateHugetlb: 1 << 20},
			{PID: 7, PPID: 1, RAM: 5 << 20, Private: 5 << 20, Swap: 3 << 20, PssAnon: 5 << 20},
		}}
	}
	if err := Check(ok()); err != nil {
		t.Fatalf("Check of a plausible snapshot: %v", err)
	}
	// The largest plausible totals pass: every difference of two fits
	// an int64.
	big := ok()
	big.Procs[0] = sample.Process{PID: 1, RAM: math.MaxInt64 - 5<<20, Private: math.MaxInt64 - 5<<20, Swap: math.MaxInt64 - 3<<20}
	if err := Check(big); err != nil {
		t.Errorf("Check of totals of 2^63 - 1: %v", err)
	}
	for name, spoil := range map[string]func(s *sample.Snapshot){
		"private + shared over ram": func(s *sample.Snapshot) { s.Procs[0].Private, s.Procs[0].Shared = 10<<20, 10<<20 },
		"private + shared wrap":     func(s *sample.Snapshot) { s.Procs[0].Private, s.Procs[0].Shared = 10<<20, math.MaxUint64-1<<20 },
		"swap total wraps":          func(s *sample.Snapshot) { s.Procs[0].Swap, s.Procs[1].Swap = math.MaxUint64, 2 },
		"swap total over 2^63":      func(s *sample.Snapshot) { s.Procs[0].Swap = 1 << 63 },
		"ram of 2^63 + 5":           func(s *sample.Snapshot) { s.Procs[0].RAM, s.Procs[0].Private, s.Procs[0].Shared = 1<<63+5, 1<<63+5, 0 },
		"ram total over 2^63": func(s *sample.Snapshot) {
			s.Procs[0].RAM, s.Procs[0].Shared = 1<<62+1<<61+1<<60, 1<<62+1<<61+1<<60-8<<20
			s.Procs[1].RAM, s.Procs[1].Private = 1<<62, 1<<62
		},
		"anon of 2^64 - 1": func(s *sample.Snapshot) { s.Procs[0].PssAnon = math.MaxUint64 },
		"split over ram":   func(s *sample.Snapshot) { s.Procs[0].PssFile = 4 << 20 },
		"split wraps":      func(s *sample.Snapshot) { s.Procs[0].PssShmem = math.MaxUint64 - 7<<20 },
		"huge pages over private": func(s *sample.Snapshot) {
			s.Procs[1].PrivateHugetlb, s.Procs[1].Private, s.Procs[1].Shared, s.Procs[1].PssAnon = 3<<20, 2<<20, 3<<20, 0
		},
	} {
		s := ok()
		spoil(s)
		if err := Check(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Check = %v, want a malformed snapshot", name, err)
		}
	}
}
