package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/proc/proctest"
)

// pageCases are the fixtures drawn by the page tests: the ordinary,
// hostile names, nesting container → program → process, swap, and
// estimates (--fast).
var pageCases = []struct {
	name, fixture string
	args          []string
}{
	{"basic", "basic", nil},
	{"names", "names", nil},
	{"containers", "containers", []string{"--by", "container"}},
	{"swap", "swap", []string{"--by", "user"}},
	{"fast", "basic", []string{"--fast", "--by", "pid"}},
}

// writePage runs memwho --html and --svg on a fixture and returns the
// two files' paths.
func writePage(t *testing.T, fixture string, args []string) (htmlPath, svgPath string) {
	t.Helper()
	root := proctest.Root(t, "../../internal/proc/testdata/"+fixture+".txtar")
	dir := t.TempDir()
	htmlPath, svgPath = filepath.Join(dir, "page.html"), filepath.Join(dir, "map.svg")
	var stdout, stderr bytes.Buffer
	args = append([]string{"--proc", root, "--html", htmlPath, "--svg", svgPath}, args...)
	if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("memwho %q: exit %d: %s", args, code, stderr.String())
	}
	return htmlPath, svgPath
}

// TestPageStatic checks what needs no browser: the SVG is well-formed
// XML, neither file can fetch anything, and no control byte of a
// hostile name reaches either.
func TestPageStatic(t *testing.T) {
	fetch := regexp.MustCompile(`(?i)<script[^>]*\bsrc\b|<link\b|<img\b|@import|url\((?:[^#)]|$)|<iframe|<object|<embed`)
	for _, tc := range pageCases {
		t.Run(tc.name, func(t *testing.T) {
			htmlPath, svgPath := writePage(t, tc.fixture, tc.args)
			for _, p := range []string{htmlPath, svgPath} {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if m := fetch.Find(b); m != nil {
					t.Errorf("%s fetches: %q", filepath.Base(p), m)
				}
				// The only URL is the SVG namespace, a name never fetched.
				if n := strings.Count(string(b), "://"); n != strings.Count(string(b), "http://www.w3.org/2000/svg") {
					t.Errorf("%s names a URL", filepath.Base(p))
				}
				for i, c := range b {
					if c < 0x20 && c != '\n' || c == 0x7f {
						t.Errorf("%s: control byte %#x at %d", filepath.Base(p), c, i)
						break
					}
				}
			}
			b, _ := os.ReadFile(svgPath)
			d := xml.NewDecoder(bytes.NewReader(b))
			for {
				if _, err := d.Token(); err != nil {
					if err.Error() != "EOF" {
						t.Errorf("the SVG is not well-formed XML: %v", err)
					}
					break
				}
			}
		})
	}
}

// TestPageInBrowser opens each page in headless Chromium: it must render
// without console errors, pass its own check (data-check="ok"), and
// every rectangle of the DOM Chromium holds must have the area its
// figure gives it. MEMWHO_SCREENSHOT=DIR keeps the screenshots there.
func TestPageInBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (apt-get install chromium): the pages are not rendered")
	}
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	for _, tc := range pageCases {
		t.Run(tc.name, func(t *testing.T) {
			htmlPath, svgPath := writePage(t, tc.fixture, tc.args)
			shot := filepath.Join(t.TempDir(), tc.name+".png")
			if dir := os.Getenv("MEMWHO_SCREENSHOT"); dir != "" {
				shot = filepath.Join(dir, tc.name+".png")
			}
			_, logs := runChromium(t, chromium, "--enable-logging=stderr", "--v=0",
				"--screenshot="+shot, "file://"+htmlPath)
			for _, line := range strings.Split(logs, "\n") {
				if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
					t.Errorf("console: %s", line)
				}
			}
			if fi, err := os.Stat(shot); err != nil || fi.Size() < 1000 {
				t.Errorf("no screenshot: %v", err)
			}
			dom, _ := runChromium(t, chromium, "--dump-dom", "file://"+htmlPath)
			if !strings.Contains(dom, `data-check="ok"`) {
				m := regexp.MustCompile(`data-check="[^"]*"`).FindString(dom)
				t.Errorf("the page's self-check: %s", m)
			}
			checkAreas(t, dom)
			svg, _ := runChromium(t, chromium, "--dump-dom", "file://"+svgPath)
			checkAreas(t, svg)
		})
	}
}

// runChromium runs headless Chromium on args and returns its standard
// output and error.
func runChromium(t *testing.T, chromium string, args ...string) (string, string) {
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

var (
	treemapTag = regexp.MustCompile(`<svg [^>]*class="treemap"[^>]*>`)
	rectTag    = regexp.MustCompile(`<rect [^>]*data-bytes="[^>]*>`)
	attr       = regexp.MustCompile(`([a-z-]+)="([^"]*)"`)
)

func attrs(tag string) map[string]string {
	m := map[string]string{}
	for _, a := range attr.FindAllStringSubmatch(tag, -1) {
		m[a[1]] = a[2]
	}
	return m
}

func num(t *testing.T, m map[string]string, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(m[name], 64)
	if err != nil {
		t.Fatalf("attribute %s: %v", name, err)
	}
	return v
}

// checkAreas checks the rectangles of each treemap in dom: each one's
// area is its data-bytes' share of the treemap's data-bytes, within 1e-9
// of the whole, and the groups' areas add up to the whole.
func checkAreas(t *testing.T, dom string) {
	t.Helper()
	locs := treemapTag.FindAllStringIndex(dom, -1)
	if len(locs) == 0 {
		t.Fatal("no treemap in the DOM")
	}
	for i, loc := range locs {
		end := len(dom)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		svg := attrs(dom[loc[0]:loc[1]])
		total, area := num(t, svg, "data-bytes"), num(t, svg, "data-area")
		sums := map[string]float64{}
		rects := rectTag.FindAllString(dom[loc[1]:end], -1)
		if len(rects) == 0 {
			t.Errorf("%s: no rectangles", svg["data-metric"])
		}
		for _, tag := range rects {
			r := attrs(tag)
			a := num(t, r, "width") * num(t, r, "height")
			want := area * num(t, r, "data-bytes") / total
			if math.Abs(a-want) > 1e-9*area {
				t.Errorf("%s: %s: area %g, want %g", svg["data-metric"], tag, a, want)
			}
			sums[r["data-level"]] += a
		}
		if math.Abs(sums["group"]-area) > 1e-9*area {
			t.Errorf("%s: the groups cover %g of %g", svg["data-metric"], sums["group"], area)
		}
	}
}
