package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/storetest"
	"golang.org/x/sys/unix"
)

// TestFileModes: a new history and the side files SQLite keeps beside
// it are readable by their owner only, whatever the umask; the file is
// marked as memwho's.
func TestFileModes(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "history.db")
	d, err := Open(ctx, path, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := storetest.Samples(1, "web1")
	if err := d.Write(ctx, &s[0]); err != nil {
		t.Fatal(err)
	}
	// The -wal and -shm files exist while the database is open.
	seen := 0
	for _, name := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		st, err := os.Stat(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		seen++
		if got := st.Mode().Perm(); got != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(name), got)
		}
	}
	if seen < 3 {
		t.Errorf("saw %d of the database, -wal and -shm files, want all three", seen)
	}
	var id int64
	if err := d.db.QueryRow(`PRAGMA application_id`).Scan(&id); err != nil || id != store.ApplicationID {
		t.Errorf("application_id = %#x, %v; want %#x", id, err, store.ApplicationID)
	}
}

// TestRefusedPaths: a symlink, a directory, a FIFO, and a symlink where
// SQLite keeps a side file are refused, and nothing is written through
// them.
func TestRefusedPaths(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	link := filepath.Join(dir, "link.db")
	os.Symlink(victim, link)
	fifo := filepath.Join(dir, "fifo.db")
	unix.Mkfifo(fifo, 0o600)
	side := filepath.Join(dir, "side.db")
	os.Symlink(victim, side+"-wal")
	for _, tc := range []struct {
		name, path string
	}{
		{"symlink", link},
		{"directory", dir},
		{"fifo", fifo},
		{"symlink at -wal", side},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, opt := range []store.OpenOptions{{}, {ReadOnly: true}} {
				if d, err := Open(ctx, tc.path, opt); err == nil {
					d.Close()
					t.Errorf("Open(%s, %+v) succeeded", tc.name, opt)
				}
			}
		})
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("victim holds %q", b)
	}
}

// foreignDB writes a SQLite file of another program.
func foreignDB(t *testing.T, path string, appID int) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`CREATE TABLE accounts (name text, balance integer)`, `INSERT INTO accounts VALUES ('alice', 10)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if appID != 0 {
		if _, err := db.Exec(`PRAGMA application_id = 42`); err != nil {
			t.Fatal(err)
		}
	}
}

func tables(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	return names
}

// TestForeignDatabase: another program's SQLite file is refused with
// ErrNotHistory by writers and readers alike, and gains no table.
func TestForeignDatabase(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		appID int
	}{{"unmarked", 0}, {"other application id", 42}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.db")
			foreignDB(t, path, tc.appID)
			for _, opt := range []store.OpenOptions{{}, {MustExist: true}, {ReadOnly: true}} {
				d, err := Open(ctx, path, opt)
				if err == nil {
					d.Close()
				}
				if !errors.Is(err, store.ErrNotHistory) {
					t.Errorf("Open(%+v) = %v, want ErrNotHistory", opt, err)
				}
			}
			if got := tables(t, path); !slices.Equal(got, []string{"accounts"}) {
				t.Errorf("tables now %q, want only accounts", got)
			}
		})
	}
	t.Run("not SQLite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "passwd")
		os.WriteFile(path, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644)
		for _, opt := range []store.OpenOptions{{}, {ReadOnly: true}} {
			if d, err := Open(ctx, path, opt); !errors.Is(err, store.ErrNotHistory) {
				if err == nil {
					d.Close()
				}
				t.Errorf("Open(%+v) = %v, want ErrNotHistory", opt, err)
			}
		}
		if b, _ := os.ReadFile(path); string(b) != "root:x:0:0:root:/root:/bin/bash\n" {
			t.Errorf("file changed to %q", b)
		}
	})
}

// TestReadOnly: readers create nothing: not a missing file, not tables in
// an empty one; they read a history written before memwho marked its
// files, and leave it unmarked.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := Open(ctx, missing, store.OpenOptions{ReadOnly: true}); !errors.Is(err, store.ErrNoHistory) {
		t.Errorf("missing file: %v, want ErrNoHistory", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file was created: %v", err)
	}
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o600)
	if _, err := Open(ctx, empty, store.OpenOptions{ReadOnly: true}); !errors.Is(err, store.ErrNoHistory) {
		t.Errorf("empty file: %v, want ErrNoHistory", err)
	}
	if got := tables(t, empty); len(got) != 0 {
		t.Errorf("empty file now has tables %q", got)
	}

	// A history of an older memwho: tables, no application id.
	legacy := filepath.Join(dir, "legacy.db")
	d, err := Open(ctx, legacy, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := storetest.Samples(1, "web1")
	d.Write(ctx, &s[0])
	d.db.Exec(`PRAGMA application_id = 0`)
	d.Close()
	r, err := Open(ctx, legacy, store.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of an unmarked memwho history: %v", err)
	}
	if err := r.Write(ctx, &s[0]); err == nil {
		t.Error("Write through a read-only open succeeded")
	}
	r.Close()
	// A writer marks it.
	w, err := Open(ctx, legacy, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	w.db.QueryRow(`PRAGMA application_id`).Scan(&id)
	w.Close()
	if id != store.ApplicationID {
		t.Errorf("after a writer opened it, application_id = %#x, want %#x", id, store.ApplicationID)
	}
}
