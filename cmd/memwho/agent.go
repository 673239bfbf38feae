package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/memwho/memwho/internal/privilege"
)

// agentBinary is the program that holds serve, record, leaks, export
// and diff --since.
const agentBinary = "memwho-agent"

// execAgent replaces this process with memwho-agent; tests replace it.
var execAgent = func(path string, argv []string) error {
	return syscall.Exec(path, argv, os.Environ())
}

// runAgent hands the agent and history command name to memwho-agent, found
// beside this executable. What that program may do is decided as for any
// program the user runs: when this exec of memwho gained privilege (file
// capabilities or setuid: AT_SECURE), every capability is given up first,
// and no_new_privs keeps the exec from gaining any. leaks, export and diff (--since) never keep one, as before the
// split. serve and
// record started by root or by a unit with ambient capabilities keep
// those, as memwho-agent's own policy expects (privilege.ScanPolicy).
func runAgent(name string, args []string) error {
	if privilege.SecureExec() || name == "leaks" || name == "export" || name == "diff" {
		if err := privilege.Drop(); err != nil {
			return err
		}
	}
	if privilege.Elevated() {
		// Set at start-up, except where memwho may still start its
		// reader (privilege.Separated): memwho-agent gains nothing
		// from its exec.
		if err := privilege.NoNewPrivs(); err != nil {
			return err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%s: cannot find memwho's own directory: %w", name, err)
	}
	path := filepath.Join(filepath.Dir(self), agentBinary)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s is a command of %s, which is not installed beside %s (go build -o %s ./cmd/memwho-agent)", name, agentBinary, self, filepath.Dir(self))
	}
	argv := append([]string{agentBinary, name}, args...)
	if err := execAgent(path, argv); err != nil {
		return fmt.Errorf("%s: run %s: %w", name, path, err)
	}
	return nil
}
