//go:build floorpad

package main

import (
	"os"

	"github.com/memwho/memwho/internal/floor"
)

// A build with -tags floorpad, for scripts/bench.sh only, runs
// memwho-floor's reads instead of memwho when MEMWHO_FLOOR_PAD is set: the
// floor's own code, started and run inside memwho's binary. It runs as the
// last initialiser of package main, after every package memwho links has
// been initialised, so it pays all of memwho's start-up except main itself.
// Against memwho-floor it measures what the binary's size alone costs;
// against memwho, what memwho's work over the floor costs.
func init() {
	if os.Getenv("MEMWHO_FLOOR_PAD") != "" {
		os.Exit(floor.Main(os.Args[1:]))
	}
}
