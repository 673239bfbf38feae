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
func forEach[W any](workers []W, n int, f func(w W, j int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, w := range workers[:min(len(workers), n)] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1) - 1)
				if j >= n {
					return
				}
				f(w, j)
			}
		}()
	}
	wg.Wait()
}
