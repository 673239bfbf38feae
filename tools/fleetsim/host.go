package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/sample"
)

// Fleet describes the simulated hosts.
type Fleet struct {
	// Hosts is how many hosts there are.
	Hosts int
	// Procs is the mean number of processes per host.
	Procs int
	// Seed makes the fleet and its changes reproducible.
	Seed uint64
	// LeakShare is the share of hosts with a leaking process (0.03: 3%).
	LeakShare float64
	// Start is when the simulated hosts' history begins (their
	// processes started before it).
	Start time.Time
	// Seeds, when set, are recorded snapshots (memwho snapshot -o) the
	// hosts are built from, in turn, instead of the built-in template.
	Seeds []*sample.Snapshot
}

// Host is one simulated host: its processes and how they change. Its
// methods are safe for concurrent use (an agent's walk and a scrape may
// overlap), one lock per host.
type Host struct {
	Name   string
	BootID string
	// Leak is the planted leak's growth in bytes per hour, 0 if none;
	// LeakName is its program.
	Leak     float64
	LeakName string

	mu       sync.Mutex
	rng      *rand.Rand
	total    uint64 // MemTotal, bytes
	swap     uint64 // SwapTotal, bytes
	boot     time.Time
	now      time.Time // the time the processes were last advanced to
	nextPID  int
	procs    []*simProc // by PID
	progs    []hostProg
	leaker   *simProc
	kthreads int
	tick     uint64
	details  []engine.Detail
	stats    engine.Stats
}

// hostProg is a program as one host runs it.
type hostProg struct {
	p    *program
	n    int     // how many run
	mib  float64 // this host's median size
	leak float64 // bytes per hour for a planted leak, else 0
	strs [5]string
}

// simProc is one simulated process.
type simProc struct {
	prog    *hostProg
	pid     int
	start   time.Time
	ticks   uint64  // start time, clock ticks since boot
	size    float64 // bytes of PSS at start
	private float64
	swap    float64 // fraction of private swapped out
	dies    time.Time
	ram     uint64 // figures as last sampled
	priv    uint64
	swapped uint64
	// leak is a planted leak's growth in bytes per hour, counted from
	// leakFrom (the start of the history, or the restart after an OOM
	// kill).
	leak     float64
	leakFrom time.Time
}

const mib = 1 << 20

// NewHost builds host i of f at f.Start.
func (f *Fleet) NewHost(i int) *Host {
	rng := rand.New(rand.NewPCG(f.Seed, uint64(i)))
	h := &Host{
		Name:   fmt.Sprintf("sim-%05d", i),
		BootID: fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xfff, rng.Uint32()&0xfff, rng.Uint64()&0xffffffffffff),
		rng:    rng,
		now:    f.Start,
	}
	h.boot = f.Start.Add(-time.Duration(1+rng.IntN(90*24)) * time.Hour)
	h.total = []uint64{8, 16, 16, 32, 32, 64, 128}[rng.IntN(7)] << 30
	if rng.IntN(2) == 0 {
		h.swap = h.total / 8
	}
	h.kthreads = 80 + rng.IntN(120)
	h.nextPID = 300 + rng.IntN(2000)
	if len(f.Seeds) > 0 {
		h.fromSnapshot(f.Seeds[i%len(f.Seeds)], f.Procs)
	} else {
		h.fromTemplate(f.Procs)
	}
	if rng.Float64() < f.LeakShare {
		h.plantLeak()
	}
	// Processes that live as long as the host started at boot (or
	// were restarted since); the others at some time of their life.
	for pi := range h.progs {
		hp := &h.progs[pi]
		for range hp.n {
			h.spawn(hp, f.Start, true)
		}
	}
	slices.SortFunc(h.procs, func(a, b *simProc) int { return a.pid - b.pid })
	// No host starts out of memory: one that would is given more RAM,
	// as its owner would have.
	if ram, _ := h.used(); h.total < ram+ram/2 {
		h.total = 1 << 30
		for h.total < ram+ram/2 {
			h.total *= 2
		}
	}
	if h.Leak > 0 {
		// The leaker runs from the start, so that its whole history
		// shows the leak.
		for _, p := range h.procs {
			if p.prog.leak > 0 {
				h.leaker = p
				p.leak, p.leakFrom = p.prog.leak, f.Start
				p.dies = time.Time{}
				break
			}
		}
	}
	return h
}

