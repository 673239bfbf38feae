package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/report/browsertest"
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

	browsertest.Render(t, browsertest.Chromium(t), page, "leaks")
}
