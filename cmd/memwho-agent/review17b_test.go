package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/record"
	"github.com/memwho/memwho/internal/sample"
)

// The seventeenth review's second pass: attacks on record's check that
// the SQLite history it writes is still the file it opened.

// review17bScanner runs do before its at-th scan.
type review17bScanner struct {
	record.Scanner
	n, at int
	do    func()
}

func (s *review17bScanner) Scan(snap *sample.Snapshot) error {
	if s.n++; s.n == s.at {
		s.do()
	}
	return s.Scanner.Scan(snap)
}

// review17bHook makes record's scanner run do before scan at (0: when
// the scanner is made, after the history was opened).
func review17bHook(t *testing.T, at int, do func()) {
	saved := newRecordScanner
	t.Cleanup(func() { newRecordScanner = saved })
	newRecordScanner = func(opt engine.Options) (record.Scanner, error) {
		sc, err := engine.New(opt)
		if err != nil {
			return nil, err
		}
		if at == 0 {
			do()
		}
		return &review17bScanner{Scanner: sc, at: at, do: do}, nil
	}
}

// review17bOther makes another history, to be put in the recorder's way.
func review17bOther(t *testing.T) string {
	other := filepath.Join(t.TempDir(), "other.db")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"record", "--db", other, "--once", "--groups", "none", "-p", strconv.Itoa(os.Getpid())}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("record the other history: exit %d: %s", code, stderr.String())
	}
	return other
}

// TestReview17bRecordReplaced: a history replaced by a rename over it, or
// removed and created again at once (its inode cannot be reused: SQLite
// holds the old one open), ends the run with an error naming it, also
// when the replacement happens between the open and the first sample.
func TestReview17bRecordReplaced(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   int
		how  string
	}{
		{"renamed over before the first sample", 0, "rename"},
		{"renamed over at the second sample", 2, "rename"},
		{"removed and recreated at the second sample", 2, "recreate"},
		{"removed before the first sample", 0, "remove"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "h.db")
			other := review17bOther(t)
			review17bHook(t, tc.at, func() {
				switch tc.how {
				case "rename":
					if err := os.Rename(other, db); err != nil {
						t.Error(err)
					}
				case "recreate", "remove":
					for _, s := range []string{"", "-wal", "-shm"} {
						os.Remove(db + s)
					}
					if tc.how == "recreate" {
						if err := os.WriteFile(db, nil, 0o600); err != nil {
							t.Error(err)
						}
					}
				}
			})
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"record", "--db", db, "--count", "3", "--interval", "10ms", "--groups", "none", "-p", strconv.Itoa(os.Getpid())}, &stdout, &stderr)
			if code != cli.ExitFailure || !strings.Contains(stderr.String(), "the history "+db+" was removed or replaced while recording") {
				t.Errorf("exit %d: %s", code, stderr.String())
			}
		})
	}
}

// TestReview17bRecordNoFalseAlarm: the check does not stop a legitimate
// run: a relative --db, a file: URI (absolute or relative), a path with
// ./ and // in it, and a path through a symlinked directory.
func TestReview17bRecordNoFalseAlarm(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("sub", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", "link"); err != nil {
		t.Fatal(err)
	}
	for i, db := range []string{
		"rel.db",
		"file:frel.db",
		"file:" + filepath.Join(dir, "fabs.db"),
		"./sub//dots.db",
		"link/through.db",
		filepath.Join(dir, "link", "abs.db"),
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"record", "--db", db, "--count", "3", "--interval", "10ms", "--groups", "none", "-p", strconv.Itoa(os.Getpid())}, &stdout, &stderr)
		if code != cli.ExitOK || stderr.Len() > 0 {
			t.Errorf("%d: record --db %s: exit %d: %s", i, db, code, stderr.String())
			continue
		}
		path := strings.TrimPrefix(db, "file:")
		if n := countSamples(t, path); n != 3 {
			t.Errorf("record --db %s: %d samples, want 3", db, n)
		}
	}
}

// TestReview17bRecordMissingDir: a --db in a missing directory, however
// spelt (a file: URI, $MEMWHO_DB, a parent that is a file), is an error
// and creates nothing.
func TestReview17bRecordMissingDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "afile"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		db, env string
	}{
		{db: filepath.Join(dir, "missing", "deeper", "h.db")},
		{db: "file:" + filepath.Join(dir, "missing", "h.db")},
		{env: filepath.Join(dir, "missing", "h.db")},
		{db: filepath.Join(dir, "afile", "h.db")},
		{db: filepath.Join(dir, "missing", "..", "missing", "h.db")},
	} {
		t.Setenv("MEMWHO_DB", tc.env)
		args := []string{"record", "--once", "--groups", "none", "-p", strconv.Itoa(os.Getpid())}
		if tc.db != "" {
			args = append(args, "--db", tc.db)
		}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code == cli.ExitOK {
			t.Errorf("record --db %q (MEMWHO_DB %q) succeeded", tc.db, tc.env)
		}
		if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("record --db %q (MEMWHO_DB %q) created %s/missing", tc.db, tc.env, dir)
			os.RemoveAll(filepath.Join(dir, "missing"))
		}
	}
}
