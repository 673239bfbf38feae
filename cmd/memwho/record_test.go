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

	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/pgtest"
	"github.com/memwho/memwho/internal/store/sqlite"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"512", 512}, {"512B", 512}, {"4KiB", 4 << 10}, {"4k", 4 << 10}, {"64MiB", 64 << 20},
		{"1GiB", 1 << 30}, {"1.5GiB", 3 << 29}, {"2TiB", 2 << 40}, {"10MB", 10 << 20},
	} {
		got, err := parseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "lots", "-1", "1PiB", "1XB", "GiB"} {
		if got, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", bad, got)
		}
	}
}

func TestParseDays(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{{"0", 0}, {"30d", 30 * 24 * time.Hour}, {"12h", 12 * time.Hour}, {"90s", 90 * time.Second}} {
		got, err := parseDays(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseDays(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "3x", "-1h", "d", "1.5d"} {
		if got, err := parseDays(bad); err == nil {
			t.Errorf("parseDays(%q) = %v, want an error", bad, got)
		}
	}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCgroupLimits(t *testing.T) {
	t.Run("v2", func(t *testing.T) {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{
			"cgroup.controllers":          "memory",
			"a/memory.max":                "1000",
			"a/memory.current":            "900",
			"a/b/memory.max":              "500",
			"a/b/memory.current":          "100",
			"a/b/c/memory.max":            "max",
			"a/b/c/memory.current":        "50",
			"free/memory.max":             "max",
			"free/memory.current":         "50",
			"over/memory.max":             "100",
			"over/memory.current":         "150",
			"unreadable/memory.max":       "100",
			"unreadable/memory.current/x": "",
		})
		c := newCgroupLimits(root)
		for path, want := range map[string]store.Limit{
			"/a":          {Limit: 1000, Free: 100},
			"/a/b":        {Limit: 1000, Free: 100}, // the parent has less room left
			"/a/b/c":      {Limit: 1000, Free: 100},
			"/free":       {},
			"/over":       {Limit: 100, Free: 0},
			"/unreadable": {},
			"/missing/x":  {},
			"/":           {},
			"":            {},
			"relative":    {},
		} {
			if got := c.of(path); got != want {
				t.Errorf("limit of %q = %+v, want %+v", path, got, want)
			}
		}
	})
	t.Run("v1", func(t *testing.T) {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{
			"memory/memory.limit_in_bytes":          "9223372036854771712",
			"memory/memory.usage_in_bytes":          "123456789",
			"memory/docker/memory.limit_in_bytes":   "9223372036854771712",
			"memory/docker/memory.usage_in_bytes":   "1000",
			"memory/docker/x/memory.limit_in_bytes": "4096",
			"memory/docker/x/memory.usage_in_bytes": "1024",
		})
		c := newCgroupLimits(root)
		if got, want := c.of("/docker/x"), (store.Limit{Limit: 4096, Free: 3072}); got != want {
			t.Errorf("v1 limit = %+v, want %+v", got, want)
		}
		if got := c.of("/docker"); got != (store.Limit{}) {
			t.Errorf("v1 unlimited = %+v, want none", got)
		}
	})
}

func TestRecordSchemaTooNew(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"record", "--once", "--db", db}, &stdout, &stderr); code != exitOK {
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
	if code != exitFailure || !strings.Contains(stderr.String(), "newer schema") {
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
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	if !slices.Contains(store.Schemes(), "postgres") {
		t.Skip("built with -tags nopostgres")
	}
	srv := pgtest.Start(t)
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
