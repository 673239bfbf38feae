package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/export"
	"github.com/memwho/memwho/internal/leaks"
	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/pgtest"
)

// TestFleetPostgres is the scaled-down fleet run of CI: 50 simulated
// recorders, each with its own connections as memwho record has, write
// an hour of history into a real PostgreSQL, time-compressed; then
// the fleet's leak ranking finds the leaks the simulation planted, at
// their rate, and the hour's export is the same bytes twice. (The
// full-scale runs, 1,000 hosts, are scripts/fleet-*.sh: docs/fleet.md.)
func TestFleetPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("a fleet run")
	}
	srv := pgtest.Start(t)
	url := srv.CreateDB(t)
	ctx := context.Background()
	args := []string{"record", "--db", url, "--hosts", "50", "--duration", "1h", "--start", "2026-12-01T00:00:00Z",
		"--leaks", "0.1", "--seed", "3", "--keep", "720h", "--quiet"}
	var out, errs bytes.Buffer
	if err := run(ctx, args, &out, &errs); err != nil {
		t.Fatalf("fleetsim %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errs.String())
	}
	t.Logf("%s%s", out.String(), errs.String())
	if !strings.Contains(out.String(), "3000 samples") {
		t.Errorf("fleetsim took other than 50 x 60 samples:\n%s", out.String())
	}

	st, err := store.Open(ctx, url, store.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	until := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
	rep := &leaks.Report{Since: until.Add(-time.Hour), Until: until, Window: time.Hour,
		Kinds: []store.Kind{store.KindProcess}, MinGrowth: 1 << 20, JSON: true}
	f := &Fleet{Hosts: 50, Procs: 300, Seed: 3, LeakShare: 0.1, Start: until.Add(-time.Hour)}
	planted := f.Leaks()
	if len(planted) == 0 {
		t.Fatal("no leak planted")
	}
	// Every planted leak is ranked, at its rate within 10% (busy
	// processes' figures move by 1% of their size at each sample), and
	// the fastest first of all processes. The rate is the growth leaks
	// ranks and shows (Fit.Growth: the smaller of the window's slope and
	// its latest half's), which a steady leak keeps through both. An
	// hour, not half of one: the slowest leak, 43.6 MiB/h in a 354 MiB
	// app-server whose figures move by 1% (3.5 MiB) at each sample,
	// grows 11 MiB over a half hour's latest quarter hour, and its
	// slope from those 15 points came out at 26.5 MiB/h.
	c := leaks.NewCollector()
	if err := st.Samples(ctx, store.Query{Since: rep.Since, Until: rep.Until, Growth: true}, func(s *store.Sample) error {
		c.Add(s)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	type proc struct {
		host string
		pid  int
	}
	ranked := map[proc]float64{}
	var first leaks.Leak
	for _, l := range c.Rank(leaks.Options{MinSlope: 1 << 20}) {
		if l.Kind == store.KindProcess {
			if first.Host == "" {
				first = l
			}
			ranked[proc{l.Host, l.PID}] = l.Growth
		}
	}
	for _, p := range planted {
		got, ok := ranked[proc{p.Host, p.PID}]
		if !ok {
			t.Errorf("the leak of %s (%s, pid %d, %.0f MiB/h) is not ranked", p.Host, p.Program, p.PID, p.Rate/mib)
			continue
		}
		if math.Abs(got-p.Rate) > 0.1*p.Rate {
			t.Errorf("%s: ranked at %.1f MiB/h, planted %.1f MiB/h", p.Host, got/mib, p.Rate/mib)
		}
	}
	if first.Host != planted[0].Host || first.PID != planted[0].PID {
		t.Errorf("the fastest process is %s pid %d, want the fastest leak, %s pid %d", first.Host, first.PID, planted[0].Host, planted[0].PID)
	}
	var listing bytes.Buffer
	if err := rep.Write(ctx, st, &listing); err != nil {
		t.Fatal(err)
	}

	// The hour's export, twice: the same bytes.
	sum := func() string {
		h := md5.New()
		q := store.Query{Since: until.Add(-time.Hour), Until: until}
		if _, err := export.Run(ctx, h, export.Options{Gzip: true}, export.History(st, q, store.TableUsage)); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%x", h.Sum(nil))
	}
	if a, b := sum(), sum(); a != b {
		t.Errorf("two exports of the same hour differ: md5 %s, %s", a, b)
	}
	samples, rows, err := st.(store.Counter).Count(ctx, store.Query{})
	if err != nil || samples != 3000 || rows < 3000*200 {
		t.Errorf("the history holds %d samples, %d rows (%v); want 3000 and about 350 rows each", samples, rows, err)
	}
}

// TestFleetRealtime runs memwho record's own loop (record.Run) for a few
// hosts at a one-second interval.
func TestFleetRealtime(t *testing.T) {
	if testing.Short() {
		t.Skip("a fleet run")
	}
	srv := pgtest.Start(t)
	url := srv.CreateDB(t)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"record", "--db", url, "--hosts", "5", "--interval", "1s", "--duration", "3s", "--realtime", "--quiet"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "15 samples") {
		t.Errorf("want 15 samples:\n%s", out.String())
	}
}
