package agent

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/proc/proctest"
)

// runAgent starts Run on a captured tree; the hooks are set before Run
// starts (they are read by its goroutines).
func runAgent(t *testing.T, opt Options, hooks func(a *Agent)) *Agent {
	t.Helper()
	root := proctest.Root(t, "testdata/sockets.txtar")
	opt.Engine.FS = fstest.Open(t, root)
	opt.Version = "test"
	a, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	if hooks != nil {
		hooks(a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		a.Close()
	})
	return a
}

// TestRunScrapesDoNotWait: under Run a scrape is served from the last
// walk while the next one hangs: no timeout, no wait (a scrape that
// waited would hang the test: the timeout is an hour).
func TestRunScrapesDoNotWait(t *testing.T) {
	var n atomic.Int32
	second := make(chan struct{})
	release := make(chan struct{})
	a := runAgent(t, Options{MinInterval: time.Millisecond, ScrapeTimeout: time.Hour}, func(a *Agent) {
		a.beforeWalk = func() {
			if n.Add(1) == 2 {
				close(second)
				<-release
			}
		}
	})
	defer close(release)
	<-second // the first walk is complete, the second hangs
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	for range 20 {
		body := scrape(t, srv.URL+"/metrics")
		if !strings.Contains(body, "memwho_processes 4\n") || !strings.Contains(body, "memwho_scrape_timeouts_total 0\n") {
			t.Fatalf("scrape during a hung walk:\n%s", grep(body, "memwho_processes ", "timeouts"))
		}
	}
	if w := a.Walks(); w != 1 {
		t.Errorf("walks = %d, want 1 (the second hangs)", w)
	}
}

// TestRunPausesWithoutReaders: with nobody reading, Run pauses; a
// scrape then waits for a walk it starts, and Run pauses again.
func TestRunPausesWithoutReaders(t *testing.T) {
	paused := make(chan struct{}, 16)
	a := runAgent(t, Options{MinInterval: time.Millisecond, ScrapeTimeout: time.Hour, IdleAfter: time.Nanosecond}, func(a *Agent) {
		a.onPause = func() { paused <- struct{}{} }
	})
	<-paused
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	if body := scrape(t, srv.URL+"/metrics"); !strings.Contains(body, "memwho_processes 4\n") {
		t.Fatalf("the first scrape after a pause should wait for a walk:\n%s", grep(body, "memwho_processes "))
	}
	<-paused
	w := a.Walks()
	if w < 1 {
		t.Fatalf("walks = %d", w)
	}
	// A snapshot read wakes it too.
	if _, _, ok := a.Latest(); !ok {
		t.Fatal("no snapshot")
	}
	<-paused
}

// TestLatestImmutable: a snapshot Latest handed out is never written
// again, however many walks follow (run with -race: a reader runs
// concurrently with the walks).
func TestLatestImmutable(t *testing.T) {
	a := newAgent(t, Options{Engine: engine.Options{FS: fstest.Open(t, proctest.Root(t, "testdata/sockets.txtar"))}, MinInterval: time.Nanosecond})
	snap, taken, ok := a.Latest()
	if !ok || len(snap.Procs) == 0 || taken.IsZero() {
		t.Fatalf("Latest: ok %v, %d procs, time %v vs %v", ok, len(snap.Procs), snap.Time, taken)
	}
	want, wantTime := slices.Clone(snap.Procs), snap.Time
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var sum uint64
			for _, p := range snap.Procs {
				sum += p.RAM
			}
			_ = sum
		}
	}()
	for range 6 {
		if !a.Refresh(context.Background(), time.Hour) {
			t.Fatal("walk failed")
		}
	}
	close(stop)
	<-readerDone
	if !snap.Time.Equal(wantTime) || !slices.Equal(snap.Procs, want) {
		t.Errorf("the lent snapshot changed: time %v, was %v", snap.Time, wantTime)
	}
	later, t2, _ := a.Latest()
	if later == snap || t2.Before(taken) || a.Walks() != 7 {
		t.Errorf("Latest after 6 walks: same %v, time %v (first %v), walks %d", later == snap, t2, taken, a.Walks())
	}
}

// TestFresh: Fresh walks when the snapshot is older than asked, and not
// when it is young enough.
func TestFresh(t *testing.T) {
	a := newAgent(t, Options{Engine: engine.Options{FS: fstest.Open(t, proctest.Root(t, "testdata/sockets.txtar"))}, MinInterval: time.Hour})
	a.freshMin = 0
	_, t1, _ := a.Latest()
	if _, t2, ok := a.Fresh(context.Background(), time.Hour, time.Hour); !ok || !t2.Equal(t1) || a.Walks() != 1 {
		t.Errorf("Fresh(an hour): walks %d, time %v vs %v", a.Walks(), t2, t1)
	}
	if _, t2, ok := a.Fresh(context.Background(), time.Nanosecond, time.Hour); !ok || !t2.After(t1) || a.Walks() != 2 {
		t.Errorf("Fresh(1ns): walks %d, time %v vs %v", a.Walks(), t2, t1)
	}
}

// TestFullDetail: every process's UID and cgroup are read whatever the
// grouping, for clients that group the snapshot themselves.
func TestFullDetail(t *testing.T) {
	for _, full := range []bool{false, true} {
		a := newAgent(t, Options{Engine: engine.Options{FS: fstest.Open(t, proctest.Root(t, "testdata/sockets.txtar"))}, FullDetail: full})
		snap, _, _ := a.Latest()
		uids := 0
		for _, p := range snap.Procs {
			if p.UIDKnown {
				uids++
			}
		}
		if eo := a.eng.Options(); eo.NeedUID != full || eo.NeedCgroup != full || (uids == len(snap.Procs)) != full {
			t.Errorf("FullDetail %v: NeedUID %v NeedCgroup %v, %d of %d with a UID", full, eo.NeedUID, eo.NeedCgroup, uids, len(snap.Procs))
		}
	}
}

// TestSysRootZram: with SysRoot, every walk puts the zram devices' RAM
// into the snapshot's meminfo, so that snapshots carry the ledger's zram
// line; a device added between walks is counted at the next.
func TestSysRootZram(t *testing.T) {
	sys := t.TempDir()
	a := newAgent(t, Options{Engine: engine.Options{FS: fstest.Open(t, proctest.Root(t, "testdata/sockets.txtar"))}, SysRoot: sys})
	if snap, _, _ := a.Latest(); !snap.MeminfoOK || snap.Meminfo.Zram != 0 {
		t.Fatalf("no zram device: MeminfoOK %v, Zram %d", snap.MeminfoOK, snap.Meminfo.Zram)
	}
	dev := filepath.Join(sys, "block", "zram0")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dev, "mm_stat"), []byte("8192000 2048000 2101248 0 2101248 0 0 0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.freshMin = 0
	if snap, _, ok := a.Fresh(context.Background(), time.Nanosecond, time.Minute); !ok || snap.Meminfo.Zram != 2101248 {
		t.Errorf("Zram %d, want 2101248", snap.Meminfo.Zram)
	}
}
