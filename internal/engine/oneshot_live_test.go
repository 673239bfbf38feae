package engine_test

// Integration tests: a OneShot sampler (a report's) reads the real /proc while package
// testload runs child processes (this test binary re-executed) that hold
// a known amount of each kind of memory. Figures are compared as deltas
// against a baseline child with no extra memory, read in the same scan, so
// that the child's own Go runtime and its share of the executable cancel
// out. The swap and pid-reuse tests need root and skip otherwise.

import (
	"bytes"
	"context"
	"fmt"
	"github.com/memwho/memwho/internal/proc/fstest"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/testload"
)

const (
	kiB = 1 << 10
	miB = 1 << 20
)

func startLoad(t *testing.T, n int, spec testload.Spec) *testload.Group {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := testload.Start(ctx, n, spec)
	if err != nil {
		t.Fatalf("start %d children %+v: %v", n, spec, err)
	}
	t.Cleanup(func() { g.Stop() })
	return g
}

// scanPIDs scans exactly pids and returns them by pid, failing the test if
// one is missing.
func scanPIDs(t *testing.T, opt engine.Options, pids ...int) map[int]sample.Process {
	t.Helper()
	opt.FS, opt.PIDs, opt.OneShot = fstest.Open(t, "/proc"), pids, true
	s, err := engine.New(opt)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	defer s.Close()
	var snap sample.Snapshot
	if err := s.Scan(&snap); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	m := make(map[int]sample.Process, len(snap.Procs))
	for _, p := range snap.Procs {
		m[p.PID] = p
	}
	for _, pid := range pids {
		if _, ok := m[pid]; !ok {
			t.Fatalf("pid %d missing from the scan (gone %d, denied %d, kernel %d)", pid, snap.Gone, snap.Denied, snap.Kernel)
		}
	}
	return m
}

// delta is got - base as a signed number of bytes.
func delta(got, base uint64) int64 { return int64(got) - int64(base) }

// runtimeNoise is how much a child's own memory may differ from the
// baseline child's: the Go runtime starts threads on demand (each costs a
// signal stack and some pthread stack pages), so two idle children can
// differ by a few tens of kB of private memory. Figures that include the
// runtime's private memory get this on top of the 1%.
const runtimeNoise = 256 * kiB

// textNoise bounds how much one idle child's share of the shared code
// pages of the binary can differ from another's.
const textNoise = 128 * kiB

// within reports whether got is want ± frac·want ± slack bytes.
func within(got, want int64, frac float64, slack int64) bool {
	return math.Abs(float64(got-want)) <= frac*math.Abs(float64(want))+float64(slack)
}

func kb(n int64) string { return fmt.Sprintf("%d kB", n/kiB) }

func TestIntegrationPrivate(t *testing.T) {
	const size = 64 * miB
	base := startLoad(t, 1, testload.Spec{})
	g := startLoad(t, 1, testload.Spec{Private: size})
	b, c := base.PIDs[0], g.PIDs[0]
	// smaps_rollup's figures: the read page by page, which a process of
	// 64 MiB reaches, is pinned by TestPacedMatchesRollup.
	got := scanPIDs(t, engine.Options{PacedMin: -1}, b, c)

	p := got[c]
	if p.Accuracy != sample.Exact {
		t.Errorf("accuracy %v, want exact", p.Accuracy)
	}
	if d := delta(p.Private, got[b].Private); !within(d, size, 0.01, 0) {
		t.Errorf("Private over baseline = %s, want %s ±1%%", kb(d), kb(size))
	}
	if d := delta(p.RAM, got[b].RAM); !within(d, size, 0.01, 0) {
		t.Errorf("RAM over baseline = %s, want %s ±1%%", kb(d), kb(size))
	}
	if d := delta(p.Shared, got[b].Shared); !within(d, 0, 0, size/100) {
		t.Errorf("Shared over baseline = %s, want 0 ±1%% of %s", kb(d), kb(size))
	}
	if p.Swap != 0 {
		t.Errorf("Swap = %d with no swap in use", p.Swap)
	}
	// A cross-check against the kernel's own line, independent of the
	// scanner's parser.
	r, err := testload.ProcKB(c, "smaps_rollup")
	if err == nil && !within(int64(p.RAM), r["Pss"], 0.01, 0) {
		t.Errorf("RAM = %s, smaps_rollup Pss = %s", kb(int64(p.RAM)), kb(r["Pss"]))
	}
	exe, _ := os.Executable()
	if p.Exe != filepath.Base(exe) {
		t.Errorf("Exe = %q, want %q", p.Exe, filepath.Base(exe))
	}
}

