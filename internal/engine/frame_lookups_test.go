package engine_test

import (
	"os"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/testload"
)

// kpagesOpen reports whether this process holds /proc/kpagecount or
// /proc/kpageflags open.
func kpagesOpen() bool {
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); strings.HasPrefix(l, "/proc/kpage") {
			return true
		}
	}
	return false
}

// TestNoFrameLookups: an engine told so (the capability install's
// reader) never opens the frame lookup files, even where pagemap shows
// it frame numbers (root here), so that the install reads none whatever
// a kernel shows it.
func TestNoFrameLookups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("frame numbers are shown to root alone: the premise needs root")
	}
	// Processes read page by page, with pages they share.
	g := startLoad(t, 2, testload.Spec{Private: 80 * miB, FileShared: 16 * miB, OwnText: true})
	for _, no := range []bool{false, true} {
		fs := fstest.Open(t, "/proc")
		s, err := engine.New(engine.Options{FS: fs, OneShot: true, PIDs: g.All(), NoFrameLookups: no})
		if err != nil {
			t.Fatal(err)
		}
		var snap sample.Snapshot
		if err := s.Scan(&snap); err != nil {
			t.Fatal(err)
		}
		open := kpagesOpen()
		s.Close()
		fs.Close()
		switch {
		case !no && !open:
			t.Skip("a paced read as root looked no frame up (no frame number shown?): nothing to compare")
		case no && open:
			t.Error("with NoFrameLookups the engine opened /proc/kpagecount or kpageflags")
		}
	}
}
