package snapshot

import "time"

// DefaultSocket is where `memwho serve` serves its latest snapshot, and
// where memwho (report and watch) asks for it: beside the metrics socket,
// with the same mode and group.
const DefaultSocket = "/run/memwho/snapshot.sock"

// DefaultMaxAge is the oldest agent snapshot memwho answers from before
// it walks /proc itself: three of the agent's default walk intervals.
const DefaultMaxAge = 30 * time.Second

// DefaultFetchTimeout bounds a whole exchange with the agent. The agent
// answers from bytes it encoded at its last walk, in well under a
// millisecond; a slower answer means something is wrong with it, and the
// caller walks /proc instead.
const DefaultFetchTimeout = time.Second
