//go:build !nopostgres

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/pgtest"
	"github.com/memwho/memwho/internal/store/storetest"
)

// TestExportPostgres: the same history in PostgreSQL (a real server,
// COPY TO STDOUT) and in SQLite (rows.Next) exports to the same bytes,
// plain and gzipped.
func TestExportPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.CreateDB(t)
	ctx := context.Background()
	st, err := store.Open(ctx, url, store.OpenOptions{})
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	samples := storetest.Samples(30, "web1", "web2")
	storetest.Write(t, st, samples)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lite := writeHistory(t, filepath.Join(dir, "history.db"), 30, "web1", "web2")

	for _, args := range [][]string{
		{},
		{"--gzip"},
		{"--table", "samples", "--since", "2026-03-01T12:10:00Z", "--host", "web1"},
		{"--gzip", "--until", "2026-03-01T12:05:00.123Z"},
	} {
		t.Run(filepath.Join(args...), func(t *testing.T) {
			var outs [][]byte
			for i, db := range []string{url, lite} {
				out := filepath.Join(dir, "out")
				a := append([]string{"export", "--db", db, "-o", out}, args...)
				if _, errOut, code := memwho(a...); code != 0 {
					t.Fatalf("memwho %q: exit %d: %s", a, code, errOut)
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 && len(b) < 100 {
					t.Fatalf("PostgreSQL export is only %q", b)
				}
				outs = append(outs, b)
			}
			if !bytes.Equal(outs[0], outs[1]) {
				t.Errorf("PostgreSQL export (%d bytes) differs from SQLite export (%d bytes):\n%.400q\n%.400q", len(outs[0]), len(outs[1]), outs[0], outs[1])
			}
		})
	}
}
