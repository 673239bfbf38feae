// Package manpage turns a command's --help text (cmd/*/usage/*.txt) into a
// man page in roff, and reads the flags out of its "Flags:" section, so
// that the man pages and shell completions are generated from the text
// users see with --help and cannot say something else.
//
// A help text is: a "Usage: " line, then blocks separated by blank lines.
// A block headed "Flags:" lists flags, one entry per line starting with
// two spaces and a dash, its description from the first run of two spaces
// on, continued on more indented lines. A block headed "Examples:" holds
// command lines. Any other block is prose, whose indented lines are kept
// as laid out (key tables, definitions).
package manpage

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Flag is one entry of a help text's "Flags:" section.
type Flag struct {
	// Names are the flag's spellings as written: "-o", "--output".
	Names []string
	// Arg is the placeholder of its value ("FILE"), empty for a switch.
	Arg string
	// Help is the description, its lines joined by single spaces.
	Help string
}

// Block is one blank-line-separated part of a help text.
type Block struct {
	// Heading is "Flags" or "Examples" for those sections, else empty.
	Heading string
	// Lines are the block's lines without the heading.
	Lines []string
	// Flags are the parsed entries of a Flags block.
	Flags []Flag
}

// Text is a parsed help text.
type Text struct {
	// Usage is the first line without "Usage: ".
	Usage  string
	Blocks []Block
}

// Parse splits a help text into its usage line and blocks. It fails on
// what it cannot lay out faithfully, so that a help text the generator
// does not understand breaks the build of the man pages, not the pages.
func Parse(help string) (Text, error) {
	lines := strings.Split(strings.TrimRight(help, "\n"), "\n")
	usage, ok := strings.CutPrefix(lines[0], "Usage: ")
	if !ok {
		return Text{}, fmt.Errorf("help text does not start with \"Usage: \": %q", lines[0])
	}
	t := Text{Usage: strings.TrimSpace(usage)}
	var cur []string
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		b := Block{Lines: cur}
		switch cur[0] {
		case "Flags:", "Examples:":
			b.Heading, b.Lines = strings.TrimSuffix(cur[0], ":"), cur[1:]
		}
		if b.Heading == "Flags" {
			flags, err := parseFlags(b.Lines)
			if err != nil {
				return err
			}
			b.Flags = flags
		}
		t.Blocks = append(t.Blocks, b)
		cur = nil
		return nil
	}
	for _, l := range lines[1:] {
		if strings.Contains(l, "\t") {
			return Text{}, fmt.Errorf("tab in help text line %q: lay it out with spaces", l)
		}
		if strings.TrimSpace(l) == "" {
			if err := flush(); err != nil {
				return Text{}, err
			}
			continue
		}
		cur = append(cur, strings.TrimRight(l, " "))
	}
	if err := flush(); err != nil {
		return Text{}, err
	}
	return t, nil
}

// parseFlags reads the entries of a Flags section. Descriptions start at
// one column, where their continuation lines are indented to; an entry's
// flags may run up to one space before it ("--output FILE write ..."), or
// fill the line, the description starting on the next.
func parseFlags(lines []string) ([]Flag, error) {
	col := -1
	for _, l := range lines {
		if !strings.HasPrefix(l, "  -") {
			if n := len(l) - len(strings.TrimLeft(l, " ")); col < 0 || n < col {
				col = n
			}
		}
	}
	if col < 0 && len(lines) > 0 {
		// No continuation line: the first entry's gap of two spaces.
		if i := strings.Index(lines[0][2:], "  "); i >= 0 {
			col = 2 + i + len(lines[0][2+i:]) - len(strings.TrimLeft(lines[0][2+i:], " "))
		}
	}
	var flags []Flag
	for _, l := range lines {
		if strings.HasPrefix(l, "  -") {
			spec, help := l, ""
			if col > 2 && len(l) > col && l[col-1] == ' ' && l[col] != ' ' {
				spec, help = l[:col], l[col:]
			}
			spec = strings.TrimSpace(spec)
			if strings.Contains(spec, "  ") {
				return nil, fmt.Errorf("flag entry %q: its description does not start at column %d", l, col)
			}
			f := Flag{Help: strings.TrimSpace(help)}
			for _, part := range strings.Split(spec, ", ") {
				name, arg, _ := strings.Cut(part, " ")
				if !strings.HasPrefix(name, "-") {
					return nil, fmt.Errorf("flag entry %q: %q is not a flag", l, name)
				}
				f.Names = append(f.Names, name)
				if arg != "" {
					f.Arg = arg
				}
			}
			flags = append(flags, f)
			continue
		}
		if len(flags) == 0 || !strings.HasPrefix(l, "   ") {
			return nil, fmt.Errorf("line %q in Flags is neither a flag entry (two spaces, then -) nor an indented continuation", l)
		}
		f := &flags[len(flags)-1]
		f.Help = strings.TrimSpace(f.Help + " " + strings.TrimSpace(l))
	}
	return flags, nil
}

