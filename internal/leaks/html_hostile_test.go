package leaks

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/store"
)

// TestHTMLHostile is the leaks page: a process and a host
// named to break out of HTML text, attributes, the SVG title and the
// page's script, and a fit of NaN and infinities (a database the
// attacker wrote). Every chart must stay well-formed XML, the page must
// hold its own script only, and no raw hostile byte may pass.
func TestHTMLHostile(t *testing.T) {
	names := []string{
		`</script><script>alert(1)</script>`,
		`"><svg onload=alert(1)>`,
		`]]><!--`,
		"js\u2028\u2029line",
		"esc\x1b]0;t\x07\x9b\xff\xfe",
		"bidi\u202eexe.txt\u2066",
		"nonchar\uffff",
	}
	now := time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)
	var ranked []Leak
	for i, n := range names {
		l := Leak{Host: n, Kind: store.KindProcess, Key: n, PID: 100 + i, First: now.Add(-time.Hour), Last: now, Origin: now.Add(-time.Hour),
			Footprint: math.MaxUint64, Headroom: math.MaxUint64, Fills: true, TimeToFull: math.MaxInt64,
			Points: []Point{{T: 0, V: 1}, {T: 1, V: math.Inf(1)}}}
		l.Fit = Fit{Slope: []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e308, -1, 0, math.MaxFloat64}[i], Intercept: math.NaN(), R2: math.NaN(), Steady: math.Inf(1)}
		ranked = append(ranked, l)
	}
	rep := &Report{Until: now, Window: time.Hour}
	var b bytes.Buffer
	if err := rep.writeHTML(&b, 2, ranked); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, bad := range []string{"<script>alert", "<svg onload", "]]>", "<!--", "\u2028", "\u2029", "\x1b", "\x07", "\xff", "\u202e", "\u2066", "\uffff"} {
		if strings.Contains(out, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	if n := strings.Count(out, "<script"); n != 1 {
		t.Errorf("%d <script> elements, want the page's own", n)
	}
	for _, svg := range regexp.MustCompile(`(?s)<svg class="leak".*?</svg>`).FindAllString(out, -1) {
		d := xml.NewDecoder(strings.NewReader(svg))
		for {
			if _, err := d.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("a chart is not well-formed XML: %v\n%s", err, svg)
			}
		}
	}
}
