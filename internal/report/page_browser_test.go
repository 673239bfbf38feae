package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/report/browsertest"
	"github.com/memwho/memwho/internal/sample"
)

// seenScript is added to a copy of a page: in the browser, it measures
// what a user sees of every treemap (each label's box as the font drew
// it, against its rectangle and every other label; the font's size on
// the screen) and the order of the groups' table, and writes it to
// data-seen on the root element as JSON.
const seenScript = `<script>
(function () {
  var seen = {labels: 0, rects: {}, bytes: {}, minFontPx: 1e9, bad: [], others: [], named: [], order: [], swapMap: false};
  var maps = document.querySelectorAll("svg.treemap");
  for (var m = 0; m < maps.length; m++) {
    var map = maps[m];
    if (map.getAttribute("data-metric") === "swap") seen.swapMap = true;
    var scale = map.getScreenCTM().a;
    var texts = map.querySelectorAll("text[data-in]");
    var boxes = [];
    for (var i = 0; i < texts.length; i++) {
      var t = texts[i];
      var b = t.getBBox();
      var r = map.querySelector('rect[data-i="' + t.getAttribute("data-in") + '"]');
      var x = +r.getAttribute("x"), y = +r.getAttribute("y"), w = +r.getAttribute("width"), h = +r.getAttribute("height");
      if (b.x < x - 0.5 || b.y < y - 0.5 || b.x + b.width > x + w + 0.5 || b.y + b.height > y + h + 0.5)
        seen.bad.push("outside its rectangle: " + t.textContent);
      for (var j = 0; j < boxes.length; j++) {
        var o = boxes[j];
        var dx = Math.min(b.x + b.width, o.x + o.width) - Math.max(b.x, o.x);
        var dy = Math.min(b.y + b.height, o.y + o.height) - Math.max(b.y, o.y);
        if (dx > 0.5 && dy > 0.5) seen.bad.push("overlap: " + t.textContent + " / " + o.text);
      }
      boxes.push({x: b.x, y: b.y, width: b.width, height: b.height, text: t.textContent});
      seen.labels++;
      var key = map.getAttribute("data-metric") + " " + t.getAttribute("data-in");
      seen.rects[key] = (seen.rects[key] ? seen.rects[key] + "\n" : "") + t.textContent;
      if (!(key in seen.bytes)) seen.bytes[key] = Number(r.getAttribute("data-bytes"));
      seen.minFontPx = Math.min(seen.minFontPx, parseFloat(getComputedStyle(t).fontSize) * scale);
      if (r.getAttribute("data-level") === "other" && r.getAttribute("data-depth") === "0") seen.others.push(map.getAttribute("data-metric") + ": " + t.textContent);
      if (r.getAttribute("data-depth") === "0") seen.named.push(map.getAttribute("data-metric") + ": " + t.textContent);
    }
  }
  var rows = document.querySelectorAll("#groups-table tbody tr");
  for (var k = 0; k < rows.length; k++) seen.order.push(Number(rows[k].getAttribute("data-bytes")));
  document.documentElement.setAttribute("data-seen", JSON.stringify(seen));
})();
</script>
`

// seen is what seenScript measured.
type seen struct {
	Labels int `json:"labels"`
	// Rects maps "METRIC INDEX" of each labelled rectangle to its
	// label's lines, Bytes to its figure.
	Rects     map[string]string `json:"rects"`
	Bytes     map[string]uint64 `json:"bytes"`
	MinFontPx float64           `json:"minFontPx"`
	Bad       []string          `json:"bad"`
	Others    []string          `json:"others"`
	Named     []string          `json:"named"`
	Order     []uint64          `json:"order"`
	SwapMap   bool              `json:"swapMap"`
}

