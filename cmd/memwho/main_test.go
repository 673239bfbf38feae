package main

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/memwho/memwho/internal/cli/clitest"
	"github.com/rogpeppe/go-internal/testscript"
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
func TestScript(t *testing.T) { clitest.Scripts(t, "testdata/script", *update) }
