package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/memwho/memwho/internal/atomicfile"
	"github.com/memwho/memwho/internal/cli/clitest"
	"github.com/memwho/memwho/internal/export"
	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/storetest"
	"github.com/rogpeppe/go-internal/testscript"
)

// writeHistory writes n samples of each of hosts (storetest.Samples)
// into a new SQLite history and returns its path.
func writeHistory(t testing.TB, path string, n int, hosts ...string) string {
	t.Helper()
	if err := newHistory(path, n, hosts...); err != nil {
		t.Fatal(err)
	}
	return path
}

func newHistory(path string, n int, hosts ...string) error {
	ctx := context.Background()
	st, err := store.Open(ctx, path, store.OpenOptions{})
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	samples := storetest.Samples(n, hosts...)
	for i := range samples {
		if err := st.Write(ctx, &samples[i]); err != nil {
			st.Close()
			return err
		}
	}
	return st.Close()
}

// storeCSV is what the store itself exports for q, with its text cells
// neutralised (export.CellWriter): the reference.
func storeCSV(t *testing.T, db string, q store.Query, table store.Table) []byte {
	t.Helper()
	st, err := store.Open(context.Background(), db, store.OpenOptions{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var buf bytes.Buffer
	cw := export.NewCellWriter(&buf, store.IsTextColumn)
	if err := st.ExportCSV(context.Background(), q, table, cw); err != nil {
		t.Fatal(err)
	}
	if err := cw.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// memwho runs the command line and returns its output and exit code.
func memwho(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return o.String(), e.String(), code
}

func gunzipFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestExportSQLite(t *testing.T) {
	dir := t.TempDir()
	db := writeHistory(t, filepath.Join(dir, "history.db"), 20, "web1", "web2")

	t.Run("stdout", func(t *testing.T) {
		out, errOut, code := memwho("export", "--db", db)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		want := storeCSV(t, db, store.Query{}, store.TableUsage)
		if out != string(want) {
			t.Errorf("export differs from the store's own CSV:\n got %.300q\nwant %.300q", out, want)
		}
		recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil || len(recs) != 1+20*2*7 {
			t.Errorf("%d records (%v), want a header and 280 rows", len(recs), err)
		}
	})

	t.Run("gzip file is deterministic", func(t *testing.T) {
		a, b := filepath.Join(dir, "a.csv.gz"), filepath.Join(dir, "b.csv.gz")
		for _, out := range []string{a, b} {
			if _, errOut, code := memwho("export", "--db", db, "--gzip", "-o", out); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
		}
		if fileHash(t, a) != fileHash(t, b) {
			t.Error("two exports of the same data differ")
		}
		if got, want := gunzipFile(t, a), storeCSV(t, db, store.Query{}, store.TableUsage); !bytes.Equal(got, want) {
			t.Errorf("gunzipped export differs from the store's CSV (%d vs %d bytes)", len(got), len(want))
		}
		clitest.NoTemps(t, dir)
	})

	t.Run("since until host table", func(t *testing.T) {
		since := storetest.T0.Add(5 * time.Minute)
		until := storetest.T0.Add(8 * time.Minute)
		out, errOut, code := memwho("export", "--db", db, "--since", since.Format(time.RFC3339Nano),
			"--until", until.Format(time.RFC3339Nano), "--host", "web2", "--table", "samples")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		want := storeCSV(t, db, store.Query{Since: since, Until: until, Host: "web2", NoRows: true}, store.TableSamples)
		if out != string(want) {
			t.Errorf("got\n%s\nwant\n%s", out, want)
		}
		if n := strings.Count(out, "\n"); n != 1+3 {
			t.Errorf("%d lines, want a header and 3 samples:\n%s", n, out)
		}
	})
}

// TestWriteFileAtomic: -o through export.ToFile and atomicfile.CreateAsUser: a failed export leaves neither the final name nor
// the temporary file; a successful one replaces the old file.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "out.csv")
	if err := os.WriteFile(name, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errDB := errors.New("database went away")
	ctx := context.Background()
	err := export.ToFile(ctx, name, atomicfile.CreateAsUser, export.Options{}, func(ctx context.Context, w io.Writer) error {
		io.WriteString(w, "half a file")
		return errDB
	})
	if !errors.Is(err, errDB) {
		t.Errorf("ToFile error = %v, want %v", err, errDB)
	}
	if b, _ := os.ReadFile(name); string(b) != "old\n" {
		t.Errorf("after a failed write the file holds %q, want the old content", b)
	}
	clitest.NoTemps(t, dir)
	if err := export.ToFile(ctx, name, atomicfile.CreateAsUser, export.Options{}, func(ctx context.Context, w io.Writer) error {
		_, err := io.WriteString(w, "new\n")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(name); string(b) != "new\n" {
		t.Errorf("file holds %q, want %q", b, "new\n")
	}
}

// noTemps fails the test if dir holds a temporary file of atomicfile.

// TestExportSymlinkAttack: links planted where export -o writes (the old
// fixed FILE.tmp name, and FILE itself) never make it write through them:
// a root-owned victim file stays as it was.
func TestExportSymlinkAttack(t *testing.T) {
	dir := t.TempDir()
	db := writeHistory(t, filepath.Join(dir, "history.db"), 2, "web1")
	victimDir := t.TempDir()
	for _, tc := range []struct{ name, link string }{
		{"link at FILE.tmp", "out.csv.tmp"},
		{"link at FILE", "out.csv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			victim := filepath.Join(victimDir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.WriteFile(victim, []byte("root's precious file\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(work, tc.link)); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(work, "out.csv")
			if _, errOut, code := memwho("export", "--db", db, "-o", out); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if b, _ := os.ReadFile(victim); string(b) != "root's precious file\n" {
				t.Errorf("victim now holds %.80q", b)
			}
			st, err := os.Lstat(out)
			if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
				t.Errorf("out.csv: %v %v, want a regular file, mode 0600", st.Mode(), err)
			}
			clitest.NoTemps(t, work)
		})
	}
}

// TestExportScript runs the export scenarios in testdata/export. The
// condition [sftp] holds unless built with -tags nosftp. They add two
// commands: "history DB N HOST..." writes N samples per host (the
// storetest fixtures) into a new SQLite history, and "gunzip IN OUT".
func TestExportScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/export",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Condition: func(cond string) (bool, error) {
			if cond == "sftp" {
				return export.SFTP, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"history": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 3 {
					ts.Fatalf("usage: history DB N HOST...")
				}
				n, err := strconv.Atoi(args[1])
				ts.Check(err)
				ts.Check(newHistory(ts.MkAbs(args[0]), n, args[2:]...))
			},
			"gunzip": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 2 {
					ts.Fatalf("usage: gunzip IN OUT")
				}
				f, err := os.Open(ts.MkAbs(args[0]))
				ts.Check(err)
				defer f.Close()
				zr, err := gzip.NewReader(f)
				ts.Check(err)
				b, err := io.ReadAll(zr)
				ts.Check(err)
				ts.Check(os.WriteFile(ts.MkAbs(args[1]), b, 0o644))
			},
		},
	})
}