// look renders page (HTML, or an SVG put inline in a page) in headless
// Chromium with seenScript and returns what it measured.
func look(t *testing.T, chromium string, page []byte, svg bool) seen {
	t.Helper()
	var doc []byte
	if svg {
		body := bytes.TrimPrefix(page, []byte(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"))
		doc = append([]byte("<!DOCTYPE html>\n<html><body>\n"), body...)
		doc = append(doc, seenScript+"</body></html>\n"...)
	} else {
		doc = bytes.Replace(page, []byte("</body>"), []byte(seenScript+"</body>"), 1)
	}
	path := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	dom, _ := browsertest.Run(t, chromium, "--dump-dom", "file://"+path)
	m := regexp.MustCompile(`data-seen="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatal("the page's measures are missing from the DOM")
	}
	var s seen
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// manyGroups is a host of 300 programs whose sizes fall off as 1/rank
// (the largest 1 GiB), up to 6 processes each, some with swap, a few
// estimates, one with a name long enough to be cut; and their
// processes.
func manyGroups() ([]sample.Group, []sample.Process) {
	var groups []sample.Group
	var procs []sample.Process
	pid := 100
	for i := range 300 {
		name := fmt.Sprintf("prog-%03d", i)
		if i == 2 {
			name = "a-program-with-a-very-long-name-that-will-not-fit-anywhere"
		}
		g := sample.Group{Key: name}
		n := 1 + i%6
		for k := range n {
			p := sample.Process{PID: pid, Name: name, RAM: uint64(1<<30/(i+1)/n) &^ 4095, Swap: uint64(i%4) << 20}
			if i%17 == 5 && k == 0 {
				p.Accuracy = sample.Estimate
				g.Estimated++
			}
			procs = append(procs, p)
			g.PIDs = append(g.PIDs, pid)
			g.Count++
			g.RAM += p.RAM
			g.Swap += p.Swap
			pid++
		}
		groups = append(groups, g)
	}
	return groups, procs
}

// TestPageWhatUsersSee renders the page and the SVG of a host of 300
// programs in headless Chromium and checks what a user sees: labels
// inside their rectangles, none over another, readable (at least 9
// pixels at a 1200-pixel window), most with their size and share; the
// largest groups named; the rest in one "other (N groups, X MiB)"; the
// table largest first; and with --top 5, the other groups still drawn
// (their swap too). Found: no size or share on any rectangle, hundreds
// of small groups as an unlabelled grid, "memwho-a…" over "memw.", the
// table smallest first, no "other" and "none used by the processes
// shown" with 51.6 MiB of swap in use under --top 5.
func TestPageWhatUsersSee(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	chromium := browsertest.Chromium(t)
	groups, procs := manyGroups()
	all := sample.Total(groups)
	ramTotal, swapTotal := all.RAM, all.Swap
	snap := &sample.Snapshot{Time: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	for _, tc := range []struct {
		name   string
		shown  []sample.Group
		hidden []sample.Group
	}{
		{"all", groups, nil},
		{"top 5", groups[:5], groups[5:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := Options{By: "program", Hidden: tc.hidden, HostName: "web1"}
			for _, format := range []string{"html", "svg"} {
				var b bytes.Buffer
				var err error
				if format == "html" {
					err = HTML(&b, tc.shown, sample.Total(tc.shown), procs, snap, opt)
				} else {
					err = SVG(&b, tc.shown, sample.Total(tc.shown), procs, snap, opt)
				}
				if err != nil {
					t.Fatal(err)
				}
				s := look(t, chromium, b.Bytes(), format == "svg")
				// Labels with a size, and with a size and a share; the
				// labels of every rectangle of at least 2% of its map
				// have both.
				size := regexp.MustCompile(`[0-9.]+ (B|KiB|MiB|GiB|TiB)`)
				pct := regexp.MustCompile(`[0-9.]+%`)
				withSize, withShare := 0, 0
				for k, text := range s.Rects {
					withSize += b2i(size.MatchString(text))
					both := size.MatchString(text) && pct.MatchString(text)
					withShare += b2i(both)
					total := ramTotal
					if strings.HasPrefix(k, "swap") {
						total = swapTotal
					}
					if float64(s.Bytes[k]) >= 0.02*float64(total) && !both {
						t.Errorf("%s: a rectangle of %.1f%% labelled %q, without its size and share", format, 100*float64(s.Bytes[k])/float64(total), text)
					}
				}
				t.Logf("%s: %d rectangles labelled, %d with their size, %d with size and share; smallest font %.1f px; other: %q", format, len(s.Rects), withSize, withShare, s.MinFontPx, s.Others)
				for _, bad := range s.Bad {
					t.Errorf("%s: %s", format, bad)
				}
				if len(s.Rects) < 20 || withSize < len(s.Rects)/2 {
					t.Errorf("%s: %d rectangles labelled, %d with their size", format, len(s.Rects), withSize)
				}
				if s.MinFontPx < 9 {
					t.Errorf("%s: a label of %.1f px", format, s.MinFontPx)
				}
				for _, metric := range []string{"ram", "swap"} {
					found := false
					for _, o := range s.Others {
						found = found || regexp.MustCompile(`^`+metric+`: ~?other \([0-9]+ groups, [0-9.]+ (KiB|MiB|GiB)\)$`).MatchString(o)
					}
					if !found {
						t.Errorf("%s: no %s box \"other (N groups, X MiB)\" in %q", format, metric, s.Others)
					}
				}
				if !s.SwapMap {
					t.Errorf("%s: no swap map, though the groups use swap", format)
				}
				for _, want := range []string{"ram: prog-000", "ram: prog-001", "ram: a-program-with", "ram: prog-003"} {
					found := false
					for _, n := range s.Named {
						found = found || strings.HasPrefix(n, want)
					}
					if !found {
						t.Errorf("%s: no label %q among %q", format, want, s.Named)
					}
				}
				if format == "html" {
					if len(s.Order) != len(groups) {
						t.Errorf("the table has %d rows, want every group's %d", len(s.Order), len(groups))
					}
					for i := 1; i < len(s.Order); i++ {
						if s.Order[i] > s.Order[i-1] {
							t.Errorf("the table's row %d (%d bytes) is larger than row %d (%d)", i+1, s.Order[i], i, s.Order[i-1])
							break
						}
					}
				}
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
