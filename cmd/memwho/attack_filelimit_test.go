package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// checkFileLimitAttacks is the attack on the privileged
// install (file capabilities, secure mode): the user runs it under the
// lowest open-file limits a scan accepts. No crash, exit 0, the
// capability still reaches smaps_rollup (the root-owned target exact),
// and nothing skipped.
func (e *privEnv) checkFileLimitAttacks(t *testing.T) {
	t.Run("filelimit: low open-file limits in the privileged install", func(t *testing.T) {
		prlimit, err := exec.LookPath("prlimit")
		if err != nil {
			t.Skip("skipping: prlimit (util-linux) not installed")
		}
		target := strconv.Itoa(e.target)
		for _, n := range []int{16, 20, 32} {
			for _, args := range [][]string{
				{"--by", "pid", "-p", target, "--json"},
				{"--by", "pid", "-p", target, "--json", "--conns"},
				{"watch", "--plain", "--count", "2", "--interval", "10ms", "--by", "pid", "--filter", `\[` + target + `\]$`},
			} {
				c := e.cmd(args...)
				// prlimit --nofile=N:N setpriv ... memwho ...
				c.Args = append([]string{prlimit, "--nofile=" + strconv.Itoa(n) + ":" + strconv.Itoa(n), c.Path}, c.Args[1:]...)
				c.Path = prlimit
				var stdout, stderr bytes.Buffer
				c.Stdout, c.Stderr = &stdout, &stderr
				err := c.Run()
				name := strconv.Itoa(n) + " " + strings.Join(args, " ")
				all := stdout.String() + stderr.String()
				if strings.Contains(all, "fatal error") || strings.Contains(all, "goroutine ") || strings.Contains(all, "panic") {
					t.Errorf("%s: memwho died:\n%s", name, all)
					continue
				}
				var ee *exec.ExitError
				if errors.As(err, &ee) || err != nil {
					t.Errorf("%s: %v\n%s", name, err, all)
					continue
				}
				if strings.Contains(stderr.String(), "skipped") {
					t.Errorf("%s: processes skipped:\n%s", name, stderr.String())
				}
				if args[0] == "watch" {
					if got := strings.Count(stdout.String(), "["+target+"]\n"); got != 2 {
						t.Errorf("%s: %d snapshots with the target, want 2:\n%s", name, got, all)
					}
					continue
				}
				var r reportJSON
				if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
					t.Errorf("%s: JSON: %v\n%s", name, err, all)
					continue
				}
				if len(r.Groups) != 1 || r.Groups[0].Accuracy != "exact" || r.Denied != 0 {
					t.Errorf("%s: %+v, %d denied; want the target, exact:\n%s", name, r.Groups, r.Denied, stderr.String())
				}
			}
		}
	})
}
