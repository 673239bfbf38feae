//go:build !nopostgres

package postgres

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/memwho/memwho/internal/atomicfile"
	"github.com/memwho/memwho/internal/store"
)

// spool keeps samples that could not be written yet, one JSON file per
// sample named by its time (Unix milliseconds, zero-padded, so that name
// order is time order) and the hash of its target's identity (see
// targetID); the file holds the identity itself too. A spool belongs to
// one database: files of another target are left alone (not written, not
// counted, not dropped), so that a spool directory shared by recorders of
// two databases, or a test against a wrong URL, never mixes histories.
// Files without an identity (written before it existed) are legacy: see
// spool.legacy. A file is written through package atomicfile
// (mode 0600, a new temporary name, synced and renamed), so a crash
// leaves either a whole sample or a temporary file that is ignored and
// removed, and a full disk is an error, not a truncated sample. The directory is bounded: beyond max bytes the
// oldest samples are dropped, with a warning.
type spool struct {
	dir string
	max int64
	seq atomic.Int64
	// target is the identity of the database this spool's samples are
	// for, tag its hash as it appears in file names.
	target, tag string
	// legacy: files without an identity are this target's too. Only
	// when the spool directory was given explicitly: whoever named it
	// and the database said they go together.
	legacy bool
}

// spooled is a spool file's content: the sample, and the identity of the
// database it is for ("" in files of older versions).
type spooled struct {
	Target string `json:"MemwhoTarget,omitempty"`
	store.Sample
}

// defaultSpoolMax bounds the spool when OpenOptions.SpoolMax is 0.
const defaultSpoolMax = 64 << 20

const spoolExt = ".sample.json"

func openSpool(dir string, max int64, target string, legacy bool) (*spool, error) {
	if max <= 0 {
		max = defaultSpoolMax
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if err := checkSpoolDir(dir); err != nil {
		return nil, err
	}
	// Temporary files are left only by a crash during put.
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if e.Type().IsRegular() && atomicfile.IsTemp(e.Name()) {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
	return &spool{dir: dir, max: max, target: target, tag: targetTag(target), legacy: legacy}, nil
}

// errUnsafeSpool is checkSpoolDir's refusal: not a server outage, so
// never a reason to spool.
var errUnsafeSpool = errors.New("another user's samples would be written into the database")

// checkSpoolDir refuses a spool directory another user could write
// into: a sample planted there under this target's name (its identity
// is no secret) would be flushed into the database with the recorder's
// rights. The directory must belong
// to the recorder's user and be writable by no one else.
func checkSpoolDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("spool %s: not a directory", dir)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("spool %s: owned by uid %d, not by this user (uid %d): %w; use a directory of your own", dir, sys.Uid, os.Geteuid(), errUnsafeSpool)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("spool %s: writable by other users (mode %04o): %w; chmod go-w it or use another directory", dir, st.Mode().Perm(), errUnsafeSpool)
	}
	return nil
}

// targetTag is the part of a file name (and of the default spool
// directory) that names the target: a hash, so that a name never holds
// a host or user name, and has a fixed length.
func targetTag(target string) string {
	h := sha256.Sum256([]byte(target))
	return hex.EncodeToString(h[:8])
}

// put writes s to the spool and drops the oldest samples if the spool
// is then over its bound.
func (sp *spool) put(s *store.Sample, warn func(string)) error {
	b, err := json.Marshal(spooled{Target: sp.target, Sample: *s})
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	name := fmt.Sprintf("%020d-%06d-%d.%s%s", store.Millis(s.Time), sp.seq.Add(1)%1e6, os.Getpid(), sp.tag, spoolExt)
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

// list returns the names of the samples spooled for this target, oldest
// first.
func (sp *spool) list() ([]string, error) {
	names, _, err := sp.listAll()
	return names, err
}

// tagOf returns the target tag in a spool file's name, "" for a file of
// an older version.
func tagOf(name string) string {
	base := strings.TrimSuffix(name, spoolExt)
	if i := strings.LastIndexByte(base, '.'); i >= 0 {
		return base[i+1:]
	}
	return ""
}

// listAll returns the names of the samples spooled for this target,
// oldest first, and the names of the others.
func (sp *spool) listAll() (own, others []string, err error) {
	ents, err := os.ReadDir(sp.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("spool: %w", err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), spoolExt) {
			continue
		}
		switch tag := tagOf(e.Name()); {
		case tag == sp.tag, tag == "" && sp.legacy:
			own = append(own, e.Name())
		default:
			others = append(others, e.Name())
		}
	}
	slices.Sort(own)
	slices.Sort(others)
	return own, others, nil
}

// errOtherTarget is get's error for a file whose content names another
// database than its name says (a hash collision, or a renamed file).
var errOtherTarget = errors.New("spooled for another database")

// get reads a spooled sample of this target into s; it returns the
// target the file names.
func (sp *spool) get(name string, s *store.Sample) (string, error) {
	b, err := os.ReadFile(filepath.Join(sp.dir, name))
	if err != nil {
		return "", err
	}
	var f spooled
	if err := json.Unmarshal(b, &f); err != nil {
		return "", err
	}
	*s = f.Sample
	if f.Target != sp.target && (f.Target != "" || !sp.legacy) {
		return f.Target, errOtherTarget
	}
	return f.Target, nil
}

// targetOf returns the identity a spool file names ("" if unreadable or
// written by an older version).
func (sp *spool) targetOf(name string) string {
	var f struct {
		Target string `json:"MemwhoTarget"`
	}
	b, err := os.ReadFile(filepath.Join(sp.dir, name))
	if err == nil {
		json.Unmarshal(b, &f)
	}
	return f.Target
}

func (sp *spool) remove(name string) { os.Remove(filepath.Join(sp.dir, name)) }

// Len returns the number of spooled samples.
func (sp *spool) Len() int {
	names, _ := sp.list()
	return len(names)
}
