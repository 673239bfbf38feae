package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script/*.txtar")

func TestMain(m *testing.M) {
	// Tests walk /proc unless they name an agent socket themselves.
	defaultAgentSocket = ""
	testscript.Main(m, map[string]func(){
		"memwho": func() {
			os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
		},
	})
}

// TestScript runs the CLI scenarios in testdata/script. Each scenario
// unpacks fake /proc trees captured from a real kernel
// (internal/proc/testdata) with "unpack NAME DIR" and runs memwho on them.
func TestScript(t *testing.T) {
	fixtures, err := filepath.Abs("../../internal/proc/testdata")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"unpack": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 2 {
					ts.Fatalf("usage: unpack FIXTURE DIR")
				}
				a, err := txtar.ParseFile(filepath.Join(fixtures, args[0]+".txtar"))
				ts.Check(err)
				ts.Check(proctest.Unpack(a, ts.MkAbs(args[1])))
			},
		},
	})
}
