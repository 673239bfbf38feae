package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func testFleet(hosts int) *Fleet {
	return &Fleet{Hosts: hosts, Procs: 300, Seed: 7, LeakShare: 0.1, Start: t0}
}

// TestDeterministic: the same seed gives the same fleet and the same
// changes, byte for byte in the snapshot encoding memwho writes.
func TestDeterministic(t *testing.T) {
	enc := func() []byte {
		h := testFleet(3).NewHost(2)
		var s sample.Snapshot
		var b bytes.Buffer
		for i := range 10 {
			h.Fill(&s, t0.Add(time.Duration(i)*time.Minute))
		}
		if err := snapshot.WriteFile(&b, &s, s.Time); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	if a, b := enc(), enc(); !bytes.Equal(a, b) {
		t.Error("two runs of the same fleet differ")
	}
}

// TestHosts: hosts look like servers (about --procs processes, valid
// snapshots as memwho checks them), and change as they should over an
// hour: processes exit and start, most figures sit still between two
// samples, the planted leaks grow at their rate.
func TestHosts(t *testing.T) {
	f := testFleet(40)
	var procs, leaky int
	for i := range f.Hosts {
		h := f.NewHost(i)
		var s0, s1 sample.Snapshot
		h.Fill(&s0, t0)
		if err := snapshot.Check(&s0); err != nil {
			t.Fatalf("host %d: %v", i, err)
		}
		procs += len(s0.Procs)
		for j := 1; j < len(s0.Procs); j++ {
			if s0.Procs[j].PID <= s0.Procs[j-1].PID {
				t.Fatalf("host %d: pids out of order", i)
			}
		}
		h.Fill(&s1, t0.Add(time.Minute))
		same := 0
		byPID := map[int]*sample.Process{}
		for j := range s0.Procs {
			byPID[s0.Procs[j].PID] = &s0.Procs[j]
		}
		for j := range s1.Procs {
			p := &s1.Procs[j]
			if q := byPID[p.PID]; q != nil && q.RAM == p.RAM {
				same++
			}
			if p.Private > p.RAM || p.Shared != p.RAM-p.Private || p.RAM%1024 != 0 {
				t.Fatalf("host %d pid %d: figures %d = %d + %d", i, p.PID, p.RAM, p.Private, p.Shared)
			}
		}
		if frac := float64(same) / float64(len(s1.Procs)); frac < 0.2 || frac > 0.95 {
			t.Errorf("host %d: %.0f%% of processes kept their figures over a minute, want most but not all", i, 100*frac)
		}
		var s2 sample.Snapshot
		h.Fill(&s2, t0.Add(time.Hour))
		gone := 0
		for j := range s0.Procs {
			if _, ok := findPID(&s2, s0.Procs[j].PID); !ok {
				gone++
			}
		}
		if gone == 0 {
			t.Errorf("host %d: no process exited in an hour", i)
		}
		if h.Leak > 0 {
			leaky++
			l := h.leaker
			p, ok := findPID(&s2, l.pid)
			q, ok0 := findPID(&s0, l.pid)
			if ok && ok0 {
				grew := float64(p.RAM+p.Swap) - float64(q.RAM+q.Swap)
				// Busy noise of 1% of the size either way.
				if math.Abs(grew-h.Leak) > 0.05*h.Leak+0.03*float64(p.RAM) {
					t.Errorf("host %d: the leak grew %.0f MiB in an hour, planted %.0f MiB/h", i, grew/mib, h.Leak/mib)
				}
			}
		}
	}
	if mean := procs / f.Hosts; mean < 240 || mean > 360 {
		t.Errorf("%d processes per host on average, want about 300", mean)
	}
	if leaky == 0 {
		t.Error("no host leaks")
	}
}

func findPID(s *sample.Snapshot, pid int) (*sample.Process, bool) {
	for i := range s.Procs {
		if s.Procs[i].PID == pid {
			return &s.Procs[i], true
		}
	}
	return nil, false
}

// TestSeedSnapshot: hosts built from a recorded snapshot, here the
// engine's walk of a captured /proc tree written as memwho snapshot
// writes it, run its programs.
func TestSeedSnapshot(t *testing.T) {
	root := proctest.Root(t, "../../internal/proc/testdata/containers.txtar")
	e, err := engine.New(engine.Options{FS: fstest.Open(t, root), OneShot: true, NeedUID: true, NeedCgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var s sample.Snapshot
	if err := e.Scan(&s); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "seed.snap")
	var b bytes.Buffer
	if err := snapshot.WriteFile(&b, &s, t0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ff := fleetFlags{f: Fleet{Hosts: 2, Procs: 60, Seed: 1}, seeds: multi{file}}
	f, err := ff.fleet(t0)
	if err != nil {
		t.Fatal(err)
	}
	h := f.NewHost(1)
	var got sample.Snapshot
	h.Fill(&got, t0)
	names := map[string]bool{}
	for i := range s.Procs {
		names[s.Procs[i].Name] = true
	}
	if len(got.Procs) < 30 {
		t.Errorf("%d processes from a seed of %d, scaled to 60", len(got.Procs), len(s.Procs))
	}
	for i := range got.Procs {
		if p := &got.Procs[i]; !names[p.Name] || p.Cgroup == "" {
			t.Fatalf("process %q (cgroup %q) is not the seed's", p.Name, p.Cgroup)
		}
	}
}
