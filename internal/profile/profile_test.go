//go:build pprof

package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/atomicfile"
)

func create(path string) (*atomicfile.File, error) { return atomicfile.Create(path, 0) }

// entries lists dir's names, to see that no temporary file is left.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu"), filepath.Join(dir, "mem")
	p, err := Start(cpu, mem, create)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WriteHeap(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{cpu, mem} {
		if fi, err := os.Stat(name); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v, want a profile", name, err)
		}
	}
	if got := entries(t, dir); len(got) != 2 {
		t.Errorf("directory holds %q, want cpu and mem alone", got)
	}
}

// TestHeapNotWritten: a run that fails before WriteHeap publishes the
// CPU profile and no heap profile.
func TestHeapNotWritten(t *testing.T) {
	dir := t.TempDir()
	p, err := Start(filepath.Join(dir, "cpu"), filepath.Join(dir, "mem"), create)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, dir); len(got) != 1 || got[0] != "cpu" {
		t.Errorf("directory holds %q, want cpu alone", got)
	}
}

// TestCPUOpenFails: when the CPU profile cannot be created, the heap
// profile already opened is removed and the error names the flag.
func TestCPUOpenFails(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(filepath.Join(dir, "missing", "cpu"), filepath.Join(dir, "mem"), create)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Start: %v, want a missing directory", err)
	}
	if got := err.Error(); !strings.HasPrefix(got, "--cpuprofile: ") {
		t.Errorf("error %q does not name --cpuprofile", got)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("directory holds %q, want nothing", got)
	}
}

// TestNone: no profile asked for is no work, and a nil Profile is safe.
func TestNone(t *testing.T) {
	p, err := Start("", "", func(string) (*atomicfile.File, error) {
		t.Fatal("create called")
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WriteHeap(); err != nil {
		t.Error(err)
	}
	if err := p.Close(); err != nil {
		t.Error(err)
	}
	var none *Profile
	if err := none.WriteHeap(); err != nil {
		t.Error(err)
	}
	if err := none.Close(); err != nil {
		t.Error(err)
	}
}
