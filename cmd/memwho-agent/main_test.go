package main

import (
	"flag"
	"testing"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/cli/clitest"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script/*.txtar and the golden files")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		// memwho runs memwho-agent for these commands with the same
		// arguments (cmd/memwho/agent.go), so the scripts spell them
		// as users do.
		//
		// cli.Main, as main runs it: it starts the runtime's poller
		// first, whose two descriptors record's free-descriptor
		// check counts (without it the scripts' record would pass
		// that check with two descriptors fewer than the installed
		// binary, and fail opening /proc instead).
		"memwho":       func() { cli.Main(run) },
		"memwho-agent": func() { cli.Main(run) },
	})
}

// TestScript runs the CLI scenarios in testdata/script. Each scenario
// unpacks fake /proc trees captured from a real kernel
// (internal/proc/testdata) with "unpack NAME DIR" and runs memwho on them.
func TestScript(t *testing.T) { clitest.Scripts(t, "testdata/script", *update) }

// TestRecordNoFileCheck runs the scripts in testdata/nofile: record's
// open-file check under a limit whose descriptors are mostly taken
// already.
func TestRecordNoFileCheck(t *testing.T) { clitest.Scripts(t, "testdata/nofile", false) }

// TestRecordNoFreeDescriptor runs the scripts in testdata/nofree: record
// with no descriptor free at all.
func TestRecordNoFreeDescriptor(t *testing.T) { clitest.Scripts(t, "testdata/nofree", false) }
