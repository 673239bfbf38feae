package engine

import (
	"math"
	"testing"
)

// TestOtherFilesBounds: OtherFiles as a caller might get it
// wrong (negative, or so large that adding the reserve would overflow
// were it not checked) never makes the engine keep more than with none,
// nor wrap around into keeping everything: negative counts as none, the
// largest int keeps nothing, and exactly the reserve keeps none either.
func TestOtherFilesBounds(t *testing.T) {
	limit, held := otherFilesHeld(t)
	base := held(0)
	if got := held(-1 << 40); got != base {
		t.Errorf("OtherFiles negative: MaxHeld %d, want %d as with none", got, base)
	}
	if got := held(math.MaxInt); got != -1 {
		t.Errorf("OtherFiles MaxInt: MaxHeld %d, want -1 (none kept)", got)
	}
	if got := held(int(limit) - (32 + 3)); got != 0 {
		t.Errorf("OtherFiles leaving the reserve exactly: MaxHeld %d, want 0", got)
	}
}
