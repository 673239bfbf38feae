package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memwho/memwho/internal/sample"
)

// pageProcs makes one process per PID of groups, splitting each group's
// figures among them (the remainder to the first), named after the
// group, the first process of each group an estimate when the group is.
func pageProcs(groups []sample.Group) []sample.Process {
	var procs []sample.Process
	for _, g := range groups {
		n := uint64(len(g.PIDs))
		for i, pid := range g.PIDs {
			p := sample.Process{PID: pid, Name: g.Key, RAM: g.RAM / n, Swap: g.Swap / n}
			if i == 0 {
				p.RAM += g.RAM % n
				p.Swap += g.Swap % n
				if g.Estimated > 0 {
					p.Accuracy = sample.Estimate
				}
			}
			procs = append(procs, p)
		}
	}
	return procs
}

// TestSVGGolden pins the standalone SVG of the hostile groups.
func TestSVGGolden(t *testing.T) {
	groups := hostileGroups()
	groups[3].Estimated = 1
	var b bytes.Buffer
	if err := SVG(&b, groups, sample.Total(groups), pageProcs(groups), snapshot(false), Options{HostName: "web1\x1b[31m"}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/svg_hostile.golden", b.Bytes())
}

// TestPageEscapes: names built to break out of an attribute, an element
// or the XML itself come out as text, Sanitize's escapes kept, in both
// the page and the SVG, which stays well-formed XML.
func TestPageEscapes(t *testing.T) {
	hostile := []string{
		`"><script>alert(1)</script>`,
		`' onmouseover='alert(1)`,
		`a&amp;b]]><!--`,
		"nonchar\uffff\ufffe",
		"esc\x1b[2J\x00nul\xff",
		"bidi\u202eexe.txt",
	}
	var groups []sample.Group
	for i, name := range hostile {
		groups = append(groups, sample.Group{Key: name, Count: 1, PIDs: []int{100 + i}, RAM: uint64(i+1) << 20, Swap: 4096})
	}
	procs := pageProcs(groups)
	total := sample.Total(groups)
	for _, format := range []string{"html", "svg"} {
		var b bytes.Buffer
		var err error
		if format == "html" {
			err = HTML(&b, groups, total, procs, nil, Options{By: "program"})
		} else {
			err = SVG(&b, groups, total, procs, nil, Options{By: "program"})
		}
		if err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, bad := range []string{"<script>alert", "' onmouseover", "<!--", "]]>", "\x1b", "\x00", "\xff", "\u202e", "\uffff", "\ufffe"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s holds %q", format, bad)
			}
		}
		if strings.Count(out, "<script>") > 1 {
			t.Errorf("%s: more than the page's own script", format)
		}
		if format == "html" {
			// The page is not XML (no xmlns on the root, <!DOCTYPE
			// html>), but its titles must read as Sanitize's text.
			if !strings.Contains(out, `group: &#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;`) {
				t.Errorf("html: the first name is not escaped as text")
			}
			continue
		}
		titles := xmlTitles(t, out)
		for _, name := range hostile {
			want := "group: " + strings.NewReplacer("\uffff", `\uffff`, "\ufffe", `\ufffe`).Replace(string(Sanitize(nil, name)))
			found := false
			for _, title := range titles {
				// A group of one process names its pid too.
				found = found || strings.HasPrefix(title, want+"\n") || strings.HasPrefix(title, want+" [pid ")
			}
			if !found {
				t.Errorf("svg: no title starts with %q", want)
			}
		}
	}
}

// xmlTitles parses s as XML (failing the test if it is not well-formed)
// and returns the text of its <title> elements.
func xmlTitles(t *testing.T, s string) []string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	var titles []string
	in := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return titles
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			in = tok.Name.Local == "title"
			if in {
				titles = append(titles, "")
			}
		case xml.CharData:
			if in {
				titles[len(titles)-1] += string(tok)
			}
		case xml.EndElement:
			in = false
		}
	}
}

