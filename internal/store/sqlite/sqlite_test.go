package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/storetest"
)

func openTemp(t *testing.T) *DB {
	t.Helper()
	d, err := Open(context.Background(), filepath.Join(t.TempDir(), "sub", "history.db"), store.OpenOptions{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t) })
}

func TestPragmas(t *testing.T) {
	d := openTemp(t)
	for _, c := range []struct{ pragma, want string }{
		{"journal_mode", "wal"},
		{"synchronous", "1"},
		{"auto_vacuum", "2"},
	} {
		var got string
		if err := d.db.QueryRow("PRAGMA " + c.pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", c.pragma, err)
		}
		if got != c.want {
			t.Errorf("PRAGMA %s = %q, want %q", c.pragma, got, c.want)
		}
	}
}

func TestMustExist(t *testing.T) {
	_, err := Open(context.Background(), filepath.Join(t.TempDir(), "none.db"), store.OpenOptions{MustExist: true})
	if !errors.Is(err, store.ErrNoHistory) {
		t.Fatalf("Open(MustExist) of a missing file: err = %v, want ErrNoHistory", err)
	}
}
