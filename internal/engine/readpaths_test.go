package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/sample"
)

// TestReadPaths checks the tables of read.go's comment against the code:
// each read path is a method of Engine that readOnce calls, in the
// table's order; each state is named, and has a row in the table of
// states across ticks whose listed and counted columns are tally's.
func TestReadPaths(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "read.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var table []string
	for _, row := range commentTable(f, "path          taken when") {
		table = append(table, row[0])
	}
	if len(table) < 4 {
		t.Fatalf("no table of read paths in read.go's comments (found %v)", table)
	}
	methods := map[string]*ast.FuncDecl{}
	var files []*ast.File
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
				methods[fn.Name.Name] = fn
			}
		}
	}
	once := methods["readOnce"]
	if once == nil {
		t.Fatal("no readOnce")
	}
	// The order readOnce calls the paths in.
	var calls []string
	ast.Inspect(once.Body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "read") {
				calls = append(calls, sel.Sel.Name)
			}
		}
		return true
	})
	k := 0
	for _, path := range table {
		if methods[path] == nil {
			t.Errorf("the table names %s, which is no method", path)
			continue
		}
		for k < len(calls) && calls[k] != path {
			k++
		}
		if k == len(calls) {
			t.Errorf("readOnce does not call %s after the paths above it in the table (calls %v)", path, calls)
		}
	}
	// Every constant of type state, from the block that declares them.
	var states []string
	for _, file := range files {
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST || len(g.Specs) == 0 {
				continue
			}
			if v := g.Specs[0].(*ast.ValueSpec); v.Type == nil || v.Type.(*ast.Ident).Name != "state" {
				continue
			}
			for _, sp := range g.Specs {
				for _, n := range sp.(*ast.ValueSpec).Names {
					states = append(states, n.Name)
				}
			}
		}
	}
	if len(states) < 8 {
		t.Fatalf("found the states %v: fewer than there are", states)
	}
	// The table of states across ticks: every state has a row, and its
	// listed and counted columns are what tally does (the constants are
	// iota, in the order of their block).
	rows := map[string][]string{}
	for _, row := range commentTable(f, "state        listed  counted") {
		if len(row) < 4 {
			t.Errorf("the table of states across ticks has a short row %q", row)
			continue
		}
		rows[row[0]] = row[1:3]
	}
	for v, name := range states {
		row, ok := rows[name]
		if !ok {
			t.Errorf("the table of states across ticks has no row for %s", name)
			continue
		}
		var snap sample.Snapshot
		keep, _ := tally(&snap, state(v))
		if want := row[0] == "yes"; keep != want {
			t.Errorf("%s: the table says listed %s, tally keeps %v", name, row[0], keep)
		}
		counted := "-"
		for field, n := range map[string]int{"Gone": snap.Gone, "Denied": snap.Denied, "Kernel": snap.Kernel, "Broken": snap.Broken, "Malformed": snap.Malformed} {
			if n != 0 {
				counted = field
			}
		}
		if counted != row[1] {
			t.Errorf("%s: the table says counted %s, tally counts %s", name, row[1], counted)
		}
	}
	if len(rows) != len(states) {
		t.Errorf("the table of states across ticks has %d rows for %d states", len(rows), len(states))
	}
	for _, st := range states {
		found := false
		for _, cg := range f.Comments {
			if strings.Contains(cg.Text(), st) {
				found = true
			}
		}
		if !found {
			t.Errorf("read.go's comment does not say what %s means", st)
		}
	}
}

// commentTable returns the rows, split into fields, of the table in f's
// comments whose header line starts with header: the lines after it, up
// to the first empty one.
func commentTable(f *ast.File, header string) [][]string {
	var rows [][]string
	for _, cg := range f.Comments {
		text := cg.Text()
		i := strings.Index(text, header)
		if i < 0 {
			continue
		}
		for _, line := range strings.Split(text[i:], "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) == 0 {
				break
			}
			rows = append(rows, fields)
		}
	}
	return rows
}
