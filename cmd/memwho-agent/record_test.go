package main

import (
	"bytes"
	"context"
	"database/sql"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/pgtest"
	"github.com/memwho/memwho/internal/store/sqlite"
)

func TestRecordSchemaTooNew(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"record", "--once", "--db", db}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("record: exit %d: %s", code, stderr.String())
	}
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	stderr.Reset()
	code := run(context.Background(), []string{"record", "--once", "--db", db}, &stdout, &stderr)
	if code != cli.ExitFailure || !strings.Contains(stderr.String(), "newer schema") {
		t.Errorf("record into a newer database: exit %d, stderr %q; want 1 and a newer-schema error", code, stderr.String())
	}
}

// memwhoCmd runs this test binary as memwho (testscript.Main dispatches
// on the program name).
func memwhoCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Args[0] = "memwho"
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// checkSamples opens the database, runs integrity_check and checks that
// every sample is whole: as many process rows as its procs column says.
// It returns the number of samples.
func checkSamples(t *testing.T, db string) int {
	t.Helper()
	ctx := context.Background()
	d, err := sqlite.Open(ctx, db, store.OpenOptions{MustExist: true})
	if err != nil {
		t.Fatalf("open after kill -9: %v", err)
	}
	defer d.Close()
	if err := d.Check(ctx); err != nil {
		t.Fatalf("after kill -9: %v", err)
	}
	n := 0
	err = d.Samples(ctx, store.Query{}, func(s *store.Sample) error {
		n++
		procs := 0
		for _, r := range s.Rows {
			if r.Kind == store.KindProcess {
				procs++
			}
		}
		if procs != s.Procs || procs == 0 {
			t.Errorf("sample %d at %v has %d process rows, its procs column says %d: a torn sample", s.ID, s.Time, procs, s.Procs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRecordKill9 kills a real recorder (every 50 ms) with SIGKILL at
// random moments, again and again: the database must open, pass
// integrity_check and hold only whole samples, each run adding to it.
func TestRecordKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real recorders for a few seconds")
	}
	db := filepath.Join(t.TempDir(), "h.db")
	prev := 0
	for i := range 6 {
		cmd := memwhoCmd(t, "record", "--interval", "50ms", "--db", db)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait for this run's first sample, then a random moment more.
		deadline := time.Now().Add(30 * time.Second)
		for countSamples(t, db) <= prev && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		n := checkSamples(t, db)
		if n <= prev {
			t.Fatalf("run %d: %d samples after, %d before: nothing recorded (stderr %q)", i, n, prev, stderr.String())
		}
		prev = n
	}
}

// countSamples counts samples with a plain read-only connection (the
// recorder may be writing).
func countSamples(t *testing.T, db string) int {
	if _, err := os.Stat(db); err != nil {
		return 0
	}
	raw, err := sql.Open("sqlite", db+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM samples`).Scan(&n); err != nil {
		return 0 // not created yet
	}
	return n
}

// TestRecordPostgresOutage records into a real PostgreSQL server, stops
// the server in the middle, and starts it again: every sample arrives,
// the recorder neither stops nor fails.
func TestRecordPostgresOutage(t *testing.T) {
	srv := startPostgres(t)
	url := srv.CreateDB(t)
	spool := filepath.Join(t.TempDir(), "spool")
	const count = 30
	cmd := memwhoCmd(t, "record", "--interval", "100ms", "--count", strconv.Itoa(count), "--db", url, "--spool", spool, "--host", "outage")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	ctx := context.Background()
	d, err := store.Open(ctx, url, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	stored := func() int {
		n := 0
		d.Samples(ctx, store.Query{NoRows: true}, func(*store.Sample) error { n++; return nil })
		return n
	}
	deadline := time.Now().Add(60 * time.Second)
	for stored() < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	srv.Stop()
	// Let several samples go to the spool.
	for spooled(spool) < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if spooled(spool) < 3 {
		t.Fatalf("nothing spooled while the server was down (stderr %q)", stderr.String())
	}
	srv.Start()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("recorder failed: %v\n%s", err, stderr.String())
		}
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("recorder did not finish\n%s", stderr.String())
	}
	d.Close()
	d, err = store.Open(ctx, url, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := stored(); got != count {
		t.Errorf("%d samples in PostgreSQL after the outage, want %d (stderr %q)", got, count, stderr.String())
	}
	if n := spooled(spool); n != 0 {
		t.Errorf("%d samples left in the spool", n)
	}
	if !strings.Contains(stderr.String(), "memwho: warning: PostgreSQL unreachable") {
		t.Errorf("stderr %q does not warn about the outage", stderr.String())
	}
}

func spooled(dir string) int {
	m, _ := filepath.Glob(filepath.Join(dir, "*.sample.json"))
	return len(m)
}

// TestRecordSpoolTarget: a sample spooled for one database while the
// server was down is not flushed into another database the same spool
// directory is later used with, but into its own.
func TestRecordSpoolTarget(t *testing.T) {
	srv := startPostgres(t)
	fleetA, other := srv.CreateDB(t), srv.CreateDB(t)
	spool := filepath.Join(t.TempDir(), "spool")
	record := func(db string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"record", "--once", "--db", db, "--spool", spool, "--host", "h"}, &stdout, &stderr); code != cli.ExitOK {
			t.Fatalf("record --db %s: exit %d: %s", db, code, stderr.String())
		}
		return stderr.String()
	}
	ctx := context.Background()
	stored := func(db string) int {
		t.Helper()
		d, err := store.Open(ctx, db, store.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		n := 0
		d.Samples(ctx, store.Query{NoRows: true}, func(*store.Sample) error { n++; return nil })
		return n
	}
	srv.Stop()
	record(fleetA)
	if n := spooled(spool); n != 1 {
		t.Fatalf("%d samples spooled with the server down, want 1", n)
	}
	srv.Start()
	warn := record(other)
	if n := stored(other); n != 1 {
		t.Errorf("the other database holds %d samples, want its own 1: fleetA's spool was flushed into it", n)
	}
	if n := spooled(spool); n != 1 {
		t.Errorf("%d samples spooled after recording into another database, want fleetA's 1 left", n)
	}
	if name := strings.TrimPrefix(fleetA[strings.LastIndex(fleetA, "/"):], "/"); !strings.Contains(warn, "wait for") || !strings.Contains(warn, "/"+strings.TrimSuffix(name, "?sslmode=disable")) {
		t.Errorf("stderr %q does not say which database the spooled sample waits for", warn)
	}
	record(fleetA)
	if n := stored(fleetA); n != 2 {
		t.Errorf("fleetA holds %d samples after its recorder ran again, want 2", n)
	}
	if n := spooled(spool); n != 0 {
		t.Errorf("%d samples left in the spool", n)
	}
}

// TestRecordMaxSizeKeepsNewest: a --max-size below one sample's size
// keeps the newest sample, and says once that the bound is not met.
func TestRecordMaxSizeKeepsNewest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		wantWarn int
	}{
		{name: "once, bare bytes", args: []string{"--max-size", "10", "--once"}, wantWarn: 1},
		{name: "three samples", args: []string{"--max-size", "10B", "--count", "3", "--interval", "10ms"}, wantWarn: 1},
		{name: "bound met", args: []string{"--max-size", "1GiB", "--count", "2", "--interval", "10ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "ms.db")
			var stdout, stderr bytes.Buffer
			args := append([]string{"record", "--db", db, "-p", strconv.Itoa(os.Getpid())}, tc.args...)
			if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if n := countSamples(t, db); n < 1 {
				t.Errorf("%d samples left: retention deleted the newest", n)
			}
			if n := strings.Count(stderr.String(), "over --max-size"); n != tc.wantWarn {
				t.Errorf("stderr %q warns %d times about the bound, want %d", stderr.String(), n, tc.wantWarn)
			}
		})
	}
}

// TestRecordOutageWarnings: while the server is down, record warns once
// that it is unreachable (not a retention warning per sample), and -v
// says that samples were spooled, not stored.
func TestRecordOutageWarnings(t *testing.T) {
	srv := startPostgres(t)
	url := srv.CreateDB(t)
	srv.Stop()
	spool := filepath.Join(t.TempDir(), "spool")
	var stdout, stderr bytes.Buffer
	args := []string{"record", "--db", url, "--spool", spool, "--count", "4", "--interval", "20ms", "--keep", "30d", "-v", "-p", strconv.Itoa(os.Getpid())}
	if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stderr.String()
	for _, tc := range []struct {
		what string
		n    int
	}{
		{"memwho: warning: PostgreSQL unreachable", 1},
		{"retention", 0},
		{": spooled, not stored yet: ", 4},
		{"memwho: warning:", 1},
	} {
		if n := strings.Count(out, tc.what); n != tc.n {
			t.Errorf("stderr says %q %d times, want %d:\n%s", tc.what, n, tc.n, out)
		}
	}
}

// TestRecordMissingDirectory: a --db in a directory that does not exist
// is one error line naming the directory, exit 1, nothing created.
func TestRecordMissingDirectory(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct{ db, dir string }{
		{"nonexistent/dir/h.db", "nonexistent/dir"},
		{"file:nonexistent/h.db", "nonexistent"},
	} {
		t.Run(tc.db, func(t *testing.T) {
			db := filepath.Join(root, strings.TrimPrefix(tc.db, "file:"))
			if strings.HasPrefix(tc.db, "file:") {
				db = "file:" + db
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"record", "--once", "--db", db, "-p", strconv.Itoa(os.Getpid())}, &stdout, &stderr)
			want := "memwho: error: open history: directory " + filepath.Join(root, tc.dir) + " does not exist"
			if code != cli.ExitFailure || !strings.HasPrefix(stderr.String(), want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 1 and one line %q…", code, stderr.String(), want)
			}
			if ents, _ := os.ReadDir(root); len(ents) != 0 {
				t.Errorf("record created %s", ents[0].Name())
			}
		})
	}
}

// TestRecordPIDsGone: -p naming no running process warns once (samples
// of 0 processes were stored silently); processes that exist do not.
func TestRecordPIDsGone(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pids     string
		wantWarn int
	}{
		{name: "no such process", pids: "999999999", wantWarn: 1},
		{name: "one gone, one here", pids: "999999999," + strconv.Itoa(os.Getpid())},
		{name: "here", pids: strconv.Itoa(os.Getpid())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "h.db")
			var stdout, stderr bytes.Buffer
			args := []string{"record", "--db", db, "--count", "3", "--interval", "10ms", "-p", tc.pids}
			if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if n := strings.Count(stderr.String(), "memwho: warning: none of the processes -p names (999999999) is running"); n != tc.wantWarn {
				t.Errorf("stderr %q: %d warnings, want %d", stderr.String(), n, tc.wantWarn)
			}
		})
	}
}

// startPostgres starts a PostgreSQL server for a record test, or skips
// it under -short and in a build without PostgreSQL.
func startPostgres(t *testing.T) *pgtest.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	if !slices.Contains(store.Schemes(), "postgres") {
		t.Skip("built with -tags nopostgres")
	}
	return pgtest.Start(t)
}
