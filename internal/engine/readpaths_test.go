package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestReadPaths checks the table of read paths in read.go's comment
// against the code: each path is a method of Engine that readOnce calls,
// in the table's order, and each state the comment names is one.
func TestReadPaths(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "read.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var table []string
	for _, cg := range f.Comments {
		text := cg.Text()
		i := strings.Index(text, "path          taken when")
		if i < 0 {
			continue
		}
		for _, line := range strings.Split(text[i:], "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) == 0 {
				break
			}
			table = append(table, fields[0])
		}
	}
	if len(table) < 4 {
		t.Fatalf("no table of read paths in read.go's comments (found %v)", table)
	}
	methods := map[string]*ast.FuncDecl{}
	pkgs, err := parser.ParseDir(fset, ".", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range pkgs["engine"].Files {
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
	for _, file := range pkgs["engine"].Files {
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
