package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
)

// TestLeaksHTML writes the page of the synthetic history and checks it
// without a browser (self-contained, names escaped, one chart per
// listed series, the time to exhaustion given), then, when chromium is
// installed, renders it headless: no console message, the page's own
// check passes, a screenshot is taken (kept in MEMWHO_SCREENSHOT=DIR).
func TestLeaksHTML(t *testing.T) {
	until := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	db := leaksDB(t, until)
	page := filepath.Join(t.TempDir(), "leaks.html")
	var stdout, stderr bytes.Buffer
	args := []string{"leaks", "--db", db, "--host", "web1", "--until", until.Format(time.RFC3339), "--html", page}
	if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want, _ := os.ReadFile(filepath.Join("testdata", "leaks_table.golden"))
	if !bytes.Equal(stdout.Bytes(), want) {
		t.Errorf("--html changed the table:\n%s", stdout.String())
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if n := strings.Count(s, `<svg class="leak"`); n != 2 {
		t.Errorf("%d charts, want 2 (the leaking process and its program)", n)
	}
	for _, bad := range []string{"\x1b", "<script src", "<link"} {
		if strings.Contains(s, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	for _, want := range []string{`process: api\x1b[31m [pid 4242]`, "left under its cgroup limit of 1.0 GiB", "+120.0 MiB per hour"} {
		if !strings.Contains(s, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Count(s, "://") != strings.Count(s, "http://www.w3.org/2000/svg") {
		t.Error("the page names a URL")
	}

	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (apt-get install chromium): the page is not rendered")
	}
	shot := filepath.Join(t.TempDir(), "leaks.png")
	if dir := os.Getenv("MEMWHO_SCREENSHOT"); dir != "" {
		shot = filepath.Join(dir, "leaks.png")
	}
	_, logs := headless(t, chromium, "--enable-logging=stderr", "--v=0", "--screenshot="+shot, "file://"+page)
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("console: %s", line)
		}
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 1000 {
		t.Errorf("no screenshot: %v", err)
	}
	dom, _ := headless(t, chromium, "--dump-dom", "file://"+page)
	if !strings.Contains(dom, `data-check="ok"`) {
		t.Errorf("the page's self-check: %s", regexp.MustCompile(`data-check="[^"]*"`).FindString(dom))
	}
}

// headless runs headless Chromium on args and returns its standard
// output and error.
func headless(t *testing.T, chromium string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args = append([]string{"--headless=new", "--no-sandbox", "--disable-gpu",
		"--user-data-dir=" + t.TempDir(), "--window-size=1200,900"}, args...)
	cmd := exec.CommandContext(ctx, chromium, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %q: %v\n%s", args, err, stderr.String())
	}
	return stdout.String(), stderr.String()
}
