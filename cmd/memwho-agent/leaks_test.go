package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/storetest"
)

// growEnv makes this test binary a child that grows: "RATE,PERIOD,MAX"
// touches RATE bytes of private anonymous memory per second, up to MAX
// bytes; with PERIOD > 0 (milliseconds) it gives everything back every
// PERIOD (a sawtooth). RATE 0 touches MAX at once and holds it.
const growEnv = "MEMWHO_TEST_GROW"

func init() {
	if spec, ok := os.LookupEnv(growEnv); ok {
		os.Exit(grow(spec))
	}
}

func grow(spec string) int {
	var rate, period, limit int64
	if _, err := fmt.Sscanf(spec, "%d,%d,%d", &rate, &period, &limit); err != nil {
		fmt.Fprintln(os.Stderr, "grow:", err)
		return 2
	}
	// No transparent huge pages: khugepaged would make the footprint
	// jump by 2 MiB at its own pace.
	unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0)
	mem, err := unix.Mmap(-1, 0, int(limit), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		fmt.Fprintln(os.Stderr, "grow:", err)
		return 1
	}
	page := int64(os.Getpagesize())
	touched := int64(0)
	touch := func(upto int64) {
		for ; touched < min(upto, limit); touched += page {
			mem[touched] = 1
		}
	}
	if rate == 0 {
		touch(limit)
	}
	os.Stdout.WriteString("ready\n")
	start := time.Now()
	cycle := start
	for {
		now := time.Now()
		if period > 0 && now.Sub(cycle) >= time.Duration(period)*time.Millisecond {
			unix.Madvise(mem, unix.MADV_DONTNEED)
			touched, cycle = 0, now
		}
		if rate > 0 {
			base := start
			if period > 0 {
				base = cycle
			}
			touch(int64(now.Sub(base).Seconds() * float64(rate)))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// startGrower starts a grow child and waits until it is ready.
func startGrower(t *testing.T, rate, periodMS, limit int64) int {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d,%d,%d", growEnv, rate, periodMS, limit))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("grow child: %q, %v", line, err)
	}
	return cmd.Process.Pid
}

type leaksOutput struct {
	Schema  string
	Samples int
	Leaks   []struct {
		Kind               string
		Key                string
		PID                int
		SlopeBytesPerHour  float64 `json:"slope_bytes_per_hour"`
		GrowthBytesPerHour float64 `json:"growth_bytes_per_hour"`
		RecentBytesPerHour float64 `json:"recent_slope_bytes_per_hour"`
		Steady             float64
		R2                 float64
		Points             int
	}
}

func runJSON(t *testing.T, args ...string) leaksOutput {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("memwho %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
	}
	var out leaksOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("memwho %s: bad JSON: %v\n%s", strings.Join(args, " "), err, stdout.String())
	}
	return out
}

// TestLeaksSyntheticLeaker records three real children for 30 samples
// 100 ms apart: one that grows 4 MiB every 100 ms (40 MiB/s, 144,000
// MiB/h), one that holds 32 MiB, and one that grows just as fast but
// gives it all back every 500 ms. The leaker must rank first with its
// known slope ±10%; the other two must not rank above it.
func TestLeaksSyntheticLeaker(t *testing.T) {
	if testing.Short() {
		t.Skip("records real children for a few seconds")
	}
	const rate = 40 << 20 // bytes per second
	leaker := startGrower(t, rate, 0, 512<<20)
	flat := startGrower(t, 0, 0, 32<<20)
	saw := startGrower(t, rate, 500, 512<<20)
	db := filepath.Join(t.TempDir(), "h.db")
	pids := fmt.Sprintf("%d,%d,%d", leaker, flat, saw)
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"record", "--interval", "100ms", "--count", "30", "-p", pids, "--db", db, "--host", "lab"}, &bytes.Buffer{}, &stderr); code != cli.ExitOK {
		t.Fatalf("record: exit %d: %s", code, stderr.String())
	}

	out := runJSON(t, "leaks", "--db", db, "--host", "lab", "--kind", "process", "--json", "--min-growth", "0")
	if out.Schema != "memwho.leaks/v1" || out.Samples != 30 {
		t.Errorf("schema %q, %d samples; want memwho.leaks/v1, 30", out.Schema, out.Samples)
	}
	if len(out.Leaks) == 0 {
		t.Fatal("no leaks ranked")
	}
	for i, l := range out.Leaks {
		t.Logf("%d. %s %d: %.0f MiB/h, steady %.2f, R² %.3f, %d points", i+1, l.Key, l.PID, l.SlopeBytesPerHour/(1<<20), l.Steady, l.R2, l.Points)
	}
	top := out.Leaks[0]
	want := float64(rate) * 3600
	if top.PID != leaker {
		t.Fatalf("first ranked pid %d, want the leaker %d (flat %d, sawtooth %d)", top.PID, leaker, flat, saw)
	}
	if math.Abs(top.SlopeBytesPerHour-want) > 0.1*want {
		t.Errorf("leaker slope = %.0f MiB/h, want %.0f ±10%%", top.SlopeBytesPerHour/(1<<20), want/(1<<20))
	}
	if top.Steady < 0.9 || top.Points != 30 {
		t.Errorf("leaker steadiness %.2f over %d points, want ≥ 0.9 over 30", top.Steady, top.Points)
	}

	// The table names it too, with its pid.
	var stdout bytes.Buffer
	stderr.Reset()
	if code := run(context.Background(), []string{"leaks", "--db", db, "--host", "lab", "--top", "3"}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("leaks: exit %d: %s", code, stderr.String())
	}
	if os.Getenv("MEMWHO_DUMP") != "" {
		var csv bytes.Buffer
		run(context.Background(), []string{"export", "--db", db}, &csv, &stderr)
		for _, line := range strings.Split(csv.String(), "\n") {
			if strings.Contains(line, ","+strconv.Itoa(leaker)+",") {
				t.Log(line)
			}
		}
	}
	if !regexp.MustCompile(`(?m)^Processes.*\n.*\n.*  ` + strconv.Itoa(leaker) + `  memwho`).MatchString(stdout.String()) {
		t.Errorf("table does not list the leaker:\n%s", stdout.String())
	}
}

