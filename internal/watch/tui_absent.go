//go:build notui

package watch

import (
	"context"
	"errors"
)

// TUI reports whether this build has the live view: it was left out with
// the notui build tag, so the watch prints plain snapshots even on a
// terminal. The optional parts all follow one pattern: see
// internal/store/postgres/absent.go.
const TUI = false

// RunTUI is not available in notui builds; callers check TUI and use
// RunPlain instead.
func RunTUI(ctx context.Context, s Sampler, opt Options) error {
	return errors.New("the live view is not in this build (built with -tags notui)")
}

// AbandonTerminal does nothing: no terminal is taken in notui builds.
func AbandonTerminal() {}
