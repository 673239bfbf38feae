package manpage

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestParseFlags: the layouts of the usage texts' Flags sections.
func TestParseFlags(t *testing.T) {
	help := `Usage: memwho x [flags]

Does x.

Flags:
  --by KEY          group by program (default), pid, user, cgroup, unit
                    or container
  -o, --output FILE write to FILE (created 0600)
  --debug-socket-group NAME
                    let group NAME use the debug socket too
  --json            JSON output

Examples:
  memwho x --by user
`
	tx, err := Parse(help)
	if err != nil {
		t.Fatal(err)
	}
	want := []Flag{
		{Names: []string{"--by"}, Arg: "KEY", Help: "group by program (default), pid, user, cgroup, unit or container"},
		{Names: []string{"-o", "--output"}, Arg: "FILE", Help: "write to FILE (created 0600)"},
		{Names: []string{"--debug-socket-group"}, Arg: "NAME", Help: "let group NAME use the debug socket too"},
		{Names: []string{"--json"}, Help: "JSON output"},
	}
	if got := tx.Flags(); !reflect.DeepEqual(got, want) {
		t.Errorf("flags:\n got %q\nwant %q", got, want)
	}
	if tx.Usage != "memwho x [flags]" {
		t.Errorf("usage %q", tx.Usage)
	}
	if n := len(tx.Blocks); n != 3 || tx.Blocks[2].Heading != "Examples" {
		t.Errorf("blocks %q", tx.Blocks)
	}
}

// TestParseErrors: what the generator cannot lay out faithfully fails.
func TestParseErrors(t *testing.T) {
	for _, help := range []string{
		"",
		"usage: x\n",
		"Usage: x\n\nFlags:\nno indent\n",
		"Usage: x\n\nFlags:\n  --a     one\n  --b  two  three\n",
		"Usage: x\n\nFlags:\n  x         not a flag\n",
		"Usage: x\n\n\ttabbed\n",
	} {
		if tx, err := Parse(help); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", help, tx)
		}
	}
}

// TestEscape: what roff would read as escapes, requests or a foreign
// encoding comes out literal.
func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`a\b`, `a\eb`},
		{"--by", `\-\-by`},
		{"R² ←", `R\[u00B2] \[u2190]`},
		{"a\x01b", "ab"},
		{`say "x"`, `say "x"`},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{".so /etc/passwd", `\&.so /etc/passwd`},
		{"'br", `\&'br`},
		{"a.b", "a.b"},
	} {
		if got := text(tc.in); got != tc.want {
			t.Errorf("text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRoff: the parts of a page, as roff.
func TestRoff(t *testing.T) {
	p := Page{
		Name: "memwho-x", Section: 1, Summary: "does x", Source: "memwho", Manual: "memwho manual",
		Help:     "Usage: memwho x [flags] FILE\n\nDoes x.\n.dot\n\nKeys:\n  q  quit\n\nFlags:\n  -o, --out F  to F\n\nMore.\n\nExamples:\n  memwho x \\\n    y\n",
		Commands: []Command{{"x", "does x"}},
		SeeAlso:  []string{"memwho(1)", "ls(1)"},
	}
	b, err := p.Roff()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`.TH "MEMWHO\-X" 1 "" "memwho" "memwho manual"`,
		".SH NAME\nmemwho\\-x \\- does x\n",
		".SH SYNOPSIS\n\\fBmemwho x\\fR [flags] FILE\n",
		".SH DESCRIPTION\nDoes x.\n\\&.dot\n.PP\nKeys:\n",
		".nf\nq  quit\n.fi\n",
		".SH OPTIONS\n.TP\n\\fB\\-o\\fR, \\fB\\-\\-out\\fR \\fIF\\fR\nto F\n",
		".SH NOTES\nMore.\n",
		".SH COMMANDS\n.TP\n\\fBx\\fR\ndoes x\n",
		".SH EXAMPLES\n.PP\n.RS 4\n.nf\nmemwho x \\e\n  y\n.fi\n",
		".SH SEE ALSO\n.BR memwho (1),\n.BR ls (1)\n",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("page lacks %q:\n%s", want, b)
		}
	}
	if _, err := (Page{Name: "x", Help: "Usage: x\n", SeeAlso: []string{"x"}}).Roff(); err == nil {
		t.Error("a SEE ALSO entry without a section was accepted")
	}
}

// requests are the only requests and macros Roff writes.
var requests = []string{".\\\" ", ".TH ", ".nh", ".ad l", ".SH ", ".PP", ".TP", ".RS 4", ".RE", ".nf", ".fi", ".BR "}

// FuzzRoff: any help text either fails to parse or becomes a page in
// which every line that roff reads as a request is one Roff meant, so that
// nothing in a help text can act as a request (.so, .pso, .sy).
func FuzzRoff(f *testing.F) {
	f.Add("Usage: memwho x\n\nDoes x.\n\nFlags:\n  --a X  a\n        more\n\nExamples:\n  memwho x\n")
	f.Add("Usage: x\n\n.so /etc/passwd\n'sy id\n  .pso id\n\nFlags:\n  -a .x  'y\n")
	f.Fuzz(func(t *testing.T, help string) {
		b, err := Page{Name: "x", Section: 1, Summary: "s", Help: help}.Roff()
		if err != nil {
			return
		}
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(l, ".") && !strings.HasPrefix(l, "'") {
				continue
			}
			ok := false
			for _, r := range requests {
				ok = ok || strings.HasPrefix(l, r)
			}
			if !ok {
				t.Fatalf("line %q is a request Roff did not mean", l)
			}
		}
	})
}

// TestRoffSections: EXIT STATUS, ENVIRONMENT and FILES come from the
// page's items, and a document the help names as docs/NAME.md is named
// where the packages install it.
func TestRoffSections(t *testing.T) {
	p := Page{
		Name: "memwho-x", Section: 1, Summary: "x", Source: "memwho", Manual: "memwho manual",
		Help:        "Usage: memwho x\n\nSee docs/agent.md, \"Connections\", and docs/safe.md.\n",
		DocDir:      "/usr/share/doc/memwho",
		ExitStatus:  []Item{{"0", "Success."}, {"2", "Usage."}},
		Environment: []Item{{"MEMWHO_DB", "The database."}},
		Files:       []Item{{".hidden", "A path that starts with a dot."}},
	}
	b, err := p.Roff()
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		"/usr/share/doc/memwho/agent.md, \"Connections\", and /usr/share/doc/memwho/safe.md.",
		".SH EXIT STATUS\n.TP\n\\fB0\\fR\nSuccess.\n.TP\n\\fB2\\fR\nUsage.\n",
		".SH ENVIRONMENT\n.TP\n\\fBMEMWHO_DB\\fR\nThe database.\n",
		".SH FILES\n.TP\n\\fB.hidden\\fR\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "docs/") {
		t.Errorf("a source-tree path is left:\n%s", got)
	}
	if refs := DocRefs(p.Help); !slices.Equal(refs, []string{"agent.md", "safe.md"}) {
		t.Errorf("DocRefs = %q", refs)
	}
}