// TestPageNesting: with --by user a group holds programs, and a program
// of one process is that process.
func TestPageNesting(t *testing.T) {
	procs := []sample.Process{
		{PID: 1, Name: "postgres", RAM: 3 << 20},
		{PID: 2, Name: "postgres", RAM: 1 << 20},
		{PID: 3, Name: "sh", RAM: 1 << 20},
	}
	groups := []sample.Group{{Key: "alice", Count: 3, PIDs: []int{1, 2, 3}, RAM: 5 << 20}}
	tree := buildTree(groups, procs, &Options{By: "user"})
	var levels []string
	var walk func(n *tnode, depth int)
	walk = func(n *tnode, depth int) {
		levels = append(levels, strings.Repeat(" ", depth)+n.level+" "+n.name)
		for _, k := range n.kids {
			walk(k, depth+1)
		}
	}
	walk(tree[0], 0)
	got := strings.Join(levels, "\n")
	want := "group alice\n program postgres\n  process postgres\n  process postgres\n process sh"
	if got != want {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
	// Processes missing from procs: the group is drawn whole, without
	// children that would misstate it.
	if tree := buildTree(groups, procs[:2], &Options{By: "user"}); len(tree[0].kids) != 0 {
		t.Errorf("a group with a process missing has %d children", len(tree[0].kids))
	}
}

// FuzzAppendHTML: whatever the name, the text is valid UTF-8 with no
// byte that could end an attribute, open an element or break XML.
func FuzzAppendHTML(f *testing.F) {
	for _, s := range []string{"", "sshd", `"><script>`, "a&b", "\x00\x1b[31m\xff", "\uffff\ufffe\u202e", `\x41`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := string(AppendHTML(nil, s))
		if !utf8.ValidString(out) {
			t.Fatalf("%q: invalid UTF-8 %q", s, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || r == '<' || r == '>' || r == '"' || r == '\'' || r == 0xfffe || r == 0xffff || r >= 0x80 && r <= 0x9f {
				t.Fatalf("%q: %q holds %U", s, out, r)
			}
		}
		// & only starts the references escapeText writes.
		rest := out
		for {
			i := strings.IndexByte(rest, '&')
			if i < 0 {
				break
			}
			rest = rest[i:]
			ok := false
			for _, ref := range []string{"&amp;", "&lt;", "&gt;", "&#34;", "&#39;"} {
				ok = ok || strings.HasPrefix(rest, ref)
			}
			if !ok {
				t.Fatalf("%q: %q holds a bare &", s, out)
			}
			rest = rest[1:]
		}
	})
}

// BenchmarkHTML draws a host of 2,000 processes in 50 users' groups
// (with --by user's program level) as the page.
func BenchmarkHTML(b *testing.B) {
	var procs []sample.Process
	var groups []sample.Group
	for g := range 50 {
		grp := sample.Group{Key: "user" + strconv.Itoa(g)}
		for i := range 40 {
			p := sample.Process{PID: g*100 + i + 1, Name: "prog" + strconv.Itoa(i%7), RAM: uint64(1+g*i) << 20, Swap: uint64(i) << 12}
			procs = append(procs, p)
			grp.PIDs = append(grp.PIDs, p.PID)
			grp.Count++
			grp.RAM += p.RAM
			grp.Swap += p.Swap
		}
		groups = append(groups, grp)
	}
	total := sample.Total(groups)
	var size int
	for b.Loop() {
		var buf bytes.Buffer
		if err := HTML(&buf, groups, total, procs, nil, Options{By: "user"}); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "page-bytes")
}

// TestColourByName: a group keeps its colour whatever else the page
// holds and in what order: the colour was the group's rank, and changed
// from one run to the next.
func TestColourByName(t *testing.T) {
	fill := regexp.MustCompile(`<rect class="group"[^>]*fill="([^"]+)"[^>]*><title>group: (\w+)`)
	colours := func(keys ...string) map[string]string {
		var groups []sample.Group
		for i, k := range keys {
			groups = append(groups, sample.Group{Key: k, Count: 1, PIDs: []int{i + 1}, RAM: uint64(len(keys)-i) << 20})
		}
		var b bytes.Buffer
		if err := SVG(&b, groups, sample.Total(groups), nil, nil, Options{}); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, m := range fill.FindAllStringSubmatch(b.String(), -1) {
			out[m[2]] = m[1]
		}
		return out
	}
	a := colours("postgres", "nginx", "sshd", "bash")
	b := colours("bash", "cron", "postgres")
	if a["postgres"] == "" || a["postgres"] != b["postgres"] || a["bash"] != b["bash"] {
		t.Errorf("colours differ between pages: %v and %v", a, b)
	}
	if len(map[string]bool{a["postgres"]: true, a["nginx"]: true, a["sshd"]: true, a["bash"]: true}) < 4 {
		t.Errorf("two of four groups share a colour: %v", a)
	}
}
