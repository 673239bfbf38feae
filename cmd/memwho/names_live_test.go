package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
)

// TestLiveCodeOnCommandLineNames: interpreters run with code on their
// command line through combined short options (sh -ec, bash -lc,
// python3 -uc) are named as the interpreter, as with -c alone, whatever
// the code: the name was a piece of the command string ("null [dash]",
// "import time; time.sleep(30) [python3.11]"), and every distinct
// command string became its own program. Real processes, read as a
// report reads them.
func TestLiveCodeOnCommandLineNames(t *testing.T) {
	type variant struct{ plain, combined []string }
	var cases []variant
	for _, sh := range []string{"sh", "bash"} {
		if _, err := exec.LookPath(sh); err == nil {
			cases = append(cases,
				variant{[]string{sh, "-c", "sleep 30; echo a >/dev/null"}, []string{sh, "-ec", "sleep 30; echo b >/dev/null"}},
				variant{[]string{sh, "-c", "sleep 30; echo c >/dev/null"}, []string{sh, "-euc", "sleep 30; exec 3>/tmp/x/y.sh; :"}},
			)
		}
	}
	if _, err := exec.LookPath("bash"); err == nil {
		cases = append(cases, variant{[]string{"bash", "-c", "sleep 30; true"}, []string{"bash", "-lc", "sleep 30; echo x >/dev/null"}})
	}
	// The interpreter itself, not a wrapper that execs it (pyenv's
	// shims are bash scripts).
	if out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output(); err == nil {
		py := strings.TrimSpace(string(out))
		cases = append(cases, variant{[]string{py, "-c", "import time; time.sleep(30)"}, []string{py, "-uc", "import time; time.sleep(31)"}})
	}
	if len(cases) == 0 {
		t.Skip("no sh, bash or python3")
	}
	var cmds []*exec.Cmd
	start := func(argv []string) int {
		c := exec.Command(argv[0], argv[1:]...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
		return c.Process.Pid
	}
	t.Cleanup(func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	})
	type pair struct{ plain, combined int }
	var pids []pair
	var list []string
	for _, v := range cases {
		p := pair{start(v.plain), start(v.combined)}
		pids = append(pids, p)
		list = append(list, strconv.Itoa(p.plain), strconv.Itoa(p.combined))
	}
	// Each process must have been exec'd (until then it is this test's
	// copy, named as the test binary).
	var names map[int]string
	for deadline := time.Now().Add(10 * time.Second); ; {
		names = reportNames(t, strings.Join(list, ","))
		execd := len(names) == len(list)
		for _, n := range names {
			execd = execd && !strings.Contains(n, "memwho")
		}
		if execd || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i, p := range pids {
		plain, combined := names[p.plain], names[p.combined]
		if plain == "" || combined != plain {
			t.Errorf("%q is named %q; %q is named %q: want the same, the interpreter's", cases[i].combined, combined, cases[i].plain, plain)
		}
		if strings.ContainsAny(combined, ";()/ ") {
			t.Errorf("%q is named by its command string: %q", cases[i].combined, combined)
		}
	}
}

// reportNames runs memwho --by pid --json on pids and returns each
// process's program name, from a second run grouped by program.
func reportNames(t *testing.T, pids string) map[int]string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args := []string{"--fresh", "-p", pids, "--json"}
	if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("memwho %q: exit %d: %s", args, code, stderr.String())
	}
	var out struct {
		Groups []struct {
			Key  string `json:"key"`
			PIDs []int  `json:"pids"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	names := map[int]string{}
	for _, g := range out.Groups {
		for _, pid := range g.PIDs {
			names[pid] = g.Key
		}
	}
	return names
}
