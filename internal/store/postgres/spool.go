//go:build !nopostgres

package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/memwho/memwho/internal/atomicfile"
	"github.com/memwho/memwho/internal/store"
)

// spool keeps samples that could not be written yet, one JSON file per
// sample named by its time (Unix milliseconds, zero-padded, so that name
// order is time order). A file is written through package atomicfile
// (mode 0600, a new temporary name, synced and renamed), so a crash
// leaves either a whole sample or a temporary file that is ignored and
// removed, and a full disk is an error, not a truncated sample. The directory is bounded: beyond max bytes the
// oldest samples are dropped, with a warning.
type spool struct {
	dir string
	max int64
	seq atomic.Int64
}

// defaultSpoolMax bounds the spool when OpenOptions.SpoolMax is 0.
const defaultSpoolMax = 64 << 20

const spoolExt = ".sample.json"

func openSpool(dir string, max int64) (*spool, error) {
	if max <= 0 {
		max = defaultSpoolMax
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	// Temporary files are left only by a crash during put.
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if e.Type().IsRegular() && atomicfile.IsTemp(e.Name()) {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
	return &spool{dir: dir, max: max}, nil
}

// put writes s to the spool and drops the oldest samples if the spool
// is then over its bound.
func (sp *spool) put(s *store.Sample, warn func(string)) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	name := fmt.Sprintf("%020d-%06d-%d%s", store.Millis(s.Time), sp.seq.Add(1)%1e6, os.Getpid(), spoolExt)
	f, err := atomicfile.Create(filepath.Join(sp.dir, name), 0o600)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	defer f.Abort()
	f.Write(b) // a failed write fails the Commit
	if err := f.Commit(); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return sp.trim(warn)
}

// trim drops the oldest samples until the spool fits its bound.
func (sp *spool) trim(warn func(string)) error {
	names, err := sp.list()
	if err != nil {
		return err
	}
	var total int64
	sizes := make([]int64, len(names))
	for i, n := range names {
		if st, err := os.Stat(filepath.Join(sp.dir, n)); err == nil {
			sizes[i] = st.Size()
			total += st.Size()
		}
	}
	dropped := 0
	// Keep the newest sample even if it alone exceeds the bound.
	for i := 0; total > sp.max && i < len(names)-1; i++ {
		sp.remove(names[i])
		total -= sizes[i]
		dropped++
	}
	if dropped > 0 && warn != nil {
		warn(fmt.Sprintf("spool over its %d-byte bound: dropped the %d oldest samples", sp.max, dropped))
	}
	return nil
}

// list returns the spooled samples' file names, oldest first.
func (sp *spool) list() ([]string, error) {
	ents, err := os.ReadDir(sp.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("spool: %w", err)
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), spoolExt) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

func (sp *spool) get(name string, s *store.Sample) error {
	b, err := os.ReadFile(filepath.Join(sp.dir, name))
	if err != nil {
		return err
	}
	*s = store.Sample{}
	return json.Unmarshal(b, s)
}

func (sp *spool) remove(name string) { os.Remove(filepath.Join(sp.dir, name)) }

// Len returns the number of spooled samples.
func (sp *spool) Len() int {
	names, _ := sp.list()
	return len(names)
}
