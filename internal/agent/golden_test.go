package agent

import (
	"bytes"
	"context"
	"flag"
	"github.com/memwho/memwho/internal/proc/fstest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// newAgent starts an agent on root and waits for its first walk.
func newAgent(t *testing.T, opt Options) *Agent {
	t.Helper()
	if opt.Version == "" {
		opt.Version = "test"
	}
	a, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if !a.Refresh(context.Background(), time.Minute) {
		t.Fatal("first walk failed")
	}
	return a
}

// stable drops the families whose values depend on the clock or on the
// process running the test: timestamps, ages and durations (every
// family in seconds), and the agent's own process_* and go_* figures.
func stable(b []byte) []byte {
	var out []byte
	drop := false
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if f, ok := bytes.CutPrefix(line, []byte("# HELP ")); ok {
			name, _, _ := bytes.Cut(f, []byte(" "))
			n := string(name)
			drop = strings.HasSuffix(n, "_seconds") || strings.HasSuffix(n, "_seconds_total") ||
				strings.HasPrefix(n, "process_") || strings.HasPrefix(n, "go_")
		}
		if !drop {
			out = append(out, line...)
		}
	}
	return out
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name, fixture string
		opt           Options
	}{
		{"sockets", "testdata/sockets.txtar", Options{TopProcesses: 2, Engine: engine.Options{Conns: true}}},
		{"sockets_by_user", "testdata/sockets.txtar", Options{By: sample.ByUser, TopProcesses: 1}},
		{"names", "../proc/testdata/names.txtar", Options{TopProcesses: 3}},
		{"cgroup", "../proc/testdata/cgroup-v2.txtar", Options{By: sample.ByCgroup}},
		// The fixture's tree is not named proc: no runtime state is
		// read, containers keep their short ids.
		{"container", "../proc/testdata/containers.txtar", Options{By: sample.ByContainer}},
		{"unit", "../proc/testdata/containers.txtar", Options{By: sample.ByUnit}},
		{"kernel_zombie", "../proc/testdata/zombie.txtar", Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := tc.opt
			opt.Engine.FS = fstest.Open(t, proctest.Root(t, tc.fixture))
			a := newAgent(t, opt)
			got := stable(a.WriteMetrics(nil))
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("metrics differ from %s (run with -update to accept):\n%s", golden, lineDiff(want, got))
			}
		})
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got []byte) string {
	w := strings.Split(string(want), "\n")
	g := strings.Split(string(got), "\n")
	in := func(s []string) map[string]bool {
		m := map[string]bool{}
		for _, l := range s {
			m[l] = true
		}
		return m
	}
	wm, gm := in(w), in(g)
	var b strings.Builder
	for _, l := range w {
		if !gm[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range g {
		if !wm[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

// TestParse reads the whole output (timing lines included) back with
// Prometheus' own parser: every family must parse, with the type and the
// label values written.
func TestParse(t *testing.T) {
	for _, fx := range []string{"testdata/sockets.txtar", "../proc/testdata/names.txtar", "../proc/testdata/truncated.txtar"} {
		t.Run(filepath.Base(fx), func(t *testing.T) {
			root := proctest.Root(t, fx)
			a := newAgent(t, Options{Engine: engine.Options{FS: fstest.Open(t, root), Conns: true}, TopProcesses: 5})
			out := a.WriteMetrics(nil)
			// Legacy validation: the names must be valid for every
			// Prometheus version, not only UTF-8-aware ones.
			p := expfmt.NewTextParser(model.LegacyValidation)
			fams, err := p.TextToMetricFamilies(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, out)
			}
			names := []string{"memwho_group_pss_bytes", "memwho_process_pss_bytes",
				"memwho_host_memory_total_bytes", "memwho_walk_duration_seconds", "memwho_scrape_timeouts_total", "process_cpu_seconds_total"}
			if strings.Contains(fx, "sockets") {
				// The other trees have no net/tcp: no TCP families.
				names = append(names, "memwho_group_tcp_established", "memwho_process_tcp_established")
			}
			for _, name := range names {
				if fams[name] == nil {
					t.Errorf("family %s missing", name)
				}
			}
			if f := fams["memwho_walk_duration_seconds"]; f != nil && f.GetType().String() != "SUMMARY" {
				t.Errorf("memwho_walk_duration_seconds is a %v", f.GetType())
			}
			// Group label values are the sanitised group keys, exactly.
			var snap sample.Snapshot
			e, _ := engine.New(engine.Options{FS: fstest.Open(t, root)})
			e.Scan(&snap)
			e.Close()
			want := map[string]bool{}
			for _, g := range sample.GroupProcs(snap.Procs, sample.ByProgram, nil) {
				want[string(report.Sanitize(nil, g.Key))] = true
			}
			got := map[string]bool{}
			for _, m := range fams["memwho_group_pss_bytes"].GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "group" {
						got[l.GetValue()] = true
					}
				}
			}
			if len(got) != len(want) {
				t.Errorf("groups %v, want %v", got, want)
			}
			for k := range want {
				if !got[k] {
					t.Errorf("group %q missing from %v", k, got)
				}
			}
		})
	}
}

func TestAppendEscaped(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`plain`, `plain`},
		{`a"b`, `a\"b`},
		{`a\b`, `a\\b`},
		{"a\nb", `a\nb`},
	} {
		if got := string(appendEscaped(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("appendEscaped(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRenderAllocs: rendering a scrape's own part allocates nothing once
// its buffer has grown.
func TestRenderAllocs(t *testing.T) {
	root := proctest.Root(t, "testdata/sockets.txtar")
	a := newAgent(t, Options{Engine: engine.Options{FS: fstest.Open(t, root)}})
	buf := make([]byte, 0, 64<<10)
	a.WriteMetrics(buf)
	n := testing.AllocsPerRun(100, func() { buf = a.WriteMetrics(buf[:0]) })
	if n != 0 {
		t.Errorf("WriteMetrics allocates %.1f times per call, want 0", n)
	}
}