// fromTemplate picks the host's roles and how many processes of each
// program it runs: about procs in all.
func (h *Host) fromTemplate(procs int) {
	rng := h.rng
	progs := slices.Clone(base)
	picked := rng.Perm(len(roles))[:1+rng.IntN(2)]
	for _, r := range picked {
		progs = append(progs, roles[r].programs...)
	}
	// Pools (programs with more than one process) are scaled so that
	// the host runs about procs processes, ±30%.
	fixed, pooled := 0.0, 0.0
	for _, p := range progs {
		mean := float64(p.n[0]+p.n[1]) / 2
		if p.n[1] > 1 {
			pooled += mean
		} else {
			fixed += mean
		}
	}
	scale := 1.0
	if pooled > 0 {
		scale = max((float64(procs)*(0.7+0.6*rng.Float64())-fixed)/pooled, 0.2)
	}
	for i := range progs {
		p := &progs[i]
		n := p.n[0] + rng.IntN(p.n[1]-p.n[0]+1)
		if p.n[1] > 1 {
			n = int(math.Round(float64(n) * scale))
		}
		h.progs = append(h.progs, hostProg{p: p, n: n, mib: p.mib * math.Exp(rng.NormFloat64()*p.spread/2),
			strs: [5]string{p.name, p.comm, p.exe, p.script, p.cgroup}})
	}
}

// fromSnapshot takes a recorded snapshot's processes as the host's
// programs: each distinct (name, uid, cgroup) is a program with as many
// processes as the snapshot had, scaled to about procs in all, with the
// snapshot's sizes; how they change is a guess from the name (shells and
// compilers come and go, the rest live on).
func (h *Host) fromSnapshot(s *sample.Snapshot, procs int) {
	type key struct {
		name   string
		uid    uint32
		cgroup string
	}
	idx := map[key]int{}
	var progs []program
	var sums []float64
	for i := range s.Procs {
		p := &s.Procs[i]
		k := key{p.Name, p.UID, p.Cgroup}
		j, ok := idx[k]
		if !ok {
			j = len(progs)
			idx[k] = j
			progs = append(progs, program{name: p.Name, comm: p.Comm, exe: p.Exe, script: p.Script, uid: p.UID, cgroup: p.Cgroup,
				spread: 0.3, busy: 0.5})
			sums = append(sums, 0)
		}
		progs[j].n[1]++
		sums[j] += float64(p.RAM)
		if p.RAM > 0 {
			progs[j].private += float64(p.Private) / float64(p.RAM)
		}
	}
	scale := float64(procs) / float64(max(len(s.Procs), 1))
	for i := range progs {
		p := &progs[i]
		p.mib = sums[i] / float64(p.n[1]) / mib
		p.private /= float64(p.n[1])
		n := max(int(math.Round(float64(p.n[1])*scale)), 1)
		p.n = [2]int{n, n}
		switch p.comm {
		case "bash", "sh", "sleep", "cc1", "compile", "make", "sshd":
			p.life = 20 * time.Minute
		}
		p.leaky = p.life == 0 && p.mib > 10
		h.progs = append(h.progs, hostProg{p: p, n: n, mib: p.mib, strs: [5]string{p.name, p.comm, p.exe, p.script, p.cgroup}})
	}
	if s.MeminfoOK && s.Meminfo.MemTotal > 0 {
		h.total, h.swap = s.Meminfo.MemTotal, s.Meminfo.SwapTotal
	}
}

