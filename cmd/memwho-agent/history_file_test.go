package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/record"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/storetest"
)

// The seventeenth review's second pass: attacks on record's check that
// the SQLite history it writes is still the file it opened.

// hookScanner runs do before its at-th scan.
type hookScanner struct {
	record.Scanner
	n, at int
	do    func()
}

func (s *hookScanner) Scan(snap *sample.Snapshot) error {
	if s.n++; s.n == s.at {
		s.do()
	}
	return s.Scanner.Scan(snap)
}

// hookScan makes record's scanner run do before scan at (0: when
// the scanner is made, after the history was opened).
func hookScan(t *testing.T, at int, do func()) {
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
		return &hookScanner{Scanner: sc, at: at, do: do}, nil
	}
}

// otherHistory makes another history, to be put in the recorder's way.
func otherHistory(t *testing.T) string {
	other := filepath.Join(t.TempDir(), "other.db")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"record", "--db", other, "--once", "--groups", "none", "-p", strconv.Itoa(os.Getpid())}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("record the other history: exit %d: %s", code, stderr.String())
	}
	return other
}

// TestRecordReplaced: a history replaced by a rename over it, or
// removed and created again at once (its inode cannot be reused: SQLite
// holds the old one open), ends the run with an error naming it, also
// when the replacement happens between the open and the first sample.
func TestRecordReplaced(t *testing.T) {
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
			other := otherHistory(t)
			hookScan(t, tc.at, func() {
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

// TestRecordNoFalseAlarm: the check does not stop a legitimate
// run: a relative --db, a file: URI (absolute or relative), a path with
// ./ and // in it, and a path through a symlinked directory.
func TestRecordNoFalseAlarm(t *testing.T) {
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

// TestRecordMissingDir: a --db in a missing directory, however
// spelt (a file: URI, $MEMWHO_DB, a parent that is a file), is an error
// and creates nothing.
func TestRecordMissingDir(t *testing.T) {
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

// TestServeOnceCreatesNothing: serve --once checks its listener
// flags but creates no socket (not even in a missing directory, which it
// does not create) and binds no port: a --listen address already taken
// is no error.
func TestServeOnceCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	var stdout, stderr bytes.Buffer
	args := []string{"serve", "--once", "--top-processes", "1",
		"--socket", filepath.Join(dir, "missing", "m.sock"),
		"--debug-socket", filepath.Join(dir, "d.sock"),
		"--snapshot-socket", filepath.Join(dir, "s.sock"),
		"--listen", held.Addr().String(), "--no-auth"}
	if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("serve --once: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "memwho_") {
		t.Errorf("serve --once printed no exposition: %q", stdout.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("serve --once left %v in the socket directory", ents)
	}
}

// TestExportEmpty: an empty -o or --db however it is spelt
// (--output=, -o=, --db=) is refused, and nothing is written to stdout.
func TestExportEmpty(t *testing.T) {
	for _, args := range [][]string{
		{"-o", ""}, {"-o="}, {"--output="}, {"--output", ""},
		{"--db", ""}, {"--db="}, {"-db="},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"export"}, args...), &stdout, &stderr)
		if code == cli.ExitOK || stdout.Len() > 0 {
			t.Errorf("export %q: exit %d, %d bytes on stdout: %s", args, code, stdout.Len(), stderr.String())
		}
	}
}

// TestExportInterruptedKeepsFile: an interrupted export to an
// existing -o file leaves it as it was (content and mode), as it says.
func TestExportInterruptedKeepsFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"record", "--db", db, "--once", "--groups", "none", "-p", strconv.Itoa(os.Getpid())}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("record: exit %d: %s", code, stderr.String())
	}
	out := filepath.Join(dir, "x.csv")
	if err := os.WriteFile(out, []byte("before\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code := run(ctx, []string{"export", "--db", db, "-o", out}, &stdout, &stderr)
	if code != cli.ExitFailure || !strings.Contains(stderr.String(), out+" left as it was") {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	fi, _ := os.Stat(out)
	if err != nil || string(b) != "before\n" || fi.Mode().Perm() != 0o640 {
		t.Errorf("%s after the interrupted export: %q %v (mode %v)", out, b, err, fi.Mode())
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != "x.csv" && !strings.HasPrefix(e.Name(), "h.db") {
			t.Errorf("the interrupted export left %s", e.Name())
		}
	}
}

// TestMaxSizeKeepsSampleJustTaken: --max-size keeps the sample
// just taken even when the history holds one dated later (another host's
// clock ahead, or this host's clock stepped back): "the newest sample"
// is the one record wrote, not the latest timestamp.
func TestMaxSizeKeepsSampleJustTaken(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	ctx := context.Background()
	st, err := store.Open(ctx, db, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := storetest.Samples(1, "ahead")
	s[0].Time = time.Now().Add(time.Hour).Truncate(time.Millisecond)
	if err := st.Write(ctx, &s[0]); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"record", "--db", db, "--once", "--host", "me", "--max-size", "10", "--groups", "none", "-p", strconv.Itoa(os.Getpid())}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("record: exit %d: %s", code, stderr.String())
	}
	raw, err := sql.Open("sqlite", db+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM samples WHERE host = 'me'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("the sample just taken was deleted by --max-size (a later-dated sample of another host kept): %d left; %s", n, stderr.String())
	}
}
