package cli

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestInterruptibleView: the signals at
// InterruptibleView (docs/safe.md): SIGHUP twice then SIGTERM at once,
// before anyone reads (the channel closed once, the context ended, the
// process alive); under nohup the same (the channel never closed, SIGHUP
// still ignored); stop racing a storm of SIGHUPs, 200 times (no close
// of a closed channel, no goroutine left). In a process of its own, as
// TestInterruptibleViewHangup.
func TestInterruptibleView(t *testing.T) {
	if os.Getenv("MEMWHO_TEST_VIEW_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestInterruptibleView$", "-test.v")
		cmd.Env = append(os.Environ(), "MEMWHO_TEST_VIEW_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestInterruptibleView") {
			t.Fatalf("%v:\n%s", err, out)
		}
		return
	}
	unignore(syscall.SIGHUP, syscall.SIGINT)
	burst := func() {
		for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGHUP, syscall.SIGTERM} {
			syscall.Kill(syscall.Getpid(), sig)
		}
	}
	t.Run("SIGHUP, SIGHUP, SIGTERM", func(t *testing.T) {
		ctx, hangup, stop := InterruptibleView(context.Background(), nil)
		defer stop()
		burst()
		for _, c := range []<-chan struct{}{hangup, ctx.Done()} {
			select {
			case <-c:
			case <-time.After(5 * time.Second):
				t.Fatal("the hang-up channel or the context still open")
			}
		}
	})
	t.Run("stop racing SIGHUPs", func(t *testing.T) {
		// Keep SIGHUP caught past each stop: its default action would
		// end this process.
		keep := make(chan os.Signal, 1)
		signal.Notify(keep, syscall.SIGHUP)
		defer signal.Stop(keep)
		for range 200 {
			_, hangup, stop := InterruptibleView(context.Background(), nil)
			var wg sync.WaitGroup
			wg.Go(func() { syscall.Kill(syscall.Getpid(), syscall.SIGHUP) })
			wg.Go(stop)
			wg.Go(stop)
			wg.Wait()
			select {
			case <-hangup:
			default:
			}
		}
	})
	t.Run("nohup: SIGHUP, SIGHUP, SIGTERM", func(t *testing.T) {
		signal.Ignore(syscall.SIGHUP)
		defer unignore(syscall.SIGHUP)
		ctx, hangup, stop := InterruptibleView(context.Background(), nil)
		defer stop()
		burst()
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("SIGTERM did not end the context")
		}
		select {
		case <-hangup:
			t.Error("an ignored SIGHUP closed the hang-up channel")
		case <-time.After(100 * time.Millisecond):
		}
		if !signal.Ignored(syscall.SIGHUP) {
			t.Error("SIGHUP no longer ignored")
		}
	})
}