// plantLeak makes one long-lived process of a leaky program grow
// steadily: from 20 MiB to 2 GiB an hour, a few fast enough to fill the
// host within a day.
func (h *Host) plantLeak() {
	var cands []int
	for i := range h.progs {
		if hp := &h.progs[i]; hp.p.leaky && hp.n > 0 {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return
	}
	hp := &h.progs[cands[h.rng.IntN(len(cands))]]
	hp.leak = 20 * mib * math.Pow(100, h.rng.Float64())
	h.Leak, h.LeakName = hp.leak, hp.p.name
}

// spawn starts a process of hp at t; with old, at some time before t
// (as at the start of the history).
func (h *Host) spawn(hp *hostProg, t time.Time, old bool) *simProc {
	rng := h.rng
	p := &simProc{prog: hp, pid: h.nextPID, start: t}
	h.nextPID += 1 + rng.IntN(3)
	if old {
		span := t.Sub(h.boot)
		if hp.p.life > 0 {
			span = min(span, time.Duration(rng.ExpFloat64()*float64(hp.p.life)))
		}
		p.start = t.Add(-time.Duration(rng.Float64() * float64(span)))
	}
	p.ticks = uint64(p.start.Sub(h.boot) / (10 * time.Millisecond))
	p.size = hp.mib * mib * math.Exp(rng.NormFloat64()*hp.p.spread/2)
	p.private = min(max(hp.p.private+rng.NormFloat64()*0.05, 0.02), 1)
	if h.swap > 0 && rng.IntN(4) == 0 {
		p.swap = rng.Float64() * 0.3
	}
	if hp.p.life > 0 {
		p.dies = t.Add(time.Duration(rng.ExpFloat64() * float64(hp.p.life)))
	}
	h.procs = append(h.procs, p)
	p.figures(t, rng, true)
	return p
}

// figures sets p's figures at t: its size with growth, a planted leak,
// and noise when the process is busy (fresh forces new figures).
func (p *simProc) figures(t time.Time, rng *rand.Rand, fresh bool) {
	prog := p.prog.p
	if !fresh && rng.Float64() >= prog.busy && p.leak == 0 {
		return // sat still: the recorder stores the same figures
	}
	age := t.Sub(p.start)
	size := p.size
	if prog.grow > 0 && prog.growFor > 0 {
		size *= 1 + prog.grow*(1-math.Exp(-float64(age)/float64(prog.growFor)))
	}
	if p.leak > 0 {
		size += p.leak * t.Sub(p.leakFrom).Hours()
	}
	if prog.busy > 0 {
		size *= 1 + rng.NormFloat64()*0.01
	}
	size = max(size, 64<<10)
	// The part of the private memory swapped out is not resident: the
	// footprint (PSS + swap) is the size. Figures are counted in kB by
	// the kernel.
	p.swapped = uint64(size*p.private*p.swap) &^ 1023
	p.ram = uint64(size)&^1023 - p.swapped
	p.priv = min(uint64(size*p.private*(1-p.swap))&^1023, p.ram)
}

// advance moves the host's processes to t: exits and their
// replacements, new figures for those that moved, an out-of-memory kill
// of a leaker that filled the host.
func (h *Host) advance(t time.Time) {
	if !t.After(h.now) {
		return
	}
	rng := h.rng
	kept := h.procs[:0]
	var born []*hostProg
	for _, p := range h.procs {
		if !p.dies.IsZero() && !p.dies.After(t) {
			born = append(born, p.prog)
			continue
		}
		kept = append(kept, p)
	}
	clear(h.procs[len(kept):])
	h.procs = kept
	for _, hp := range born {
		// A replacement starts between the exit and now.
		h.spawn(hp, t.Add(-time.Duration(rng.Float64()*float64(t.Sub(h.now)))), false)
	}
	for _, p := range h.procs {
		p.figures(t, rng, false)
	}
	if used, _ := h.used(); used > h.total-h.total/50 && h.leaker != nil {
		// The kernel's OOM killer takes the leaker; its service
		// restarts it small.
		l := h.leaker
		h.procs = slices.DeleteFunc(h.procs, func(p *simProc) bool { return p == l })
		n := h.spawn(l.prog, t, false)
		n.leak, n.leakFrom, n.dies = l.leak, t, time.Time{}
		h.leaker = n
	}
	h.now = t
}

// used returns the memory the processes use (PSS) and their swap.
func (h *Host) used() (ram, swap uint64) {
	for _, p := range h.procs {
		ram += p.ram
		swap += p.swapped
	}
	return ram, swap
}

// Fill advances the host to t and writes its snapshot into s, as a walk
// of its /proc would: processes by PID, exact figures, meminfo.
func (h *Host) Fill(s *sample.Snapshot, t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fill(s, t)
}

func (h *Host) fill(s *sample.Snapshot, t time.Time) {
	h.advance(t)
	procs := s.Procs[:0]
	for _, p := range h.procs {
		hp := p.prog
		procs = append(procs, sample.Process{
			PID: p.pid, PPID: 1, StartTime: p.ticks, UID: hp.p.uid, UIDKnown: true,
			Name: hp.strs[0], Comm: hp.strs[1], Exe: hp.strs[2], Script: hp.strs[3],
			Cgroup: hp.strs[4], SystemdCgroup: hp.strs[4],
			RAM: p.ram, Private: p.priv, Shared: p.ram - p.priv, Swap: p.swapped,
			PssAnon: p.priv, PssFile: p.ram - p.priv,
		})
	}
	*s = sample.Snapshot{Procs: procs, Time: t, Kernel: h.kthreads, MeminfoOK: true}
	ram, swap := h.used()
	m := &s.Meminfo
	m.MemTotal = h.total
	kernel := h.total/40 + 150*mib
	used := min(ram+kernel, h.total)
	m.MemAvailable = h.total - used
	m.Cached = m.MemAvailable / 2
	m.Buffers = m.MemAvailable / 50
	m.MemFree = m.MemAvailable - m.Cached - m.Buffers
	m.Shmem = h.total / 200
	m.SwapTotal = h.swap
	m.SwapFree = h.swap - min(swap, h.swap)
}

// Scanner returns a record.Scanner and agent.Source of h: each Scan is a
// walk of the host at clock(), for the real code paths memwho runs on a
// host.
func (h *Host) Scanner(clock func() time.Time) *Scanner {
	return &Scanner{h: h, clock: clock}
}

// Scanner walks a simulated host.
type Scanner struct {
	h     *Host
	clock func() time.Time
}

// Scan fills s with the host at the scanner's clock.
func (sc *Scanner) Scan(s *sample.Snapshot) error {
	h := sc.h
	t := sc.clock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fill(s, t)
	h.tick++
	h.details = h.details[:0]
	for i := range s.Procs {
		h.details = append(h.details, engine.Detail{PID: s.Procs[i].PID, StartTime: s.Procs[i].StartTime, SampledAt: t, Walked: true})
	}
	h.stats = engine.Stats{Tick: h.tick, Start: t, Checked: len(s.Procs)}
	return nil
}

// Stats describes the last Scan as the engine would.
func (sc *Scanner) Stats() engine.Stats {
	sc.h.mu.Lock()
	defer sc.h.mu.Unlock()
	return sc.h.stats
}

// Details gives one Detail per process of the last Scan. The agent calls
// it right after Scan, from the walking goroutine.
func (sc *Scanner) Details() []engine.Detail {
	sc.h.mu.Lock()
	defer sc.h.mu.Unlock()
	return sc.h.details
}

// Close does nothing: a simulated host holds no descriptors.
func (sc *Scanner) Close() error { return nil }