// Flags returns the entries of every Flags block of t.
func (t Text) Flags() []Flag {
	var flags []Flag
	for _, b := range t.Blocks {
		flags = append(flags, b.Flags...)
	}
	return flags
}

// Command is one entry of a page's COMMANDS section.
type Command struct{ Name, Summary string }

// Page is what one man page is made of.
type Page struct {
	// Name is the page's name ("memwho-watch"), Section its section (1).
	Name    string
	Section int
	// Summary is the NAME line's description.
	Summary string
	// Source is the footer's source ("memwho"), Manual the header's
	// manual title.
	Source, Manual string
	// Help is the --help text the page is made from.
	Help string
	// Commands, when present, make a COMMANDS section.
	Commands []Command
	// ExitStatus, Environment and Files make the sections of those
	// names: each entry a term (an exit code, a variable, a path) and
	// what it means.
	ExitStatus, Environment, Files []Item
	// DocDir, when set, is the directory the documents that the help
	// text names as docs/NAME.md are installed in: the page names them
	// there (/usr/share/doc/memwho/NAME.md), not in a source tree the
	// reader may not have.
	DocDir string
	// SeeAlso are references ("memwho(1)").
	SeeAlso []string
}

// Item is one entry of a section that lists terms.
type Item struct{ Term, Text string }

// docRef is a document named by its path in the source tree.
var docRef = regexp.MustCompile(`\bdocs/([a-z][a-z0-9-]*\.md)\b`)

