//go:build !pprof

package profile

import "fmt"

const built = false

// Profile is the profiling of one run: in this build, none.
type Profile struct{}

// Start fails with ErrNotBuilt when a profile is asked for, naming the
// flag; with both paths empty it profiles nothing.
func Start(cpuPath, memPath string, create CreateFunc) (*Profile, error) {
	switch {
	case memPath != "":
		return nil, fmt.Errorf("--memprofile: %w", ErrNotBuilt)
	case cpuPath != "":
		return nil, fmt.Errorf("--cpuprofile: %w", ErrNotBuilt)
	}
	return &Profile{}, nil
}

// WriteHeap does nothing: there is no heap profile.
func (p *Profile) WriteHeap() error { return nil }

// Close does nothing: there is no profile.
func (p *Profile) Close() error { return nil }
