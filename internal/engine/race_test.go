//go:build race

package engine_test

// raceEnabled: under the race detector a Go load process's runtime holds
// more of its own memory (16.4 MiB resident after 64 MiB went to swap,
// against a bound of 16 MiB), so bounds on a load's resident memory
// allow for it.
const raceEnabled = true
