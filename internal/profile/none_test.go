//go:build !pprof

package profile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/memwho/memwho/internal/atomicfile"
)

// TestNotBuilt: without -tags pprof a profile asked for is refused, naming
// its flag, and no file is created; none asked for is no error.
func TestNotBuilt(t *testing.T) {
	dir := t.TempDir()
	created := 0
	create := func(path string) (*atomicfile.File, error) {
		created++
		return atomicfile.Create(path, 0)
	}
	for _, c := range []struct{ cpu, mem, flag string }{
		{filepath.Join(dir, "cpu"), "", "--cpuprofile: "},
		{"", filepath.Join(dir, "mem"), "--memprofile: "},
		{filepath.Join(dir, "cpu"), filepath.Join(dir, "mem"), "--memprofile: "},
	} {
		p, err := Start(c.cpu, c.mem, create)
		if !errors.Is(err, ErrNotBuilt) || p != nil || err.Error() != c.flag+ErrNotBuilt.Error() {
			t.Errorf("Start(%q, %q) = %v, %v; want nil and %s%v", c.cpu, c.mem, p, err, c.flag, ErrNotBuilt)
		}
	}
	if ents, _ := os.ReadDir(dir); created != 0 || len(ents) != 0 {
		t.Errorf("created %d files, directory holds %d entries", created, len(ents))
	}
	p, err := Start("", "", create)
	if err != nil || p.WriteHeap() != nil || p.Close() != nil {
		t.Errorf("no profile asked: %v", err)
	}
	if Built {
		t.Error("Built is true without -tags pprof")
	}
}
