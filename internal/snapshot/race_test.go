//go:build race

package snapshot

// raceEnabled: the race detector makes sync.Pool drop what it is given,
// so allocation counts mean nothing.
const raceEnabled = true
