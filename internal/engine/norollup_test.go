package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/memwho/memwho/internal/sample"
)

// TestZombieDoesNotSwitchToSmaps: a zombie's smaps_rollup cannot be opened
// on any kernel (absent in the fixture), and its smaps is empty. Read
// first, it must not make the engine take smaps for every later process,
// which would lose their Pss_Anon/File/Shmem split, whichever worker
// reached the zombie first.
func TestZombieDoesNotSwitchToSmaps(t *testing.T) {
	root := proctest.Root(t, "../proc/testdata/zombie.txtar")
	// The parent after the zombie in PID order, so that one worker
	// reads the zombie first.
	if err := os.Rename(filepath.Join(root, "7299"), filepath.Join(root, "7400")); err != nil {
		t.Fatal(err)
	}
	for _, opt := range []Options{{Workers: 1}, {Workers: 1, MaxHeld: -1}, {Workers: 1, OneShot: true}} {
		opt.FS = fstest.Open(t, root)
		e := newEngine(t, opt)
		var snap sample.Snapshot
		if err := e.Scan(&snap); err != nil {
			t.Fatal(err)
		}
		p := find(&snap, 7400)
		if p == nil || p.Accuracy != sample.Exact || p.PssAnon == 0 || p.PssFile == 0 {
			t.Errorf("%+v: the zombie's parent read as %+v, want exact with its Pss_Anon/Pss_File split", opt, p)
		}
	}
}
