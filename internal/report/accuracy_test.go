package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/sample"
)

// The machine-readable outputs say what their figures are: which are
// estimates, where swap came from, and only what was counted.

// TestSwapSource: swap_source says "swap" only for a swap figure
// with something counted in full, the rows the table marks; it said so
// for any group holding an estimate, even with 0 B of swap on a host
// with no swap at all.
func TestSwapSource(t *testing.T) {
	for _, c := range []struct {
		name string
		g    sample.Group
		want string
	}{
		{"exact", sample.Group{Swap: 5}, "swap_pss"},
		{"estimate with no swap", sample.Group{Estimated: 1, EstimatedNoSwap: 1}, "swap_pss"},
		{"estimate with swap", sample.Group{Estimated: 2, EstimatedNoSwap: 1, Swap: 5}, "swap"},
		{"no SwapPss line, no swap", sample.Group{SwapPssMissing: true}, "swap_pss"},
		{"no SwapPss line, swap", sample.Group{SwapPssMissing: true, Swap: 5}, "swap"},
	} {
		if got := swapSource(&c.g); got != c.want {
			t.Errorf("%s: swapSource = %q, want %q", c.name, got, c.want)
		}
		_, swap := marks(&c.g)
		if marked := swap != 0; marked != (c.want == "swap") {
			t.Errorf("%s: table swap mark %q disagrees with swap_source %q", c.name, swap, c.want)
		}
	}
}

// TestSystemJSONAccuracy: with --system and a filter that keeps
// only exact rows while other processes are estimates, the table marks
// the ledger's process lines ~ but the JSON said nothing: total.accuracy
// is of the rows. The system block now carries process_accuracy and each
// ledger line its accuracy, the lines the table marks.
func TestSystemJSONAccuracy(t *testing.T) {
	row := sample.Group{Key: "memwho-load", Count: 1, RAM: 10 << 20, Private: 10 << 20}
	host := sample.Group{Count: 3, RAM: 80 << 20, Private: 50 << 20, Shared: 30 << 20, Estimated: 2, EstimatedNoSwap: 2}
	snap := &sample.Snapshot{MeminfoOK: true, Meminfo: sample.Meminfo{
		MemTotal: 1 << 30, MemFree: 512 << 20, MemAvailable: 768 << 20, Cached: 100 << 20,
		SwapTotal: 1 << 30, SwapFree: 1 << 30,
	}}
	var buf bytes.Buffer
	opt := Options{By: "program", System: true, Host: &host}
	if err := JSON(&buf, []sample.Group{row}, row, snap, opt); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Total  struct{ Accuracy string }
		System struct {
			ProcessAccuracy           string `json:"process_accuracy"`
			ProcessSwapSource         string `json:"process_swap_source"`
			ProcessEstimatedProcesses int    `json:"process_estimated_processes"`
			Ledger                    []struct{ Name, Accuracy string }
			SwapLedger                []struct{ Name, Accuracy string } `json:"swap_ledger"`
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
	if doc.Total.Accuracy != "exact" {
		t.Errorf("total accuracy = %q, want exact (the rows shown)", doc.Total.Accuracy)
	}
	if s := doc.System; s.ProcessAccuracy != "estimate" || s.ProcessEstimatedProcesses != 2 || s.ProcessSwapSource != "swap_pss" {
		t.Errorf("system: process_accuracy %q, estimated %d, swap source %q; want estimate, 2, swap_pss",
			s.ProcessAccuracy, s.ProcessEstimatedProcesses, s.ProcessSwapSource)
	}
	for i, l := range doc.System.Ledger {
		want := "exact"
		if strings.HasPrefix(l.Name, "processes:") || i == len(doc.System.Ledger)-1 {
			want = "estimate"
		}
		if l.Accuracy != want {
			t.Errorf("ledger line %q: accuracy %q, want %q", l.Name, l.Accuracy, want)
		}
	}
	// No estimated process had swap: the swap ledger is exact.
	for _, l := range doc.System.SwapLedger {
		if l.Accuracy != "exact" {
			t.Errorf("swap ledger line %q: accuracy %q, want exact", l.Name, l.Accuracy)
		}
	}
}
