package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestFleetPrometheus: 50 simulated hosts served through the agent's
// real exposition, scraped by a real Prometheus (every second here, 15 s
// in the full run) that loads contrib/memwho-rules.yml: every target up,
// the same series count from each, the rules recording for each host.
func TestFleetPrometheus(t *testing.T) {
	const bin = "/usr/bin/prometheus"
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s not installed (scripts/test.sh installs the prometheus package)", bin)
	}
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	const hosts = 50
	dir := t.TempDir()
	sd := filepath.Join(dir, "targets.json")
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--hosts", strconv.Itoa(hosts), "--listen", addr, "--sd-file", sd, "--min-interval", "1s", "--quiet"}, io.Discard, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fleetsim serve: %v", err)
		}
	})
	for i := 0; ; i++ {
		if _, err := os.Stat(sd); err == nil {
			break
		}
		if i == 100 {
			t.Fatal("no target list")
		}
		time.Sleep(100 * time.Millisecond)
	}
	rules, err := filepath.Abs("../../contrib/memwho-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: ['%s']
scrape_configs:
  - job_name: memwho
    file_sd_configs:
      - files: ['%s']
`, rules, sd)), 0o644)
	prom := freeAddr(t)
	var log bytes.Buffer
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+prom)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	query := func(q string) []float64 {
		resp, err := http.Get("http://" + prom + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var r struct {
			Data struct {
				Result []struct{ Value [2]any }
			}
		}
		json.NewDecoder(resp.Body).Decode(&r)
		var out []float64
		for _, s := range r.Data.Result {
			v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
			out = append(out, v)
		}
		return out
	}
	wait := func(q string, want float64) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			got := query(q)
			if len(got) == 1 && got[0] == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s = %v, want %v; prometheus log:\n%s", q, got, want, log.String())
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	wait(`count(up{job="memwho"} == 1)`, hosts)
	wait(`count(memwho_agent_info{version="fleetsim"})`, hosts)
	wait(`count(memwho:host_headroom_bytes)`, hosts)
	// Each host sends its programs' series and the fixed ones: a few
	// hundred.
	series := query(`scrape_samples_scraped{job="memwho"}`)
	if len(series) != hosts {
		t.Fatalf("scrape_samples_scraped of %d targets, want %d", len(series), hosts)
	}
	for _, n := range series {
		if n < 100 || n > 2000 {
			t.Errorf("a host sent %v samples, want a few hundred", n)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