// TestIntegrationShared: four children map one 32 MiB object; each one's
// proportional share is 8 MiB, all of it Shared, none Private.
func TestIntegrationShared(t *testing.T) {
	const size, n = 32 * miB, 4
	for _, tt := range []struct {
		name string
		spec testload.Spec
	}{
		{"file", testload.Spec{FileShared: size}},
		{"memfd", testload.Spec{MemfdShared: size}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := startLoad(t, 1, testload.Spec{})
			g := startLoad(t, n, tt.spec)
			got := scanPIDs(t, engine.Options{}, append(g.PIDs, base.PIDs[0])...)
			b := got[base.PIDs[0]]
			for _, pid := range g.PIDs {
				p := got[pid]
				// Shared also holds this process's share of the test
				// binary's code pages, which moves by tens of kB when a
				// busy machine makes one child start another thread, so
				// it gets a small slack besides the 1%.
				if d := delta(p.Shared, b.Shared); !within(d, size/n, 0.01, textNoise) {
					t.Errorf("pid %d: Shared over baseline = %s, want %s ±1%% ±%s", pid, kb(d), kb(size/n), kb(textNoise))
				}
				if d := delta(p.RAM, b.RAM); !within(d, size/n, 0.01, runtimeNoise) {
					t.Errorf("pid %d: RAM over baseline = %s, want %s ±1%% ±%s", pid, kb(d), kb(size/n), kb(runtimeNoise))
				}
				if d := delta(p.Private, b.Private); !within(d, 0, 0, runtimeNoise) {
					t.Errorf("pid %d: Private over baseline = %s, want 0 ±%s", pid, kb(d), kb(runtimeNoise))
				}
			}
		})
	}
}

// TestIntegrationFast checks the status-based estimates: private memory is
// RssAnon, and shared memory is counted in full by every process.
func TestIntegrationFast(t *testing.T) {
	const size = 32 * miB
	base := startLoad(t, 1, testload.Spec{})
	priv := startLoad(t, 1, testload.Spec{Private: size})
	shared := startLoad(t, 2, testload.Spec{FileShared: size})
	got := scanPIDs(t, engine.Options{Fast: true}, base.PIDs[0], priv.PIDs[0], shared.PIDs[0], shared.PIDs[1])
	b := got[base.PIDs[0]]
	for pid, p := range got {
		if p.Accuracy != sample.Estimate {
			t.Errorf("pid %d: accuracy %v, want estimate", pid, p.Accuracy)
		}
	}
	if d := delta(got[priv.PIDs[0]].Private, b.Private); !within(d, size, 0.01, 0) {
		t.Errorf("private child: Private over baseline = %s, want %s ±1%%", kb(d), kb(size))
	}
	for _, pid := range shared.PIDs {
		if d := delta(got[pid].Shared, b.Shared); !within(d, size, 0.01, 0) {
			t.Errorf("pid %d: Shared over baseline = %s, want the whole %s", pid, kb(d), kb(size))
		}
	}
}

// TestIntegrationCOW: a child and the grandchild it forked share 64 MiB
// copy-on-write; the pair's RAM counts it once.
func TestIntegrationCOW(t *testing.T) {
	const size = 64 * miB
	base := startLoad(t, 1, testload.Spec{})
	g := startLoad(t, 1, testload.Spec{COW: size})
	c, gc := g.PIDs[0], g.COWPIDs[0]
	// smaps_rollup's figures (as in TestIntegrationPrivate).
	got := scanPIDs(t, engine.Options{PacedMin: -1}, base.PIDs[0], c, gc)
	// The grandchild shares the child's runtime memory as well, so the
	// pair holds one baseline's worth of it, less what either runtime
	// has written since the fork (its own copy then): runtimeNoise.
	pair := got[c].RAM + got[gc].RAM
	if d := delta(pair, got[base.PIDs[0]].RAM); !within(d, size, 0.01, runtimeNoise) {
		t.Errorf("RAM of child + grandchild over baseline = %s, want %s ±1%% ±%s", kb(d), kb(size), kb(runtimeNoise))
	}
	for _, pid := range []int{c, gc} {
		if p := got[pid]; p.Shared < size/2 {
			t.Errorf("pid %d: Shared = %s, want at least %s", pid, kb(int64(p.Shared)), kb(size/2))
		}
	}
}

