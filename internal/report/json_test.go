package report

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The swap ledger (no swap cache line; SwapCached shown under it, not
// summed) and diff's schema (rows in docs/safe.md).

// TestSwapLedger: for hostile meminfo (SwapCached above
// SwapTotal, SwapFree above SwapTotal, huge values, no swap), the JSON
// ledgers still sum exactly to mem_total_bytes and swap_total_bytes
// (within the ledger's 2^56 cap), swap_ledger has no swap cache line and
// its last line is swap_not_in_process_bytes, swap_cached_bytes is kept;
// the table shows the cache under the remainder, once, only with swap,
// and never breaks its lines.
func TestSwapLedger(t *testing.T) {
	const capB = uint64(1) << 56
	for _, tc := range []struct {
		name                           string
		swapTotal, swapFree, swapCache uint64
		memTotal                       uint64
	}{
		{"cache within swap", 4 * gib, 3 * gib, 10 * mib, 16 * gib},
		{"cache above SwapTotal", 1 * gib, 512 * mib, 8 * gib, 16 * gib},
		{"free above total", 1 * gib, 2 * gib, 1 * mib, 16 * gib},
		{"no swap, a cache", 0, 0, 5 * mib, 16 * gib},
		{"huge cache", 4 * gib, 3 * gib, 1<<64 - 1, 16 * gib},
		{"huge everything", capB - 1, capB - 2, capB, capB - 1},
		{"zero", 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot(true)
			m := &snap.Meminfo
			m.SwapTotal, m.SwapFree, m.SwapCached, m.MemTotal = tc.swapTotal, tc.swapFree, tc.swapCache, tc.memTotal
			groups := hostileGroups()
			total := sum(groups)
			opt := Options{KeyHeader: "Program", By: "program", ShowCount: true, System: true, Host: &total}

			var jb bytes.Buffer
			if err := JSON(&jb, groups, total, snap, opt); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				System struct {
					MemTotal       uint64 `json:"mem_total_bytes"`
					SwapTotal      uint64 `json:"swap_total_bytes"`
					SwapCached     uint64 `json:"swap_cached_bytes"`
					SwapNotInProcs int64  `json:"swap_not_in_process_bytes"`
					Ledger         []struct {
						Name  string `json:"name"`
						Bytes int64  `json:"bytes"`
					} `json:"ledger"`
					SwapLedger []struct {
						Name  string `json:"name"`
						Bytes int64  `json:"bytes"`
					} `json:"swap_ledger"`
				} `json:"system"`
			}
			if err := json.Unmarshal(jb.Bytes(), &doc); err != nil {
				t.Fatalf("invalid JSON: %v\n%s", err, jb.String())
			}
			s := doc.System
			var ram, swap int64
			for _, l := range s.Ledger {
				ram += l.Bytes
			}
			for _, l := range s.SwapLedger {
				swap += l.Bytes
				if strings.Contains(l.Name, "cache") {
					t.Errorf("swap ledger line %q: the swap cache is not summed", l.Name)
				}
			}
			if want := int64(min(s.MemTotal, capB)); ram != want {
				t.Errorf("RAM ledger sums to %d, MemTotal %d", ram, s.MemTotal)
			}
			if want := int64(min(s.SwapTotal, capB)); swap != want {
				t.Errorf("swap ledger sums to %d, SwapTotal %d", swap, s.SwapTotal)
			}
			if s.SwapCached != tc.swapCache {
				t.Errorf("swap_cached_bytes %d, want %d", s.SwapCached, tc.swapCache)
			}
			if n := len(s.SwapLedger); n != 3 || s.SwapLedger[n-1].Name != "not accounted" {
				t.Errorf("swap ledger: %+v", s.SwapLedger)
			} else if tc.swapTotal < capB && s.SwapLedger[n-1].Bytes != s.SwapNotInProcs && tc.swapFree <= tc.swapTotal {
				t.Errorf("swap ledger's remainder %d, swap_not_in_process_bytes %d", s.SwapLedger[n-1].Bytes, s.SwapNotInProcs)
			}

			var tb bytes.Buffer
			if err := Table(&tb, groups, total, snap, opt); err != nil {
				t.Fatal(err)
			}
			out := tb.String()
			n := strings.Count(out, "also in RAM: swap cache")
			if want := tc.swapTotal > 0 && tc.swapCache > 0; (n == 1) != want || n > 1 {
				t.Errorf("%d swap cache lines, want one: %v\n%s", n, want, out)
			}
			if n == 1 {
				lines := strings.Split(out, "\n")
				for i, l := range lines {
					if strings.Contains(l, "also in RAM: swap cache") {
						if !strings.Contains(lines[i-1], "not accounted") || !strings.Contains(lines[i+1], "= total swap") {
							t.Errorf("the swap cache is not between the remainder and the total:\n%s\n%s\n%s", lines[i-1], l, lines[i+1])
						}
						if !strings.HasPrefix(l, "    also in RAM: swap cache   ") {
							t.Errorf("swap cache line not aligned: %q", l)
						}
					}
				}
			}
		})
	}
}

// TestDiffSchema: diff's JSON starts with its schema, once,
// whatever the grouping and the sides' names hold, and stays valid.
func TestDiffSchema(t *testing.T) {
	for _, by := range []string{"program", "", `"schema":"x"`, "a\x00\n\xff", strings.Repeat("\\", 100)} {
		var b bytes.Buffer
		side := DiffSide{Name: `"schema":"evil"` + "\x1b[31m", Taken: time.Unix(0, 0).UTC()}
		if err := DiffJSON(&b, nil, side, side, by); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.HasPrefix(out, `{"schema":"`+DiffSchema+`",`) {
			t.Errorf("by %q: %.60q does not start with the schema", by, out)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatalf("by %q: invalid JSON: %v\n%s", by, err, out)
		}
		if got, _ := strconv.Unquote(string(doc["schema"])); got != DiffSchema {
			t.Errorf("by %q: schema %s", by, doc["schema"])
		}
		if strings.Count(out, `"schema":`) != 1 {
			t.Errorf("by %q: a second \"schema\" member: %s", by, out)
		}
	}
}
