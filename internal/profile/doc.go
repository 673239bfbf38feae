// Package profile writes the CPU and heap profiles of one run of the
// report (--cpuprofile, --memprofile) with runtime/pprof, in a build made
// with -tags pprof. Other builds, the ones shipped, carry a stub that
// refuses the flags: runtime/pprof and the compressor and text formatter it
// links are 0.3 MB of code with no place in the binary that holds file
// capabilities, where the flags are refused anyway (docs/safe.md).
//
// The files are opened by Start, through the function the command gives
// (memwho's opens with the user's identity), and the command calls Start
// before it raises any capability: a profile is never opened by the
// privileged part of a run. Each file is published (atomicfile's Commit)
// only when it was written whole; one that fails is removed.
package profile

import (
	"errors"

	"github.com/memwho/memwho/internal/atomicfile"
)

// Built reports whether this binary was built with -tags pprof: whether
// Start can profile.
const Built = built

// CreateFunc creates a file to be published by Commit, such as
// atomicfile.Create.
type CreateFunc func(path string) (*atomicfile.File, error)

// ErrNotBuilt is the error for a profile asked of a build without -tags
// pprof.
var ErrNotBuilt = errors.New("this memwho was built without profiling (go build -tags pprof ./cmd/memwho)")
