//go:build pprof

package profile

import (
	"fmt"
	"runtime"
	"runtime/pprof"

	"github.com/memwho/memwho/internal/atomicfile"
)

const built = true

// Profile is the profiling of one run. The zero value, and a nil
// *Profile, profile nothing.
type Profile struct {
	cpu, mem *atomicfile.File
}

// Start opens the CPU profile cpuPath and the heap profile memPath with
// create ("" is none) and starts the CPU profile. The caller defers
// Close, and calls WriteHeap when the work to profile is done.
//
// A heap profile records every allocation from here on: a report
// allocates little, and the default rate (one sample per 512 KiB) would
// show none of it.
func Start(cpuPath, memPath string, create CreateFunc) (*Profile, error) {
	p := &Profile{}
	var err error
	if memPath != "" {
		runtime.MemProfileRate = 1
		if p.mem, err = create(memPath); err != nil {
			return nil, fmt.Errorf("--memprofile: %w", err)
		}
	}
	if cpuPath != "" {
		if p.cpu, err = create(cpuPath); err != nil {
			p.abort()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(p.cpu); err != nil {
			p.abort()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	return p, nil
}

// WriteHeap writes the heap profile (all allocations so far) and
// publishes it. It does nothing without one.
func (p *Profile) WriteHeap() error {
	if p == nil || p.mem == nil {
		return nil
	}
	if err := pprof.Lookup("allocs").WriteTo(p.mem, 0); err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	if err := p.mem.Commit(); err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	return nil
}

// Close stops the CPU profile and publishes it, and removes a heap
// profile WriteHeap did not publish. A CPU profile that could not be
// written completely (a full disk) is an error: it is published only
// when whole.
func (p *Profile) Close() error {
	if p == nil {
		return nil
	}
	var err error
	if p.cpu != nil {
		pprof.StopCPUProfile()
		if cerr := p.cpu.Commit(); cerr != nil {
			err = fmt.Errorf("--cpuprofile: %w", cerr)
		}
	}
	p.abort()
	return err
}

// abort removes the files not published.
func (p *Profile) abort() {
	if p.cpu != nil {
		p.cpu.Abort()
	}
	if p.mem != nil {
		p.mem.Abort()
	}
}
