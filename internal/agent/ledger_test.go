package agent

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestOneLedger: the agent's ledger is the report's, line by line and
// by the same names, and memwho_unaccounted_memory_bytes is its "not
// accounted". It was memwho_host_memory_used_bytes minus the processes'
// PSS, another figure than the report's under the same word, and no
// ledger line (zram, zswap, slab, page tables) was exported.
func TestOneLedger(t *testing.T) {
	for _, fx := range []string{"../proc/testdata/swap.txtar", "../proc/testdata/basic.txtar", "../proc/testdata/hugetlb.txtar"} {
		t.Run(fx, func(t *testing.T) {
			root := proctest.Root(t, fx)
			a := newAgent(t, Options{Engine: engine.Options{FS: fstest.Open(t, root)}})
			p := expfmt.NewTextParser(model.LegacyValidation)
			fams, err := p.TextToMetricFamilies(bytes.NewReader(a.WriteMetrics(nil)))
			if err != nil {
				t.Fatal(err)
			}
			metric := map[string]int64{}
			for _, name := range []string{"memwho_ledger_bytes", "memwho_ledger_not_summed_bytes"} {
				if fams[name] == nil {
					t.Fatalf("no %s", name)
				}
				for _, m := range fams[name].GetMetric() {
					labels := map[string]string{}
					for _, l := range m.GetLabel() {
						labels[l.GetName()] = l.GetValue()
					}
					metric[name+" "+labels["ledger"]+" "+labels["line"]] = int64(m.GetGauge().GetValue())
				}
			}

			// The report of the same tree, as memwho --json --system
			// writes it.
			e, err := engine.New(engine.Options{FS: fstest.Open(t, root), OneShot: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var snap sample.Snapshot
			if err := e.Scan(&snap); err != nil {
				t.Fatal(err)
			}
			groups := sample.GroupProcs(snap.Procs, sample.ByProgram, nil)
			var out bytes.Buffer
			if err := report.JSON(&out, groups, sample.Total(groups), &snap, report.Options{System: true}); err != nil {
				t.Fatal(err)
			}
			type line struct {
				Name  string `json:"name"`
				Bytes int64  `json:"bytes"`
			}
			var r struct {
				System struct {
					Ledger     []line `json:"ledger"`
					SwapLedger []line `json:"swap_ledger"`
					SwapAlso   []line `json:"swap_also"`
				} `json:"system"`
			}
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			want := map[string]int64{}
			for _, l := range r.System.Ledger {
				want["memwho_ledger_bytes ram "+l.Name] = l.Bytes
			}
			for _, l := range r.System.SwapLedger {
				want["memwho_ledger_bytes swap "+l.Name] = l.Bytes
			}
			for _, l := range r.System.SwapAlso {
				want["memwho_ledger_not_summed_bytes swap "+l.Name] = l.Bytes
			}
			if len(want) < 20 || len(metric) != len(want) {
				t.Errorf("%d ledger series, the report has %d lines", len(metric), len(want))
			}
			for k, v := range want {
				if got, ok := metric[k]; !ok || got != v {
					t.Errorf("%s = %d (present %v), the report's %d", k, got, ok, v)
				}
			}
			rest := r.System.Ledger[len(r.System.Ledger)-1]
			if rest.Name != "not accounted" {
				t.Fatalf("the report's last line is %q", rest.Name)
			}
			un := fams["memwho_unaccounted_memory_bytes"].GetMetric()[0].GetGauge().GetValue()
			if int64(un) != rest.Bytes {
				t.Errorf("memwho_unaccounted_memory_bytes %v, the report's not accounted %d", un, rest.Bytes)
			}
		})
	}
}
