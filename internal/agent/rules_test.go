package agent

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/proc/proctest"
)

// TestRules checks contrib/memwho-rules.yml, the fleet's recording and
// alerting rules: every metric they read is one the agent serves, every
// series they read is recorded by them or served, promtool accepts them
// (check rules) and their unit tests pass (test rules,
// contrib/memwho-rules.test.yml: a leaking host alerts, a steady one
// does not, the fleet's growth per program adds up).
func TestRules(t *testing.T) {
	b, err := os.ReadFile("../../contrib/memwho-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	root := proctest.Root(t, "testdata/sockets.txtar")
	a := newAgent(t, Options{Engine: engine.Options{FS: fstest.Open(t, root), Conns: true}})
	served := map[string]bool{}
	for _, l := range strings.Split(string(a.WriteMetrics(nil)), "\n") {
		if f, ok := strings.CutPrefix(l, "# TYPE "); ok {
			served[strings.Fields(f)[0]] = true
		}
	}
	recorded := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*- record: (\S+)`).FindAllStringSubmatch(string(b), -1) {
		recorded[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*expr: (.*)$`).FindAllStringSubmatch(string(b), -1) {
		for _, name := range regexp.MustCompile(`\bmemwho[:_][a-z0-9_:]+`).FindAllString(m[1], -1) {
			if !served[name] && !recorded[name] {
				t.Errorf("rules read %s, which the agent does not serve and no rule records", name)
			}
		}
	}
	// The dashboard's Fleet row reads what the rules record.
	dash, err := os.ReadFile("../../contrib/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range regexp.MustCompile(`\bmemwho:[a-z0-9_:]+`).FindAllString(string(dash), -1) {
		if !recorded[name] {
			t.Errorf("the dashboard reads %s, which no rule records", name)
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus): rules not checked")
	}
	if msg, err := exec.Command(promtool, "check", "rules", "../../contrib/memwho-rules.yml").CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, msg)
	}
	cmd := exec.Command(promtool, "test", "rules", "memwho-rules.test.yml")
	cmd.Dir = "../../contrib"
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, msg)
	}
}
