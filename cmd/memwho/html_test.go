package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/memwho/memwho/internal/report/browsertest"
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
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	chromium := browsertest.Chromium(t)
	for _, tc := range pageCases {
		t.Run(tc.name, func(t *testing.T) {
			htmlPath, svgPath := writePage(t, tc.fixture, tc.args)
			checkAreas(t, browsertest.Render(t, chromium, htmlPath, tc.name))
			svg, _ := browsertest.Run(t, chromium, "--dump-dom", "file://"+svgPath)
			checkAreas(t, svg)
		})
	}
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
			sums[r["data-depth"]] += a
		}
		// The groups and the "other" of those too small to draw.
		if math.Abs(sums["0"]-area) > 1e-9*area {
			t.Errorf("%s: the groups cover %g of %g", svg["data-metric"], sums["0"], area)
		}
	}
}
