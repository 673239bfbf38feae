package cli

import (
	"context"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// TestReview8InterruptibleSignals: SIGHUP ends an Interruptible context
// as SIGINT and SIGTERM do (a closed terminal left a snapshot -o's or a
// report --html's temporary file behind), and SIGINT and SIGHUP that
// the process ignores stay ignored (nohup, a script's background job):
// os/signal installed a handler for them, so a Ctrl-C meant for a
// script's foreground command stopped the record it ran with "&".
func TestReview8InterruptibleSignals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sig     syscall.Signal
		ignored bool
		ends    bool
	}{
		{"SIGHUP", syscall.SIGHUP, false, true},
		{"SIGINT", syscall.SIGINT, false, true},
		{"SIGTERM", syscall.SIGTERM, false, true},
		{"SIGHUP ignored (nohup)", syscall.SIGHUP, true, false},
		{"SIGINT ignored (a background job of sh)", syscall.SIGINT, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ignored {
				signal.Ignore(tc.sig)
				defer signal.Reset(tc.sig)
			}
			ctx, stop := Interruptible(context.Background())
			defer stop()
			syscall.Kill(syscall.Getpid(), tc.sig)
			select {
			case <-ctx.Done():
				if !tc.ends {
					t.Errorf("%v ended the context; it was ignored", tc.sig)
				}
			case <-time.After(300 * time.Millisecond):
				if tc.ends {
					t.Errorf("%v did not end the context", tc.sig)
				}
			}
			if tc.ignored && !signal.Ignored(tc.sig) {
				t.Errorf("%v no longer ignored after Interruptible", tc.sig)
			}
		})
	}
}
