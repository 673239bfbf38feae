package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/memwho/memwho/internal/proc/fstest"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc/proctest"
)

// serve runs a's handler on a loopback port until the test ends.
func serve(t testing.TB, a *Agent) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// startNamed runs /bin/sleep under another name, so that it forms a
// group of its own.
func startNamed(t *testing.T, name string) *exec.Cmd {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestPrometheus has a real Prometheus server (Debian's prometheus
// package) scrape the agent every second and answers a query for the
// group of a process the test started.
func TestPrometheus(t *testing.T) {
	const bin = "/usr/bin/prometheus"
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s not installed (scripts/test.sh installs the prometheus package)", bin)
	}
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	// A name of this run's own: another test run on the host (two CI
	// runs at once) starts its own process, which the agent sees too.
	group := fmt.Sprintf("mwprom%d", os.Getpid()%100000000)
	startNamed(t, group)

	a, err := New(Options{Engine: engine.Options{FS: fstest.Open(t, "/proc"), Conns: true}, MinInterval: 500 * time.Millisecond, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	target := serve(t, a)

	// The same agent behind the access control of a web configuration:
	// basic auth over TLS (a self-signed certificate made here), and
	// basic auth over plain HTTP. A job with a wrong password must get
	// nothing.
	dir := t.TempDir()
	cert := newTestCert(t, dir, "server")
	tlsWeb, err := LoadWebConfig(writeConfig(t, t.TempDir(), fmt.Sprintf(
		"tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  prometheus: %s\n",
		cert.certFile, cert.keyFile, hashOf(t, "s3cret"))), nil)
	if err != nil {
		t.Fatal(err)
	}
	tlsTarget := strings.TrimPrefix(serveWeb(t, tlsWeb, a.Handler()), "https://")
	basicWeb, err := LoadWebConfig(writeConfig(t, t.TempDir(), "basic_auth_users:\n  prometheus: "+hashOf(t, "s3cret")+"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	basicTarget := strings.TrimPrefix(serveWeb(t, basicWeb, a.Handler()), "http://")

	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: memwho
    static_configs:
      - targets: ['%[1]s']
  - job_name: memwho-tls
    scheme: https
    basic_auth: {username: prometheus, password: s3cret}
    tls_config: {ca_file: '%[2]s'}
    static_configs:
      - targets: ['%[3]s']
  - job_name: memwho-basic
    basic_auth: {username: prometheus, password: s3cret}
    static_configs:
      - targets: ['%[4]s']
  - job_name: memwho-wrong-password
    scheme: https
    basic_auth: {username: prometheus, password: guess}
    tls_config: {ca_file: '%[2]s'}
    static_configs:
      - targets: ['%[3]s']
  - job_name: memwho-untrusted-cert
    scheme: https
    basic_auth: {username: prometheus, password: s3cret}
    static_configs:
      - targets: ['%[3]s']
`, target, cert.certFile, tlsTarget, basicTarget)), 0o644)
	port := freePort(t)
	promAddr := fmt.Sprintf("127.0.0.1:%d", port)
	var log bytes.Buffer
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})

	query := func(q string) ([]promSample, error) {
		resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var r struct {
			Status string
			Data   struct{ Result []promSample }
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return nil, err
		}
		if r.Status != "success" {
			return nil, fmt.Errorf("query %s: status %s", q, r.Status)
		}
		return r.Data.Result, nil
	}

	q := `memwho_group_pss_bytes{job="memwho",group="` + group + `"}`
	deadline := time.Now().Add(90 * time.Second)
	var res []promSample
	for {
		res, err = query(q)
		if err == nil && len(res) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 90 s (last error %v); prometheus log:\n%s", q, err, log.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	if v := res[0].value(); v <= 0 {
		t.Errorf("%s = %v, want > 0", q, v)
	}
	if res[0].Metric["job"] != "memwho" {
		t.Errorf("series labels %v", res[0].Metric)
	}
	for q, want := range map[string]float64{
		`memwho_group_processes{job="memwho",group="` + group + `"}`: 1,
		`up{job="memwho"}`: 1,
		`memwho_agent_info{job="memwho",by="program"}`: 1,
	} {
		res, err := query(q)
		if err != nil || len(res) != 1 {
			t.Errorf("%s: %v %v", q, res, err)
			continue
		}
		if v := res[0].value(); v != want {
			t.Errorf("%s = %v, want %v", q, v, want)
		}
	}

	// Through the access control: the series arrives over TLS with the
	// password and over plain HTTP with it; never with a wrong password
	// or without trusting the certificate.
	// Positive checks first: once the series came through TLS, the
	// failing jobs have had their scrapes too.
	for _, c := range []struct {
		q    string
		want float64
	}{
		{`memwho_group_processes{job="memwho-tls",group="` + group + `"}`, 1},
		{`memwho_group_processes{job="memwho-basic",group="` + group + `"}`, 1},
		{`up{job="memwho-tls"}`, 1},
		{`up{job="memwho-basic"}`, 1},
		{`up{job="memwho-wrong-password"}`, 0},
		{`up{job="memwho-untrusted-cert"}`, 0},
		{`count({job="memwho-wrong-password",__name__=~"memwho_.*"}) or vector(0)`, 0},
		{`count({job="memwho-untrusted-cert",__name__=~"memwho_.*"}) or vector(0)`, 0},
	} {
		q, want := c.q, c.want
		var res []promSample
		for deadline := time.Now().Add(30 * time.Second); ; {
			res, err = query(q)
			if err == nil && len(res) == 1 && res[0].value() == want {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: %v %v, want one sample of value %v; prometheus log:\n%s", q, res, err, want, log.String())
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}

type promSample struct {
	Metric map[string]string
	Value  [2]any
}

func (s promSample) value() float64 {
	v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
	return v
}

// TestPromtool runs "promtool check metrics" (lint included) on the
// agent's output for this host and for the tree of hostile names.
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	for _, root := range []string{"/proc", proctest.Root(t, "../proc/testdata/names.txtar"), proctest.Root(t, "testdata/sockets.txtar")} {
		a := newAgent(t, Options{Engine: engine.Options{FS: fstest.Open(t, root), Conns: true}, TopProcesses: 10})
		out := a.WriteMetrics(nil)
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(out)
		msg, err := cmd.CombinedOutput()
		if err != nil || len(bytes.TrimSpace(msg)) > 0 {
			t.Errorf("promtool check metrics on %s: %v\n%s", root, err, msg)
		}
	}
}

// TestLoad scrapes the agent 200 times a second, from many connections:
// walks must stay within one per MinInterval and memory must not grow.
// It runs 5 s; MEMWHO_LOAD_SECONDS=30 (scripts/bench-agent.sh) runs the
// full length.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	seconds := 5
	if s, err := strconv.Atoi(os.Getenv("MEMWHO_LOAD_SECONDS")); err == nil && s > 0 {
		seconds = s
	}
	const rate = 200
	const minInterval = time.Second
	a, err := New(Options{Engine: engine.Options{FS: fstest.Open(t, "/proc"), Conns: true}, MinInterval: minInterval, TopProcesses: 20, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	addr := "http://" + serve(t, a) + "/metrics"
	client := &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 400},
		Timeout:   10 * time.Second,
	}
	defer client.CloseIdleConnections()
	get := func() error {
		resp, err := client.Get(addr)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %s", resp.Status)
		}
		return err
	}
	// Warm up: the first walk, buffers, connections.
	for range 20 {
		if err := get(); err != nil {
			t.Fatal(err)
		}
	}
	walks0 := a.Walks()
	rss0 := vmRSS(t)

	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 400)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds)*time.Second)
	defer cancel()
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	start := time.Now()
	var firstErr atomic.Value
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := get(); err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
				return
			}
			ok.Add(1)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	walks := a.Walks() - walks0
	rss1 := vmRSS(t)

	maxWalks := uint64(elapsed/minInterval) + 1
	t.Logf("%d scrapes in %v (%.0f/s), %d failed; %d walks (at most %d); VmRSS %d -> %d KiB",
		ok.Load(), elapsed.Round(time.Millisecond), float64(ok.Load())/elapsed.Seconds(), failed.Load(), walks, maxWalks, rss0>>10, rss1>>10)
	if failed.Load() > 0 {
		t.Errorf("%d scrapes failed: %v", failed.Load(), firstErr.Load())
	}
	if walks > maxWalks {
		t.Errorf("%d walks in %v, want at most %d (one per %v)", walks, elapsed, maxWalks, minInterval)
	}
	// Buffers are reused: a scrape must not leave memory behind. Allow
	// for the runtime's own slack, not for growth with the scrape count.
	if rss1 > rss0+16<<20 {
		t.Errorf("VmRSS grew from %d to %d KiB", rss0>>10, rss1>>10)
	}
}

// vmRSS returns this process's VmRSS in bytes.
func vmRSS(t testing.TB) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
