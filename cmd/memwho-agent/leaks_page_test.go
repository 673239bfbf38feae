package main

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/report/browsertest"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/store"
)

// leaksSeen measures, in the browser, what a reader of the leaks page
// sees: the summary table's rows and each chart's fitted line, how far
// it rises on the screen, in pixels.
const leaksSeen = `<script>
(function () {
  var seen = {rows: [], rise: [], ymax: []};
  var rows = document.querySelectorAll("#summary tbody tr");
  for (var i = 0; i < rows.length; i++) seen.rows.push(rows[i].cells[2].textContent + " " + rows[i].cells[3].textContent);
  var charts = document.querySelectorAll("svg.leak");
  for (var j = 0; j < charts.length; j++) {
    var r = charts[j].querySelector("line.fit").getBoundingClientRect();
    seen.rise.push(r.height);
    seen.ymax.push(charts[j].getAttribute("data-ymax"));
  }
  document.documentElement.setAttribute("data-seen", JSON.stringify(seen));
})();
</script>
`

// TestLeaksPageSlopesCompare: the page lists every series in a summary
// table, fastest first, and draws every chart on one zero-based axis, so
// that a leak of +114 MiB/h rises on the screen about 160 times as much
// as one of +0.7 MiB/h. Each chart's axis started at its own minimum,
// and the two looked as steep.
func TestLeaksPageSlopesCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	chromium := browsertest.Chromium(t)
	until := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	db := filepath.Join(t.TempDir(), "h.db")
	st, err := store.Open(context.Background(), db, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 120
	for i := range n {
		s := store.Sample{Time: until.Add(-time.Duration(n-i) * time.Minute), Host: "web1", BootID: "b",
			Meminfo: sample.Meminfo{MemTotal: 16 << 30, MemAvailable: 8 << 30}}
		s.Rows = []store.Row{
			{Kind: store.KindProcess, Key: "fast", PID: 10, StartTime: 1, Count: 1, PSS: uint64(200<<20 + i*114<<20/60)},
			{Kind: store.KindProcess, Key: "slow", PID: 11, StartTime: 1, Count: 1, PSS: uint64(400<<20 + i*7<<20/600)},
		}
		store.SortRows(s.Rows)
		if err := st.Write(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	page := filepath.Join(t.TempDir(), "leaks.html")
	var stdout, stderr bytes.Buffer
	args := []string{"leaks", "--db", db, "--host", "web1", "--until", until.Format(time.RFC3339), "--kind", "process", "--min-growth", "100KiB", "--html", page}
	if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "seen.html")
	if err := os.WriteFile(path, bytes.Replace(b, []byte("</body>"), []byte(leaksSeen+"</body>"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	dom, _ := browsertest.Run(t, chromium, "--dump-dom", "file://"+path)
	m := regexp.MustCompile(`data-seen="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatal("no measures in the DOM")
	}
	var seen struct {
		Rows []string  `json:"rows"`
		Rise []float64 `json:"rise"`
		Ymax []string  `json:"ymax"`
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &seen); err != nil {
		t.Fatal(err)
	}
	t.Logf("summary %q, rises %v px, axes %v", seen.Rows, seen.Rise, seen.Ymax)
	if len(seen.Rows) != 2 || !regexp.MustCompile(`^fast \[10\] \+114\.0 MiB$`).MatchString(seen.Rows[0]) || !regexp.MustCompile(`^slow \[11\] \+716\.8 KiB$`).MatchString(seen.Rows[1]) {
		t.Errorf("summary rows %q; want fast (+114.0 MiB/h) then slow (+716.8 KiB/h, 0.7 MiB/h)", seen.Rows)
	}
	if len(seen.Rise) != 2 || seen.Rise[0] < 100*seen.Rise[1] || seen.Rise[0] < 20 {
		t.Errorf("the fitted lines rise %v px: want the fast one about 160 times the slow one", seen.Rise)
	}
	if len(seen.Ymax) != 2 || seen.Ymax[0] != seen.Ymax[1] {
		t.Errorf("the charts' axes %v differ", seen.Ymax)
	}
}