// TestIntegrationSwap: a child's 64 MiB pushed to swap shows as Swap
// (SwapPss), equal to the kernel's VmSwap since nothing is shared.
func TestIntegrationSwap(t *testing.T) {
	const size = 64 * miB
	testload.EnsureSwap(t, 512*miB)
	cg := testload.NewMemCgroup(t)
	g := startLoad(t, 1, testload.Spec{Private: size, Cgroup: cg.Path})
	c := g.PIDs[0]
	cg.PushToSwap(t, size, c)
	p := scanPIDs(t, engine.Options{}, c)[c]
	st, err := testload.ProcKB(c, "status")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Swap %s, RAM %s; status VmSwap %s", kb(int64(p.Swap)), kb(int64(p.RAM)), kb(st["VmSwap"]))
	if p.SwapPssMissing {
		t.Error("SwapPssMissing on a kernel that has SwapPss")
	}
	// Besides the 64 MiB, only a few runtime pages are out.
	if got := int64(p.Swap); got < size || !within(got, size, 0.01, 0) {
		t.Errorf("Swap = %s, want %s (+1%%)", kb(got), kb(size))
	}
	if !within(int64(p.Swap), st["VmSwap"], 0.01, 0) {
		t.Errorf("Swap = %s, VmSwap = %s: unshared swap should match", kb(int64(p.Swap)), kb(st["VmSwap"]))
	}
	limit := uint64(size / 4)
	if raceEnabled {
		limit += 16 * miB
	}
	if p.RAM > limit {
		t.Errorf("RAM = %s after swapping out %s", kb(int64(p.RAM)), kb(size))
	}
}

// TestIntegrationSwapCOW: 64 MiB shared copy-on-write and then swapped is
// in both processes' VmSwap, but their Swap (SwapPss) adds up to it once
// when smaps_rollup reads them. Read page by page (64 MiB swapped is the
// walk size from which they are, by default), each counts all of it,
// marked as an estimate whose SwapBound reaches down to the truth.
func TestIntegrationSwapCOW(t *testing.T) {
	const size = 64 * miB
	testload.EnsureSwap(t, 512*miB)
	cg := testload.NewMemCgroup(t)
	g := startLoad(t, 1, testload.Spec{COW: size, Cgroup: cg.Path})
	pair := g.All()
	cg.PushToSwap(t, size, pair...)
	got := scanPIDs(t, engine.Options{PacedMin: -1}, pair...)
	var sum int64
	for _, pid := range pair {
		p := got[pid]
		t.Logf("pid %d: Swap %s, RAM %s", pid, kb(int64(p.Swap)), kb(int64(p.RAM)))
		if !within(int64(p.Swap), size/2, 0.02, 0) {
			t.Errorf("pid %d: Swap = %s, want half of %s", pid, kb(int64(p.Swap)), kb(size))
		}
		sum += int64(p.Swap)
	}
	if sum < size || !within(sum, size, 0.01, 0) {
		t.Errorf("Swap of the pair = %s, want %s (+1%%), not twice that", kb(sum), kb(size))
	}

	paced := scanPIDs(t, engine.Options{}, pair...)
	var lo, hi int64
	for _, pid := range pair {
		p := paced[pid]
		t.Logf("paced pid %d: Swap %s (bound %s), RAM %s", pid, kb(int64(p.Swap)), kb(int64(p.SwapBound)), kb(int64(p.RAM)))
		if p.Accuracy != sample.Estimate || p.Cause != sample.CausePaced {
			t.Errorf("pid %d: read page by page: accuracy %v cause %v, want an estimate (paced)", pid, p.Accuracy, p.Cause)
		}
		if p.Private != got[pid].Private {
			t.Errorf("pid %d: Private %s, smaps_rollup %s", pid, kb(int64(p.Private)), kb(int64(got[pid].Private)))
		}
		lo += int64(p.Swap - p.SwapBound)
		hi += int64(p.Swap)
	}
	if lo > sum || hi < sum {
		t.Errorf("paced Swap of the pair between %s and %s, smaps_rollup's %s outside", kb(lo), kb(hi), kb(sum))
	}
}

