package testload

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// Churn starts workers goroutines that each start and reap short-lived
// children in a loop until ctx is done. Every child dirties private bytes
// of memory and exits at once, so a concurrent scan of /proc keeps meeting
// processes that vanish between listing and reading. The returned wait
// function blocks until the workers have stopped and returns how many
// children were started; call it after cancelling ctx.
func Churn(ctx context.Context, workers int, private int64) (wait func() (int64, error)) {
	var (
		wg       sync.WaitGroup
		started  atomic.Int64
		firstErr error
		errOnce  sync.Once
	)
	exe, err := os.Executable()
	if err != nil {
		return func() (int64, error) { return 0, err }
	}
	attr := &os.ProcAttr{
		Env: childEnviron(Spec{Private: private}, true),
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				p, err := os.StartProcess(exe, []string{exe}, attr)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				started.Add(1)
				p.Wait()
			}
		}()
	}
	return func() (int64, error) {
		wg.Wait()
		return started.Load(), firstErr
	}
}
