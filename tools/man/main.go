// Command memwho-man generates memwho's man pages (man/*.1) and the flag
// table of "memwho completion" (cmd/memwho/completion_table.go) from the
// commands' --help texts (cmd/memwho/usage, cmd/memwho-agent/usage) and
// command lists, so that --help, the man pages and the completions say the
// same. Its test fails when what is committed differs from what it
// generates. Run it from the repository root, or with go generate:
//
//	go run ./tools/man
package main

//go:generate go run . -root ../..

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/memwho/memwho/internal/manpage"
	"github.com/memwho/memwho/internal/store"
)

func main() {
	root := flag.String("root", ".", "the repository's root `directory`")
	check := flag.Bool("check", false, "only report generated files that differ from those on disk (exit 1)")
	flag.Parse()
	files, err := generate(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "memwho-man:", err)
		os.Exit(1)
	}
	stale := 0
	for _, name := range sortedKeys(files) {
		path := filepath.Join(*root, name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, files[name]) {
			continue
		}
		if *check {
			fmt.Fprintln(os.Stderr, "memwho-man: stale:", name)
			stale++
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "memwho-man:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "memwho-man:", err)
			os.Exit(1)
		}
	}
	if stale > 0 {
		os.Exit(1)
	}
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// agentCommands are the commands memwho hands to memwho-agent: their
// help texts are in cmd/memwho-agent/usage.
var agentCommands = []string{"serve", "record", "leaks", "export"}

// agentDescription is memwho-agent.1's DESCRIPTION: "memwho-agent help"
// prints only the usage line and the command list.
const agentDescription = `memwho-agent holds memwho's agent and history commands. memwho runs it,
from memwho's own directory, for memwho serve, record, leaks and export;
systemd units run it directly. It is never installed with capabilities.
Each command's page is memwho-COMMAND(1).`

// generate returns every generated file by its path under root.
func generate(root string) (map[string][]byte, error) {
	memwhoCmds, err := commandList(filepath.Join(root, "cmd/memwho/main.go"))
	if err != nil {
		return nil, err
	}
	agentCmds, err := commandList(filepath.Join(root, "cmd/memwho-agent/main.go"))
	if err != nil {
		return nil, err
	}
	helpOf := func(cmd string) (string, error) {
		dir := "cmd/memwho/usage"
		if slices.Contains(agentCommands, cmd) {
			dir = "cmd/memwho-agent/usage"
		}
		b, err := os.ReadFile(filepath.Join(root, dir, cmd+".txt"))
		// The agent's texts name the default database as memwho-agent's
		// usage function does at run time.
		return strings.ReplaceAll(string(b), "{{DefaultDBHelp}}", store.DefaultDBHelp), err
	}
	summaryOf := func(cmd string) string {
		for _, list := range [][]manpage.Command{agentCmds, memwhoCmds} {
			for _, c := range list {
				if c.Name == cmd {
					return c.Summary
				}
			}
		}
		return ""
	}

	files := map[string][]byte{}
	var pages []string
	for _, c := range memwhoCmds {
		if c.Name != "report" && c.Name != "version" && c.Name != "help" {
			pages = append(pages, "memwho-"+c.Name)
		}
	}
	add := func(p manpage.Page) error {
		p.Section, p.Source, p.Manual = 1, "memwho", "memwho manual"
		t, err := manpage.Parse(p.Help)
		if err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		for _, d := range manpage.DocRefs(p.Help) {
			// The packages install every docs/*.md in docDir.
			if _, err := os.Stat(filepath.Join(root, "docs", d)); err != nil {
				return fmt.Errorf("%s: its help text names docs/%s: %w", p.Name, d, err)
			}
		}
		p.DocDir = docDir
		p.ExitStatus = exitStatus()
		p.Environment = environment(p.Name, t.Flags())
		p.Files = filesSection(p.Name, t.Flags())
		b, err := p.Roff()
		files["man/"+p.Name+".1"] = b
		return err
	}
	see := func(except string, extra ...string) []string {
		refs := []string{}
		for _, p := range append([]string{"memwho"}, pages...) {
			if p != except {
				refs = append(refs, p+"(1)")
			}
		}
		return append(refs, extra...)
	}

	var table []tableEntry
	report, err := helpOf("report")
	if err != nil {
		return nil, err
	}
	if err := add(manpage.Page{
		Name:     "memwho",
		Summary:  strings.TrimSuffix(summaryOf("report"), " (the default)"),
		Help:     report,
		Commands: memwhoCmds,
		SeeAlso:  see("memwho", "memwho-agent(1)"),
	}); err != nil {
		return nil, err
	}
	for _, c := range memwhoCmds {
		if c.Name == "version" || c.Name == "help" {
			table = append(table, tableEntry{Name: c.Name, Summary: c.Summary})
			continue
		}
		help, err := helpOf(c.Name)
		if err != nil {
			return nil, err
		}
		t, err := manpage.Parse(help)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		table = append(table, tableEntry{Name: c.Name, Summary: c.Summary, Flags: t.Flags()})
		if c.Name == "report" {
			continue
		}
		var extra []string
		if slices.Contains(agentCommands, c.Name) {
			extra = []string{"memwho-agent(1)"}
		}
		if err := add(manpage.Page{
			Name:    "memwho-" + c.Name,
			Summary: strings.TrimSuffix(summaryOf(c.Name), " (memwho-agent)"),
			Help:    help,
			SeeAlso: see("memwho-"+c.Name, extra...),
		}); err != nil {
			return nil, err
		}
	}
	var agentSee []string
	for _, c := range agentCommands {
		agentSee = append(agentSee, "memwho-"+c+"(1)")
	}
	if err := add(manpage.Page{
		Name:     "memwho-agent",
		Summary:  "memwho's agent and history commands",
		Help:     "Usage: memwho-agent COMMAND [flags]\n\n" + agentDescription + "\n",
		Commands: agentCmds,
		SeeAlso:  append([]string{"memwho(1)"}, agentSee...),
	}); err != nil {
		return nil, err
	}
	files["cmd/memwho/completion_table.go"], err = completionTable(table)
	return files, err
}