// DocRefs returns the documents help names as docs/NAME.md.
func DocRefs(help string) []string {
	var out []string
	for _, m := range docRef.FindAllStringSubmatch(help, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// Roff renders p as a man(7) page. There is no date in it, so that the
// same text gives the same page on every build.
func (p Page) Roff() ([]byte, error) {
	help := p.Help
	if p.DocDir != "" {
		help = docRef.ReplaceAllString(help, p.DocDir+"/$1")
	}
	t, err := Parse(help)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, ".\\\" Generated by tools/man from the --help text; do not edit.\n")
	fmt.Fprintf(&b, ".TH %s %d \"\" %s %s\n", quote(strings.ToUpper(p.Name)), p.Section, quote(p.Source), quote(p.Manual))
	// No hyphenation, ragged right: paths, flags and URLs stay whole and
	// can be copied.
	b.WriteString(".nh\n.ad l\n.SH NAME\n")
	fmt.Fprintf(&b, "%s \\- %s\n", Escape(p.Name), Escape(p.Summary))
	b.WriteString(".SH SYNOPSIS\n")
	b.WriteString(synopsis(t.Usage) + "\n")

	section := "DESCRIPTION"
	var examples []Block
	for _, blk := range t.Blocks {
		switch blk.Heading {
		case "Flags":
			b.WriteString(".SH OPTIONS\n")
			for _, f := range blk.Flags {
				b.WriteString(".TP\n" + flagTag(f) + "\n")
				if f.Help != "" {
					b.WriteString(text(f.Help) + "\n")
				}
			}
			section = "NOTES"
			continue
		case "Examples":
			examples = append(examples, blk)
			continue
		}
		if section != "" {
			b.WriteString(".SH " + section + "\n")
			section = ""
		} else {
			b.WriteString(".PP\n")
		}
		prose(&b, blk.Lines)
	}
	if len(p.Commands) > 0 {
		b.WriteString(".SH COMMANDS\n")
		for _, c := range p.Commands {
			fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s\n", Escape(c.Name), text(c.Summary))
		}
	}
	for _, sec := range []struct {
		name  string
		items []Item
	}{{"EXIT STATUS", p.ExitStatus}, {"ENVIRONMENT", p.Environment}, {"FILES", p.Files}} {
		if len(sec.items) == 0 {
			continue
		}
		b.WriteString(".SH " + sec.name + "\n")
		for _, it := range sec.items {
			fmt.Fprintf(&b, ".TP\n%s\n%s\n", line("\\fB"+Escape(it.Term)+"\\fR"), text(it.Text))
		}
	}
	for i, blk := range examples {
		if i == 0 {
			b.WriteString(".SH EXAMPLES\n")
		}
		pre(&b, blk.Lines)
	}
	if len(p.SeeAlso) > 0 {
		b.WriteString(".SH SEE ALSO\n")
		for i, s := range p.SeeAlso {
			name, sec, ok := strings.Cut(strings.TrimSuffix(s, ")"), "(")
			if !ok {
				return nil, fmt.Errorf("%s: see also %q: want NAME(SECTION)", p.Name, s)
			}
			sep := ","
			if i == len(p.SeeAlso)-1 {
				sep = ""
			}
			fmt.Fprintf(&b, ".BR %s (%s)%s\n", Escape(name), Escape(sec), sep)
		}
	}
	return b.Bytes(), nil
}

// prose writes a block: unindented lines as filled text, runs of indented
// lines as they are laid out.
func prose(b *bytes.Buffer, lines []string) {
	for i := 0; i < len(lines); {
		j := i
		if strings.HasPrefix(lines[i], " ") {
			for j < len(lines) && strings.HasPrefix(lines[j], " ") {
				j++
			}
			pre(b, lines[i:j])
		} else {
			if i > 0 {
				b.WriteString(".PP\n")
			}
			for j < len(lines) && !strings.HasPrefix(lines[j], " ") {
				b.WriteString(text(lines[j]) + "\n")
				j++
			}
		}
		i = j
	}
}

// pre writes lines unfilled, indented, with their common indentation
// removed.
func pre(b *bytes.Buffer, lines []string) {
	indent := -1
	for _, l := range lines {
		n := len(l) - len(strings.TrimLeft(l, " "))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	b.WriteString(".PP\n.RS 4\n.nf\n")
	for _, l := range lines {
		b.WriteString(text(l[indent:]) + "\n")
	}
	b.WriteString(".fi\n.RE\n")
}

// synopsis sets the command words of a usage line in bold.
func synopsis(usage string) string {
	words := strings.Fields(usage)
	n := 0
	for n < len(words) && isWord(words[n]) {
		n++
	}
	s := "\\fB" + Escape(strings.Join(words[:n], " ")) + "\\fR"
	if n < len(words) {
		s += " " + Escape(strings.Join(words[n:], " "))
	}
	return line(s)
}

func isWord(w string) bool {
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r == '-') {
			return false
		}
	}
	return w != ""
}

func flagTag(f Flag) string {
	names := make([]string, len(f.Names))
	for i, n := range f.Names {
		names[i] = "\\fB" + Escape(n) + "\\fR"
	}
	s := strings.Join(names, ", ")
	if f.Arg != "" {
		s += " \\fI" + Escape(f.Arg) + "\\fR"
	}
	return line(s)
}

// line makes already escaped text safe as a text line: one that starts
// with a control character (. or ') would be read as a request.
func line(s string) string {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		return "\\&" + s
	}
	return s
}

// text is s, escaped, as a text line.
func text(s string) string { return line(Escape(s)) }

// quote makes s one macro argument.
func quote(s string) string {
	return `"` + strings.ReplaceAll(Escape(s), `"`, `\(dq`) + `"`
}

// Escape makes text literal in roff: backslashes print as backslashes,
// dashes as the ASCII hyphen-minus that can be copied into a shell, and
// other characters outside ASCII as named code points, so that groff needs
// no input encoding. Control characters at the start of a line are the
// caller's (line).
func Escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r > 0x7e:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		case r < 0x20:
			// Help texts hold no control characters; drop any rather than
			// let one reach groff.
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