// leaksDB writes a synthetic history ending at until: a steady leaker
// (2 MiB/min under a cgroup limit), a flat process and their programs.
func leaksDB(t *testing.T, until time.Time) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "h.db")
	st, err := store.Open(context.Background(), db, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 120
	for i := range n {
		s := store.Sample{
			Time: until.Add(-time.Duration(n-i) * time.Minute), Host: "web1", BootID: "b",
			Meminfo: sample.Meminfo{MemTotal: 16 << 30, MemAvailable: 3 << 30, SwapFree: 1 << 30},
		}
		s.Rows = []store.Row{
			{Kind: store.KindProcess, Key: "api\x1b[31m", PID: 4242, StartTime: 77, Count: 1, PSS: uint64(300<<20 + i*2<<20), MemLimit: 1 << 30, MemLimitFree: 256 << 20},
			{Kind: store.KindProcess, Key: "db", PID: 100, StartTime: 5, Count: 1, PSS: 2 << 30},
			{Kind: store.KindProgram, Key: "api\x1b[31m", Count: 4, PSS: uint64(900<<20 + i*2<<20 + (i%3)<<20)},
			{Kind: store.KindProgram, Key: "db", Count: 1, PSS: 2 << 30},
		}
		store.SortRows(s.Rows)
		if err := st.Write(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestLeaksGolden checks the table and JSON of a synthetic history
// against golden files (go test -run TestLeaksGolden -update rewrites
// them): a leaking process under a cgroup limit with a hostile name, and
// its program group.
func TestLeaksGolden(t *testing.T) {
	until := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	db := leaksDB(t, until)
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"leaks_table.golden", nil},
		{"leaks_json.golden", []string{"--json"}},
		{"leaks_processes.golden", []string{"--kind", "process", "--window", "30m"}},
		{"leaks_none.golden", []string{"--min-growth", "1GiB"}},
	} {
		t.Run(c.golden, func(t *testing.T) {
			args := append([]string{"leaks", "--db", db, "--host", "web1", "--until", until.Format(time.RFC3339)}, c.args...)
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			path := filepath.Join("testdata", c.golden)
			if *update {
				if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(stdout.Bytes(), want) {
				t.Errorf("memwho %s:\ngot:\n%s\nwant (%s):\n%s", strings.Join(args, " "), stdout.Bytes(), path, want)
			}
		})
	}
}

func TestLeaksErrors(t *testing.T) {
	until := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	db := leaksDB(t, until)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--host", "web2", "--until", "2026-03-01T12:00:00Z"}, cli.ExitFailure, `no samples of host web2 between 2026-03-01T06:00:00Z and 2026-03-01T12:00:00Z; the window has samples of "web1" (use --host NAME or --all-hosts)`},
		{[]string{"--all-hosts", "--until", "2025-01-01"}, cli.ExitFailure, "no samples of any host between"},
		{[]string{"--window", "0"}, cli.ExitUsage, "--window: bad duration"},
		{[]string{"--kind", "tree"}, cli.ExitUsage, `--kind: unknown row kind "tree"`},
		{[]string{"--host", "a", "--all-hosts"}, cli.ExitUsage, "exclude each other"},
		{[]string{"--until", "yesterday"}, cli.ExitUsage, "--until:"},
		{[]string{"--top", "-1"}, cli.ExitUsage, "--top: must not be negative"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"leaks", "--db", db}, c.args...), &stdout, &stderr)
			if code != c.code || !strings.Contains(stderr.String(), c.msg) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), c.code, c.msg)
			}
		})
	}
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"leaks", "--db", filepath.Join(t.TempDir(), "none.db")}, &bytes.Buffer{}, &stderr)
	if code != cli.ExitFailure || !strings.Contains(stderr.String(), "run 'memwho record' first") {
		t.Errorf("missing database: exit %d, stderr %q", code, stderr.String())
	}
}

// BenchmarkLeaks ranks 6 hours of one-minute samples of 1,000 processes
// (360 samples, 397,800 rows) from SQLite:
// go test -run - -bench Leaks ./cmd/memwho
func BenchmarkLeaks(b *testing.B) {
	db := filepath.Join(b.TempDir(), "h.db")
	st, err := store.Open(context.Background(), db, store.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	until := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	x := storetest.Big(1000, until)
	for i := range 360 {
		x.Time = until.Add(-time.Duration(360-i) * time.Minute)
		for j := range x.Rows {
			x.Rows[j].PSS += uint64(j%3) << 12 // some grow
		}
		if err := st.Write(context.Background(), &x); err != nil {
			b.Fatal(err)
		}
	}
	st.Close()
	args := []string{"leaks", "--db", db, "--host", "bench", "--until", until.Format(time.RFC3339)}
	b.ResetTimer()
	for b.Loop() {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
			b.Fatalf("exit %d: %s", code, stderr.String())
		}
	}
	b.ReportMetric(float64(360*len(x.Rows))*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