type tableEntry struct {
	Name, Summary string
	Flags         []manpage.Flag
}

// completionTable writes the Go source of memwho's completion table.
func completionTable(cmds []tableEntry) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by memwho-man from the usage texts; DO NOT EDIT.\n\npackage main\n\nimport \"github.com/memwho/memwho/internal/completion\"\n\n")
	b.WriteString("// completionCommands are memwho's commands and memwho-agent's (which\n// memwho runs), with the flags their --help texts list.\n")
	b.WriteString("var completionCommands = []completion.Command{\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "{Name: %q, Summary: %q, Flags: []completion.Flag{\n", c.Name, c.Summary)
		for _, f := range c.Flags {
			names := make([]string, len(f.Names))
			for i, n := range f.Names {
				names[i] = strconv.Quote(n)
			}
			values, users := flagValues(f)
			fmt.Fprintf(&b, "{Names: []string{%s}, Arg: %q, Help: %q", strings.Join(names, ", "), f.Arg, f.Help)
			if len(values) > 0 {
				fmt.Fprintf(&b, ", Values: %#v", values)
			}
			if users {
				b.WriteString(", Users: true")
			}
			b.WriteString("},\n")
		}
		b.WriteString("}},\n")
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

// commandList reads the Name and Summary literals of the commandList
// variable in a command's main.go, the list its help command prints.
func commandList(path string) ([]manpage.Command, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	var list []manpage.Command
	var ferr error
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "commandList" || len(vs.Values) != 1 {
			return true
		}
		lit, ok := vs.Values[0].(*ast.CompositeLit)
		if !ok {
			ferr = errors.New("commandList is not a composite literal")
			return false
		}
		for _, e := range lit.Elts {
			c, err := command(e)
			if err != nil {
				ferr = fmt.Errorf("%s: commandList: %w", path, err)
				return false
			}
			list = append(list, c)
		}
		return false
	})
	if ferr == nil && len(list) == 0 {
		ferr = fmt.Errorf("%s: no commandList", path)
	}
	return list, ferr
}

// command reads one {Name: "...", Summary: "..."} element of a command list.
func command(e ast.Expr) (manpage.Command, error) {
	var c manpage.Command
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return c, errors.New("an element is not a composite literal")
	}
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			return c, errors.New("an element's fields are not keyed")
		}
		key, ok1 := kv.Key.(*ast.Ident)
		val, ok2 := kv.Value.(*ast.BasicLit)
		if !ok1 || !ok2 || val.Kind != token.STRING {
			return c, errors.New("a field is not a string literal")
		}
		s, err := strconv.Unquote(val.Value)
		if err != nil {
			return c, err
		}
		switch key.Name {
		case "Name":
			c.Name = s
		case "Summary":
			c.Summary = s
		}
	}
	if c.Name == "" || c.Summary == "" {
		return c, fmt.Errorf("an element lacks its Name or Summary: %+v", c)
	}
	return c, nil
}
