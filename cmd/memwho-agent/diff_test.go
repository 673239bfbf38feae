package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/store"
)

func init() {
	// An agent serving on this machine must not stand in for the
	// tests' /proc.
	defaultAgentSocket = ""
}

// diffDB writes a history of host with one sample a minute over the two
// hours before end: "api" (hostile name) grows 1 MiB a minute, "db"
// stays, "cron" runs only in the first hour, "new" only in the second;
// user groups for "alice" and "bob".
func diffDB(t *testing.T, host string, end time.Time) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "h.db")
	st, err := store.Open(context.Background(), db, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 120
	for i := range n + 1 {
		s := store.Sample{Time: end.Add(-time.Duration(n-i) * time.Minute), Host: host, BootID: "b",
			Meminfo: sample.Meminfo{MemTotal: 16 << 30}}
		api := uint64(100<<20 + i<<20)
		s.Rows = []store.Row{
			{Kind: store.KindProcess, Key: "api\x1b[31m", PID: 10, StartTime: 1, Count: 1, PSS: api},
			{Kind: store.KindProgram, Key: "api\x1b[31m", Count: 1, PSS: api, Swap: uint64(i) << 10},
			{Kind: store.KindProgram, Key: "db", Count: 2, PSS: 1 << 30, Estimated: 1},
			{Kind: store.KindUser, Key: "alice", Count: 1, PSS: api},
			{Kind: store.KindUser, Key: "bob", Count: 2, PSS: 1 << 30},
		}
		if i < n/2 {
			s.Rows = append(s.Rows, store.Row{Kind: store.KindProgram, Key: "cron", Count: 1, PSS: 5 << 20})
		} else {
			s.Rows = append(s.Rows, store.Row{Kind: store.KindProgram, Key: "new", Count: 3, PSS: 7 << 20})
		}
		s.Procs = 4
		store.SortRows(s.Rows)
		if err := st.Write(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestDiffHistoryGolden compares two recorded times (--to), in table and
// JSON, against golden files (-update rewrites them).
func TestDiffHistoryGolden(t *testing.T) {
	end := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	db := diffDB(t, "web1", end)
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"diff_table.golden", nil},
		{"diff_json.golden", []string{"--json"}},
		{"diff_user.golden", []string{"--by", "user", "--top", "1"}},
	} {
		t.Run(c.golden, func(t *testing.T) {
			// 10:00:20 and 11:59:40: the nearest samples are those of 10:00
			// and 12:00.
			args := append([]string{"diff", "--db", db, "--host", "web1",
				"--since", "2026-03-01T10:00:20Z", "--to", "2026-03-01T11:59:40Z"}, c.args...)
			stdout, stderr, code := memwho(args...)
			if code != cli.ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			path := filepath.Join("testdata", c.golden)
			if *update {
				if err := os.WriteFile(path, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if stdout != string(want) {
				t.Errorf("memwho %s:\ngot:\n%s\nwant (%s):\n%s", strings.Join(args, " "), stdout, path, want)
			}
			if strings.Contains(stdout, "\x1b") {
				t.Errorf("escape sequence in the output:\n%q", stdout)
			}
		})
	}
}

// TestDiffSinceNow compares the sample of an hour ago with a walk of
// /proc now: this test's own program appeared, the recorded ones
// vanished.
func TestDiffSinceNow(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	db := diffDB(t, host, time.Now().Add(-time.Hour))
	stdout, stderr, code := memwho("diff", "--db", db, "--since", "1h", "--fresh", "--json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Before, After struct {
			Source string
			Time   time.Time
		}
		Changes []struct {
			Key, Change string
		}
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if out.Before.Source != "history of "+host || out.After.Source != "/proc" {
		t.Errorf("sources %q, %q", out.Before.Source, out.After.Source)
	}
	if d := time.Since(out.Before.Time); d < 59*time.Minute || d > 62*time.Minute {
		t.Errorf("before is %s old, want the sample of an hour ago", d)
	}
	self := filepath.Base(os.Args[0])
	got := map[string]string{}
	for _, c := range out.Changes {
		got[c.Key] = c.Change
	}
	if got[self] != "appeared" || got["db"] != "vanished" || got["new"] != "vanished" {
		t.Errorf("changes %v; want %s appeared, db and new vanished", got, self)
	}
	if _, ok := got["cron"]; ok {
		t.Errorf("cron, gone an hour before the sample, is listed: %v", got)
	}
}

func TestDiffErrors(t *testing.T) {
	end := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	db := diffDB(t, "web1", end)
	hist := []string{"--db", db, "--host", "web1"}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--since", "1h", "a.mwsnap", "b.mwsnap"}, cli.ExitUsage, "not with snapshot files"},
		{nil, cli.ExitUsage, "--since DURATION is required"},
		{[]string{"--since", "soon"}, cli.ExitUsage, "--since:"},
		{[]string{"--since", "1h", "--by", "pid"}, cli.ExitUsage, "--by: want program, user"},
		{[]string{"--since", "1h", "--by", "process"}, cli.ExitUsage, "--by: want program, user"},
		{[]string{"--since", "1h", "--to", "2h"}, cli.ExitUsage, "--to must be later than --since"},
		{[]string{"--since", "1h", "--host", "elsewhere.invalid"}, cli.ExitUsage, "compare two times of its history with --to"},
		{append([]string{"--since", "2025-01-01T00:00:00Z", "--to", "2026-03-01T12:00:00Z"}, hist...), cli.ExitFailure, "no sample of host web1 recorded within"},
		{append([]string{"--since", "2026-03-01T11:00:00Z", "--to", "2026-03-01T12:00:00Z", "--by", "cgroup"}, hist...), cli.ExitFailure, "has no cgroup groups: memwho record --groups"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, stderr, code := memwho(append([]string{"diff"}, c.args...)...)
			if code != c.code || !strings.Contains(stderr, c.msg) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.msg)
			}
		})
	}
}
