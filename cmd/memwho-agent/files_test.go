package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/cli/clitest"
	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/storetest"
)

// TestForeignDatabaseCLI: leaks, export and record pointed at another
// program's SQLite file refuse it with one error line and add no table.
func TestForeignDatabaseCLI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE accounts (name text)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, args := range [][]string{
		{"leaks", "--db", path, "--host", "x"},
		{"export", "--db", path},
		{"record", "--once", "--db", path, "-p", strconv.Itoa(os.Getpid())},
	} {
		_, errOut, code := memwho(args...)
		if code != cli.ExitFailure {
			t.Errorf("memwho %s: exit %d, want %d", args[0], code, cli.ExitFailure)
		}
		clitest.OneErrorLine(t, errOut, "not a memwho history database")
	}
	db, _ = sql.Open("sqlite", "file:"+path+"?mode=ro")
	defer db.Close()
	var n int
	db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table'`).Scan(&n)
	if n != 1 {
		t.Errorf("%d tables afterwards, want only accounts", n)
	}
}

// TestReadersCreateNothing: leaks and export on a missing or empty file
// fail without creating a file or a table.
func TestReadersCreateNothing(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o600)
	for _, cmd := range []string{"leaks", "export"} {
		for _, db := range []string{filepath.Join(dir, "missing.db"), empty} {
			_, errOut, code := memwho(cmd, "--db", db, "--host", "x")
			if code != cli.ExitFailure || !strings.Contains(errOut, "no history recorded yet") {
				t.Errorf("%s --db %s: exit %d, %q", cmd, filepath.Base(db), code, errOut)
			}
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d files, want only empty.db", len(ents))
	}
	if st, _ := os.Stat(empty); st.Size() != 0 {
		t.Errorf("empty.db grew to %d bytes", st.Size())
	}
}

// hostileKey is a process name built to attack whoever reads memwho's
// output: a terminal colour sequence, a right-to-left override, a
// newline and a spreadsheet formula.
const hostileKey = "=HYPERLINK(\"http://evil\")\x1b[31m\u202etxt.exe\nsecond line"

// hostileHistory writes 12 minutes of a process named hostileKey
// growing by 1 MiB a minute.
func hostileHistory(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.db")
	st, err := store.Open(context.Background(), path, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range 12 {
		s := store.Sample{Time: storetest.T0.Add(time.Duration(i) * time.Minute), Host: "web1", Procs: 1}
		s.Meminfo.MemAvailable = 1 << 30
		s.Rows = []store.Row{{Kind: store.KindProcess, Key: hostileKey, PID: 7, StartTime: 1, Count: 1, PSS: uint64(10<<20 + i<<20)}}
		if err := st.Write(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestHostileNamesOut: export and leaks --json carry a hostile name
// without a raw control or bidi character; export keeps one record per
// line and defuses the formula; JSON still decodes to the exact name.
func TestHostileNamesOut(t *testing.T) {
	db := hostileHistory(t)
	out, errOut, code := memwho("export", "--db", db)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	if strings.ContainsAny(out, "\x1b\u202e\r") {
		t.Errorf("export output holds a raw control or bidi character: %q", out)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 13 || strings.Count(out, "\n") != 13 {
		t.Fatalf("%d records on %d lines, want 13 on 13", len(recs), strings.Count(out, "\n"))
	}
	key := recs[1][slices.Index(recs[0], "key")]
	if want := `'=HYPERLINK("http://evil")\x1b[31m\u202etxt.exe\nsecond line`; key != want {
		t.Errorf("exported key = %q, want %q", key, want)
	}
	if pss := recs[1][slices.Index(recs[0], "pss")]; pss != "10485760" {
		t.Errorf("pss = %q, want the plain number", pss)
	}

	out, errOut, code = memwho("leaks", "--db", db, "--host", "web1", "--window", "1h",
		"--until", storetest.T0.Add(12*time.Minute).Format(time.RFC3339), "--json")
	if code != 0 {
		t.Fatalf("leaks: exit %d: %s", code, errOut)
	}
	if strings.ContainsAny(out, "\x1b\u202e") {
		t.Errorf("leaks --json holds a raw control or bidi character: %q", out)
	}
	if !strings.Contains(out, `\u202e`) {
		t.Errorf("leaks --json lacks the \\u202e escape:\n%s", out)
	}
	var got struct {
		Leaks []struct{ Key string } `json:"leaks"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Leaks) == 0 || got.Leaks[0].Key != hostileKey {
		t.Errorf("leaks --json decodes to %+v, %v; want the exact name", got, err)
	}

	out, _, _ = memwho("leaks", "--db", db, "--host", "web1", "--window", "1h",
		"--until", storetest.T0.Add(12*time.Minute).Format(time.RFC3339))
	if strings.ContainsAny(out, "\x1b\u202e") {
		t.Errorf("leaks table holds a raw control or bidi character: %q", out)
	}
}

// TestFullDisk: every command that writes a file fails, with one error
// line and exit 1, when the disk is full, and leaves an older file of
// that name as it was.
func TestFullDisk(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	t.Run("export -o", func(t *testing.T) {
		db := writeHistory(t, filepath.Join(t.TempDir(), "h.db"), 20, "web1")
		dir := clitest.MountTinyTmpfs(t, "64k")
		out := filepath.Join(dir, "out.csv")
		os.WriteFile(out, []byte("old\n"), 0o644)
		clitest.Fill(t, dir)
		_, errOut, code := memwho("export", "--db", db, "-o", out)
		if code != cli.ExitFailure {
			t.Errorf("exit %d, want %d", code, cli.ExitFailure)
		}
		clitest.OneErrorLine(t, errOut, "no space left on device")
		if b, _ := os.ReadFile(out); string(b) != "old\n" {
			t.Errorf("out.csv holds %.40q, want the old content", b)
		}
		clitest.NoTemps(t, dir)
	})
	t.Run("record", func(t *testing.T) {
		// The disk fills while record runs, as it would in production:
		// the samples after that are not stored, and record must say so
		// and stop, not warn and carry on.
		dir := clitest.MountTinyTmpfs(t, "1m")
		db := filepath.Join(dir, "h.db")
		cmd := memwhoCmd(t, "record", "--count", "200", "--interval", "20ms", "--db", db, "-p", self, "--groups", "none", "-v")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(stderr)
		first, err := r.ReadString('\n')
		if !strings.HasPrefix(first, "memwho: sample ") {
			cmd.Process.Kill()
			t.Fatalf("first line %q, %v; want a sample", first, err)
		}
		clitest.Fill(t, dir)
		rest, _ := io.ReadAll(r)
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != cli.ExitFailure {
			t.Errorf("record on a full disk: %v, want exit %d", err, cli.ExitFailure)
		}
		var errLines []string
		for _, l := range strings.SplitAfter(string(rest), "\n") {
			if !strings.HasPrefix(l, "memwho: sample ") && l != "" {
				errLines = append(errLines, l)
			}
		}
		clitest.OneErrorLine(t, strings.Join(errLines, ""), "not stored")
		t.Logf("record on a full disk: %s", strings.Join(errLines, ""))
	})
}