// TestIntegrationChurn scans the whole of /proc while processes start and
// exit all the time: every scan must succeed, with vanished processes
// counted in Gone and never reported.
func TestIntegrationChurn(t *testing.T) {
	s, err := engine.New(engine.Options{FS: fstest.Open(t, "/proc"), OneShot: true})
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	wait := testload.Churn(ctx, 2, miB)
	defer func() {
		cancel()
		n, err := wait()
		if err != nil {
			t.Errorf("churn: %v", err)
		}
		t.Logf("churn started %d processes", n)
	}()

	var snap sample.Snapshot
	gone, self := 0, os.Getpid()
	for i := range 50 {
		if err := s.Scan(&snap); err != nil {
			t.Fatalf("scan %d: %v", i, err)
		}
		gone += snap.Gone
		seen := make(map[int]bool, len(snap.Procs))
		foundSelf := false
		for _, p := range snap.Procs {
			if p.PID <= 0 || seen[p.PID] {
				t.Fatalf("scan %d: bad or repeated pid %d", i, p.PID)
			}
			seen[p.PID] = true
			foundSelf = foundSelf || p.PID == self
		}
		if !foundSelf {
			t.Errorf("scan %d: own pid %d missing", i, self)
		}
	}
	t.Logf("50 scans, last with %d processes; %d gone in all", len(snap.Procs), gone)
}

// TestIntegrationPIDReuse gives a new process the pid of one that just
// exited (through /proc/sys/kernel/ns_last_pid) and checks that the scan
// reports the new process only.
func TestIntegrationPIDReuse(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: writing /proc/sys/kernel/ns_last_pid needs root")
	}
	const size = 64 * miB
	a := startLoad(t, 1, testload.Spec{Private: size})
	pid := a.PIDs[0]
	a.Stop()

	// Every fork on the host (and every new thread here) races for the
	// pid, so try a few times.
	var b *testload.Group
	for try := 0; try < 50 && b == nil; try++ {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Skipf("skipping: ns_last_pid not writable: %v", err)
		}
		g := startLoad(t, 1, testload.Spec{})
		if g.PIDs[0] == pid {
			b = g
		} else {
			g.Stop()
		}
	}
	if b == nil {
		t.Skipf("skipping: pid %d was taken by other processes on every try", pid)
	}
	start, err := testload.StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	p := scanPIDs(t, engine.Options{NeedStartTime: true}, pid)[pid]
	if p.StartTime != start {
		t.Errorf("StartTime = %d, want the new process's %d", p.StartTime, start)
	}
	if p.Private >= size/2 {
		t.Errorf("Private = %s: figures of the exited process, which had %s", kb(int64(p.Private)), kb(size))
	}
}

// TestIntegrationZombiesAndKernelThreads scans real zombies (children
// that exited and were not waited for) and kthreadd: each is counted as
// having no address space and listed nowhere, in every mode, while a
// live process beside them is listed.
func TestIntegrationZombiesAndKernelThreads(t *testing.T) {
	var zombies []int
	for range 3 {
		cmd := exec.Command("true")
		if err := cmd.Start(); err != nil {
			t.Skip(err)
		}
		t.Cleanup(func() { cmd.Wait() })
		zombies = append(zombies, cmd.Process.Pid)
	}
	for _, pid := range zombies {
		for i := 0; ; i++ {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 0 && f[0] == "Z" {
				break
			}
			if i == 500 {
				t.Fatalf("pid %d did not become a zombie", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	live := startLoad(t, 1, testload.Spec{Private: miB}).PIDs[0]
	pids := append([]int{live}, zombies...)
	kthreadd := 0
	if b, err := os.ReadFile("/proc/2/stat"); err == nil && strings.Contains(string(b), "(kthreadd)") {
		kthreadd = 2
		pids = append(pids, 2)
	}
	for _, opt := range []engine.Options{{}, {Fast: true}, {NeedUID: true}, {NoNames: true, NeedCgroup: true}, {NeedStartTime: true}} {
		opt.FS, opt.PIDs, opt.OneShot = fstest.Open(t, "/proc"), pids, true
		s, err := engine.New(opt)
		if err != nil {
			t.Fatal(err)
		}
		var snap sample.Snapshot
		err = s.Scan(&snap)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Procs) != 1 || snap.Procs[0].PID != live {
			t.Errorf("%+v: listed %v, want only the live pid %d", opt, snap.Procs, live)
		}
		want := len(zombies)
		if kthreadd != 0 {
			want++
		}
		if snap.Kernel != want || snap.Gone != 0 {
			t.Errorf("%+v: kernel %d, gone %d; want %d zombies and kernel threads, 0 gone", opt, snap.Kernel, snap.Gone, want)
		}
	}
}
