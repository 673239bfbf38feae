package watch

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

// seqSampler replays synthetic snapshots of procs, one a second.
type seqSampler struct {
	procs []proc
	n     int
}

func (s *seqSampler) Scan(snap *sample.Snapshot) error {
	*snap = *snapshot(s.n, time.Second, s.procs)
	s.n++
	return nil
}

func TestRunPlain(t *testing.T) {
	procs := []proc{
		{pid: 1, name: "steady", shared: miB, ram: constant(10 * miB)},
		{pid: 2, name: "leaky", ram: linear(20*miB, miB)},
		{pid: 3, name: "evil\x1b[31m\nname", ram: constant(miB)},
	}
	var out bytes.Buffer
	warned := 0
	err := RunPlain(context.Background(), &out, &seqSampler{procs: procs}, Options{
		Interval: time.Millisecond, Count: 12, Filter: regexp.MustCompile("."),
	}, func(*sample.Snapshot, []sample.Group) { warned++ })
	if err != nil {
		t.Fatal(err)
	}
	if warned != 1 {
		t.Errorf("warn called %d times, want once", warned)
	}
	got := out.String()
	if n := strings.Count(got, "\n\n"); n != 11 {
		t.Errorf("%d blank separators, want 11 between 12 snapshots", n)
	}
	if strings.ContainsAny(got, "\x1b\r") {
		t.Error("raw control characters in the plain output")
	}
	// The last snapshot (the one with a leak suspect line) is golden.
	last := got[strings.LastIndex(got, "\n\n")+2:]
	golden(t, filepath.Join("testdata", "plain.golden"), last)
}

func TestRunPlainStops(t *testing.T) {
	// Cancelling the context ends the wait for the next interval.
	ctx, cancel := context.WithCancel(context.Background())
	s := &seqSampler{procs: []proc{{pid: 1, name: "a", ram: constant(miB)}}}
	done := make(chan error, 1)
	var out bytes.Buffer
	first := make(chan struct{})
	go func() {
		done <- RunPlain(ctx, &out, s, Options{Interval: time.Hour}, func(*sample.Snapshot, []sample.Group) { close(first) })
	}()
	<-first
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("RunPlain after cancel: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunPlain did not return after cancel")
	}

	// A failing scan is an error.
	err := RunPlain(context.Background(), &out, errSampler{}, Options{Interval: time.Millisecond, Count: 1}, nil)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("RunPlain with a failing sampler: %v", err)
	}
}

type errSampler struct{}

func (errSampler) Scan(*sample.Snapshot) error { return os.ErrNotExist }

// brokenSampler is seqSampler with Broken set from a list, one per scan.
type brokenSampler struct {
	seqSampler
	broken []int
}

func (s *brokenSampler) Scan(snap *sample.Snapshot) error {
	n := s.n
	s.seqSampler.Scan(snap)
	snap.Broken = s.broken[n]
	return nil
}

// TestRunPlainWarnsSkipped: the caller's warnings follow the first
// snapshot, and every later one that leaves out a different, non-zero
// number of processes (a low open-file limit, unparsable files), whose
// memory the totals then miss; a steady count is not repeated.
func TestRunPlainWarnsSkipped(t *testing.T) {
	s := &brokenSampler{seqSampler: seqSampler{procs: []proc{{pid: 1, name: "a", ram: constant(1 << 20)}}},
		broken: []int{0, 0, 3, 3, 0, 2, 5}}
	var warned []int
	var out bytes.Buffer
	err := RunPlain(context.Background(), &out, s, Options{Interval: time.Millisecond, Count: len(s.broken)},
		func(snap *sample.Snapshot, _ []sample.Group) { warned = append(warned, snap.Broken) })
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 3, 2, 5}; !slices.Equal(warned, want) {
		t.Errorf("warned with Broken %v, want %v", warned, want)
	}
}

// TestRunPlainHangup: a hang-up (SIGHUP: the terminal a plain watch was
// started from closed) ends the plain output as the context's end does.
// It was caught and dropped, so `memwho watch --plain > file` outlived
// its terminal.
func TestRunPlainHangup(t *testing.T) {
	s := &seqSampler{procs: []proc{{pid: 1, name: "a", ram: constant(miB)}}}
	hangup := make(chan struct{})
	done := make(chan error, 1)
	var out bytes.Buffer
	first := make(chan struct{})
	go func() {
		done <- RunPlain(context.Background(), &out, s, Options{Interval: time.Hour, Hangup: hangup}, func(*sample.Snapshot, []sample.Group) { close(first) })
	}()
	<-first
	close(hangup)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("RunPlain after a hang-up: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunPlain did not return after a hang-up")
	}
	if !strings.Contains(out.String(), "total") {
		t.Errorf("the snapshot before the hang-up is missing:\n%s", out.String())
	}

	// Hung up before it started: nothing scanned, nothing written.
	var none bytes.Buffer
	s2 := &seqSampler{procs: []proc{{pid: 1, name: "a", ram: constant(miB)}}}
	if err := RunPlain(context.Background(), &none, s2, Options{Interval: time.Hour, Hangup: hangup}, nil); err != nil || none.Len() != 0 || s2.n != 0 {
		t.Errorf("hung up before the start: %v, %d bytes written, %d scans", err, none.Len(), s2.n)
	}
}
