package engine

import (
	"sync"
	"sync/atomic"
)

// forEach calls f(w, j) for every j in [0, n), spread over one goroutine
// per worker (at most n of them): the bounded parallelism of a tick. Each
// worker handles one j at a time and takes the next free one, so a slow
// process holds up one worker only. f must be safe to run concurrently for
// different workers.
//
// The calling goroutine is the first worker: it would only wait
// otherwise, and a goroutine fewer is a stack fewer (a report is one
// short-lived scan, whose memory is what it ever touched).
func forEach[W any](workers []W, n int, f func(w W, j int)) {
	var next atomic.Int64
	run := func(w W) {
		for {
			j := int(next.Add(1) - 1)
			if j >= n {
				return
			}
			f(w, j)
		}
	}
	var wg sync.WaitGroup
	ws := workers[:min(len(workers), n)]
	if len(ws) == 0 {
		return
	}
	for _, w := range ws[1:] {
		wg.Go(func() { run(w) })
	}
	run(ws[0])
	wg.Wait()
}
