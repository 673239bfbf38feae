package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/memwho/memwho/internal/cli"
)

// TestLeaksWarmUpRecorded records real children for 30 samples 100 ms
// apart: one that warms up (grows 64 MiB/s for about the first half of
// the recording, then holds what it took) and one that keeps growing at
// 20 MiB/s. The steady grower ranks, at its rate; the warm-up is not
// listed at a tenth of that rate, though over the window its robust
// slope was about as steep (memwho's own recorder, which grew while its
// host went from 360 to 1,000 processes and then stayed flat, was listed
// beside a +1.2 GiB/h leak).
func TestLeaksWarmUpRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("records real children for a few seconds")
	}
	const rate = 20 << 20 // bytes per second
	leaker := startGrower(t, rate, 0, 512<<20)
	warm := startGrower(t, 64<<20, 0, 96<<20)
	db := filepath.Join(t.TempDir(), "h.db")
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"record", "--interval", "100ms", "--count", "30", "-p", fmt.Sprintf("%d,%d", leaker, warm), "--db", db, "--host", "lab"}, &bytes.Buffer{}, &stderr); code != cli.ExitOK {
		t.Fatalf("record: exit %d: %s", code, stderr.String())
	}
	// A tenth of the leaker's rate, in bytes per hour.
	minGrowth := fmt.Sprint(rate * 3600 / 10)
	out := runJSON(t, "leaks", "--db", db, "--host", "lab", "--kind", "process", "--json", "--min-growth", minGrowth)
	for i, l := range out.Leaks {
		t.Logf("%d. pid %d: growth %.0f MiB/h (window %.0f, latest half %.0f)", i+1, l.PID,
			l.GrowthBytesPerHour/(1<<20), l.SlopeBytesPerHour/(1<<20), l.RecentBytesPerHour/(1<<20))
	}
	if len(out.Leaks) != 1 || out.Leaks[0].PID != leaker {
		t.Fatalf("ranked %d processes; want the leaker %d alone, not the warm-up %d", len(out.Leaks), leaker, warm)
	}
	want := float64(rate) * 3600
	if g := out.Leaks[0].GrowthBytesPerHour; g < 0.8*want || g > 1.2*want {
		t.Errorf("leaker growth = %.0f MiB/h, want %.0f ±20%%", g/(1<<20), want/(1<<20))
	}
}
