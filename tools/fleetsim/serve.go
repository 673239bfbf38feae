package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/memwho/memwho/internal/agent"
	"github.com/memwho/memwho/internal/progress"
	"github.com/memwho/memwho/internal/sample"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fleetsim serve", flag.ContinueOnError)
	var ff fleetFlags
	ff.register(fs)
	listen := fs.String("listen", "127.0.0.1:0", "where the agents are served, each at /host/NAME/metrics")
	sdFile := fs.String("sd-file", "", "write the Prometheus file_sd target list here")
	duration := fs.Duration("duration", 0, "stop after this long (0: at SIGINT or SIGTERM)")
	minInterval := fs.Duration("min-interval", agent.DefaultMinInterval, "serve --min-interval of every agent")
	by := fs.String("by", "program", "serve --by")
	top := fs.Int("top-processes", 0, "serve --top-processes")
	quiet := fs.Bool("quiet", false, "no progress line")
	if err := parse(fs, args); err != nil {
		return err
	}
	grouping, err := sample.ParseBy(*by)
	if err != nil {
		return fmt.Errorf("%w: --by: %v", errUsage, err)
	}
	f, err := ff.fleet(time.Now())
	if err != nil {
		return err
	}
	agents := make(map[string]*agent.Agent, f.Hosts)
	var names []string
	for i := range f.Hosts {
		h := f.NewHost(i)
		a, err := agent.New(agent.Options{By: grouping, TopProcesses: *top, MinInterval: *minInterval,
			Version: "fleetsim", Source: h.Scanner(time.Now)})
		if err != nil {
			return err
		}
		defer a.Close()
		agents[h.Name] = a
		names = append(names, h.Name)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /host/{name}/metrics", func(w http.ResponseWriter, r *http.Request) {
		a := agents[r.PathValue("name")]
		if a == nil {
			http.NotFound(w, r)
			return
		}
		a.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if *sdFile != "" {
		if err := writeTargets(*sdFile, addr, names); err != nil {
			ln.Close()
			return err
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if *duration > 0 {
		runCtx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Add(1)
		go func() { defer wg.Done(); a.Run(runCtx) }()
	}
	fmt.Fprintf(stdout, "fleetsim: %d agents at http://%s/host/NAME/metrics (NAME sim-00000 to %s)\n", f.Hosts, addr, names[len(names)-1])
	total := int64(0)
	if *duration > 0 {
		total = int64(duration.Seconds())
	}
	meter := progress.Start(stderr, progress.Show(stderr, *quiet), "fleetsim serve", "s", total)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
				meter.Set(int64(time.Since(start).Seconds()))
			}
		}
	}()
	go func() {
		<-runCtx.Done()
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		srv.Shutdown(sctx)
	}()
	err = srv.Serve(ln)
	meter.Done()
	wg.Wait()
	var walks uint64
	for _, a := range agents {
		walks += a.Walks()
	}
	fmt.Fprintf(stdout, "fleetsim: %d walks served; fleetsim's own CPU %.1f s\n", walks, selfCPU())
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// writeTargets writes a Prometheus file_sd list: one target group per
// host, its metrics path and its instance label.
func writeTargets(name, addr string, hosts []string) error {
	type group struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	var groups []group
	for _, h := range hosts {
		groups = append(groups, group{Targets: []string{addr}, Labels: map[string]string{"__metrics_path__": "/host/" + h + "/metrics", "instance": h}})
	}
	b, err := json.MarshalIndent(groups, "", " ")
	if err != nil {
		return err
	}
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}
