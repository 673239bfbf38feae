package agent

import (
	"encoding/json"
	"fmt"
	"github.com/memwho/memwho/internal/proc/fstest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc/proctest"
)

// TestDashboard checks contrib/grafana-dashboard.json against the agent:
// every metric its queries use is one the agent serves, and every query
// is valid PromQL (promtool check rules, when installed).
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile("../../contrib/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	root := proctest.Root(t, "testdata/sockets.txtar")
	a := newAgent(t, Options{Engine: engine.Options{FS: fstest.Open(t, root), Conns: true}, TopProcesses: 1})
	out := string(a.WriteMetrics(nil))
	served := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if f, ok := strings.CutPrefix(l, "# TYPE "); ok {
			served[strings.Fields(f)[0]] = true
		}
	}
	vars := strings.NewReplacer("$topk", "10", "$instance", ".*", "$job", ".*")
	name := regexp.MustCompile(`\b(memwho|process)_[a-z_]+`)
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			expr := vars.Replace(tg.Expr)
			for _, m := range name.FindAllString(expr, -1) {
				m = strings.TrimSuffix(strings.TrimSuffix(m, "_sum"), "_count")
				if !served[m] {
					t.Errorf("panel %q uses %s, which the agent does not serve", p.Title, m)
				}
			}
			n++
			fmt.Fprintf(&rules, "      - record: dashboard:query%d\n        expr: %q\n", n, expr)
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed: PromQL syntax not checked")
	}
	f := filepath.Join(t.TempDir(), "rules.yml")
	os.WriteFile(f, []byte(rules.String()), 0o644)
	if msg, err := exec.Command(promtool, "check", "rules", f).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s\n%s", err, msg, rules.String())
	}
}
