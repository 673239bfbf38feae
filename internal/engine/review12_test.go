package engine

import (
	"math"
	"testing"

	"github.com/memwho/memwho/internal/proc/fstest"
	"golang.org/x/sys/unix"
)

// TestReview12OtherFilesBounds: OtherFiles as a caller might get it
// wrong (negative, or so large that adding the reserve would overflow
// were it not checked) never makes the engine keep more than with none,
// nor wrap around into keeping everything: negative counts as none, the
// largest int keeps nothing, and exactly the reserve keeps none either.
func TestReview12OtherFilesBounds(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		t.Skipf("skipping: open-file limit %d (%v)", rl.Cur, err)
	}
	held := func(other int) int64 {
		e := newEngine(t, Options{FS: fstest.Open(t, "/proc"), Workers: 1, OtherFiles: other})
		return e.maxHeld
	}
	base := held(0)
	if got := held(-1 << 40); got != base {
		t.Errorf("OtherFiles negative: MaxHeld %d, want %d as with none", got, base)
	}
	if got := held(math.MaxInt); got != -1 {
		t.Errorf("OtherFiles MaxInt: MaxHeld %d, want -1 (none kept)", got)
	}
	if got := held(int(rl.Cur) - (32 + 3)); got != 0 {
		t.Errorf("OtherFiles leaving the reserve exactly: MaxHeld %d, want 0", got)
	}
}
