package agent

import (
	"bytes"
	"context"
	"github.com/memwho/memwho/internal/proc/fstest"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc/proctest"
)

func scrape(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s", url, resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	return string(b)
}

// TestConcurrentScrapesShareWalk: many scrapes at once start one walk,
// and scrapes within MinInterval start none.
func TestConcurrentScrapesShareWalk(t *testing.T) {
	root := proctest.Root(t, "testdata/sockets.txtar")
	a, err := New(Options{Engine: engine.Options{FS: fstest.Open(t, root)}, MinInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if body := scrape(t, srv.URL+"/metrics"); !strings.Contains(body, `memwho_group_pss_bytes{group="helper"}`) {
				t.Error("a scrape got no group series")
			}
		}()
	}
	wg.Wait()
	for range 10 {
		scrape(t, srv.URL+"/metrics")
	}
	if w := a.Walks(); w != 1 {
		t.Errorf("walks = %d, want 1", w)
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(`href="metrics"`)) {
		t.Errorf("landing page: %q", body)
	}
}

// TestMinInterval: scrapes in a tight loop walk at most once per
// MinInterval.
func TestMinInterval(t *testing.T) {
	root := proctest.Root(t, "testdata/sockets.txtar")
	const interval = 100 * time.Millisecond
	a, err := New(Options{Engine: engine.Options{FS: fstest.Open(t, root)}, MinInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	start := time.Now()
	n := 0
	for time.Since(start) < 10*interval {
		scrape(t, srv.URL+"/metrics")
		n++
	}
	elapsed := time.Since(start)
	max := uint64(elapsed/interval) + 1
	if w := a.Walks(); w > max || w < 2 {
		t.Errorf("%d scrapes in %v: %d walks, want 2..%d", n, elapsed, w, max)
	}
}

// TestScrapeTimeout: a walk that hangs (a smaps_rollup that is a FIFO
// nobody writes) does not hold a scrape past the timeout: it gets the
// previous snapshot, and the timeout is counted.
func TestScrapeTimeout(t *testing.T) {
	root := proctest.Root(t, "testdata/sockets.txtar")
	a, err := New(Options{Engine: engine.Options{FS: fstest.Open(t, root)}, MinInterval: time.Millisecond, ScrapeTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	first := scrape(t, srv.URL+"/metrics")
	if !strings.Contains(first, "memwho_processes 4\n") {
		t.Fatalf("first scrape:\n%s", first)
	}

	// A new process appears, and the next walk hangs until released.
	if err := os.CopyFS(filepath.Join(root, "7000"), os.DirFS(filepath.Join(root, "6571"))); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	a.beforeWalk = func() { <-release }
	time.Sleep(5 * time.Millisecond)
	start := time.Now()
	second := scrape(t, srv.URL+"/metrics")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("scrape took %v with a 200ms timeout", d)
	}
	if !strings.Contains(second, "memwho_processes 4\n") || !strings.Contains(second, "memwho_scrape_timeouts_total 1\n") {
		t.Errorf("second scrape should serve the previous snapshot and count a timeout:\n%s", grep(second, "memwho_processes ", "timeouts"))
	}
	// Concurrent scrapes meanwhile wait for the same hung walk.
	scrape(t, srv.URL+"/metrics")
	if w := a.Walks(); w != 1 {
		t.Errorf("walks completed = %d, want 1 while the second hangs", w)
	}

	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for a.Walks() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if third := string(a.WriteMetrics(nil)); !strings.Contains(third, "memwho_processes 5\n") {
		t.Errorf("after the walk finished:\n%s", grep(third, "memwho_processes "))
	}
}

func grep(s string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestPrometheusTimeoutHeader: the timeout Prometheus announces bounds the
// wait too.
func TestPrometheusTimeoutHeader(t *testing.T) {
	root := proctest.Root(t, "testdata/sockets.txtar")
	a, err := New(Options{Engine: engine.Options{FS: fstest.Open(t, root)}, MinInterval: time.Millisecond, ScrapeTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Refresh(context.Background(), time.Minute)
	// The next walk hangs until released.
	release := make(chan struct{})
	a.beforeWalk = func() { <-release }

	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "0.75")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("scrape took %v with a 0.75 s announced timeout", d)
	}
	// Release the walk so Close can finish.
	close(release)
}

// BenchmarkScrape measures one scrape of a snapshot already taken (no
// walk): what 200 scrapes a second cost the agent.
// BenchmarkScrape serves scrapes of this host's snapshot, as every scrape
// is served under Run. MEMWHO_BENCH_TOP sets TopProcesses (20): about
// 6 series per process, so 830 makes about 5,000 series on a host with
// that many processes (scripts/bench-agent.sh).
func BenchmarkScrape(b *testing.B) {
	top := 20
	if v, err := strconv.Atoi(os.Getenv("MEMWHO_BENCH_TOP")); err == nil && v > 0 {
		top = v
	}
	a, err := New(Options{Engine: engine.Options{FS: fstest.Open(b, "/proc"), Conns: true}, MinInterval: time.Hour, TopProcesses: top})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	a.Refresh(context.Background(), time.Minute)
	w := &discardWriter{h: http.Header{}}
	req := httptest.NewRequest("GET", "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		a.ServeHTTP(w, req)
	}
	b.ReportMetric(float64(w.n)/float64(b.N), "bytes/scrape")
	series := 0
	for _, l := range strings.Split(string(a.WriteMetrics(nil)), "\n") {
		if l != "" && l[0] != '#' {
			series++
		}
	}
	b.ReportMetric(float64(series), "series")
}

type discardWriter struct {
	h http.Header
	n int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}
