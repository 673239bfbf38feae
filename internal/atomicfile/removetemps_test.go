package atomicfile

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestRemoveTemps: what a second signal runs before the process
// dies (cli.InterruptibleOnce). Every temporary file not yet committed
// or aborted is removed; a published file and an old target are left
// alone; a Commit or Create after it fails without publishing or
// leaving anything; an Abort after it is harmless. Run concurrently
// with Commits (go test -race): a file is either published whole or
// gone, never a temporary file left.
func TestRemoveTemps(t *testing.T) {
	defer func() {
		pending.Lock()
		pending.removed = false
		pending.Unlock()
	}()
	dir := t.TempDir()
	old := filepath.Join(dir, "old")
	if err := os.WriteFile(old, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	done, err := Create(filepath.Join(dir, "done"), 0)
	if err != nil {
		t.Fatal(err)
	}
	done.Write([]byte("done"))
	if err := done.Commit(); err != nil {
		t.Fatal(err)
	}
	a, err := Create(old, 0)
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("new"))
	b, err := Create(filepath.Join(dir, "b"), 0)
	if err != nil {
		t.Fatal(err)
	}
	RemoveTemps()
	if err := a.Commit(); err == nil {
		t.Error("Commit after RemoveTemps succeeded")
	}
	b.Abort()
	if c, err := Create(filepath.Join(dir, "c"), 0); err == nil {
		c.Abort()
		t.Error("Create after RemoveTemps succeeded")
	}
	if got := readFile(t, old); got != "old" {
		t.Errorf("old target: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "done")); got != "done" {
		t.Errorf("published file: %q", got)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("directory: %v, want done and old", ents)
	}
	pending.Lock()
	n := len(pending.files)
	pending.removed = false
	pending.Unlock()
	if n != 0 {
		t.Errorf("%d files still pending", n)
	}

	// Concurrent with Commits.
	for round := range 50 {
		d := filepath.Join(dir, "race", string(rune('a'+round%26))+string(rune('a'+round/26)))
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		var files []*File
		for i := range 8 {
			f, err := Create(filepath.Join(d, string(rune('0'+i))), 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("whole"))
			files = append(files, f)
		}
		var wg sync.WaitGroup
		for _, f := range files {
			wg.Go(func() { f.Commit() })
		}
		RemoveTemps()
		wg.Wait()
		pending.Lock()
		pending.removed = false
		pending.Unlock()
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if IsTemp(e.Name()) {
				t.Fatalf("round %d: %s left", round, e.Name())
			}
			if got := readFile(t, filepath.Join(d, e.Name())); got != "whole" {
				t.Fatalf("round %d: %s holds %q", round, e.Name(), got)
			}
		}
	}
}
