package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

func TestDiffRender(t *testing.T) {
	changes := sample.Diff(
		[]sample.Group{{Key: "web", RAM: 1 << 20, Count: 1}, {Key: "\x1b[2Jevil\n", RAM: 4096, Count: 1, Estimated: 1}},
		[]sample.Group{{Key: "web", RAM: 3 << 20, Swap: 4096, Count: 2}})
	b := DiffSide{Name: "a.mwsnap", Taken: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	a := DiffSide{Name: "b.mwsnap", Taken: b.Taken.Add(time.Hour)}
	var tab bytes.Buffer
	if err := DiffTable(&tab, changes, b, a, "Program"); err != nil {
		t.Fatal(err)
	}
	want := `Before: a.mwsnap, 2026-11-23T10:00:00Z
After:  b.mwsnap, 2026-11-23T11:00:00Z (1h0m0s later)

  RAM before      RAM after        Change   Swap change    Procs  Change    Program
     1.0 MiB        3.0 MiB      +2.0 MiB      +4.0 KiB       1->2  grew      web
     4.0 KiB            0 B ~    -4.0 KiB           0 B       1->0  vanished  \x1b[2Jevil\n
-----------------------------------------------------------------------------------
     1.0 MiB        3.0 MiB ~    +2.0 MiB      +4.0 KiB       2->2            total
~ an estimate on one side or both (RSS-based: see memwho --help)
`
	if tab.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", tab.String(), want)
	}
	var js bytes.Buffer
	if err := DiffJSON(&js, changes, b, a, "program"); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Changes []struct {
			Key    string `json:"key"`
			Change string `json:"change"`
			Delta  int64  `json:"ram_change_bytes"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(js.Bytes(), &v); err != nil || len(v.Changes) != 2 || v.Changes[1].Key != "\x1b[2Jevil\n" || v.Changes[0].Delta != 2<<20 {
		t.Errorf("JSON %v: %+v\n%s", err, v, js.String())
	}
	if strings.ContainsRune(js.String(), 0x1b) || strings.Count(js.String(), "\n") != 1 {
		t.Errorf("JSON holds a raw escape or newline: %q", js.String())
	}
}

// TestDiffKindTableJSON: the table's change column and the JSON's
// "change" give the same word for every row, and a group whose swap or
// process count moved with RAM unchanged is not "same"; --top 1 keeps
// the largest change of RAM and swap together.
func TestDiffKindTableJSON(t *testing.T) {
	const mib = 1 << 20
	before := []sample.Group{
		{Key: "swapper", RAM: 50 * mib, Count: 1},
		{Key: "forker", RAM: 20 * mib, Count: 1},
		{Key: "steady", RAM: 10 * mib, Count: 1},
		{Key: "ramgrew", RAM: 30 * mib, Count: 1},
	}
	after := []sample.Group{
		{Key: "swapper", RAM: 50 * mib, Swap: 100 * mib, Count: 1},
		{Key: "forker", RAM: 20 * mib, Count: 2},
		{Key: "steady", RAM: 10 * mib, Count: 1},
		{Key: "ramgrew", RAM: 31 * mib, Count: 1},
	}
	side := DiffSide{Name: "x", Taken: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	for _, c := range []struct {
		name string
		top  int
		want [][2]string // key, change, in order
	}{
		{"all", 0, [][2]string{{"swapper", "grew"}, {"ramgrew", "grew"}, {"forker", "changed"}, {"steady", "same"}}},
		{"top 1", 1, [][2]string{{"swapper", "grew"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			changes := sample.Diff(before, after)
			if c.top > 0 {
				changes = changes[:c.top]
			}
			var tab, js bytes.Buffer
			if err := DiffTable(&tab, changes, side, side, "Program"); err != nil {
				t.Fatal(err)
			}
			if err := DiffJSON(&js, changes, side, side, "program"); err != nil {
				t.Fatal(err)
			}
			var v struct {
				Changes []struct{ Key, Change string }
			}
			if err := json.Unmarshal(js.Bytes(), &v); err != nil {
				t.Fatal(err)
			}
			rows := strings.Split(tab.String(), "\n")[4:] // after the title lines and the header
			if len(v.Changes) != len(c.want) {
				t.Fatalf("JSON has %d changes, want %d:\n%s", len(v.Changes), len(c.want), js.String())
			}
			for i, w := range c.want {
				if v.Changes[i].Key != w[0] || v.Changes[i].Change != w[1] {
					t.Errorf("JSON change %d = %s %s, want %s %s", i, v.Changes[i].Key, v.Changes[i].Change, w[0], w[1])
				}
				if f := strings.Fields(rows[i]); len(f) < 2 || f[len(f)-1] != w[0] || f[len(f)-2] != w[1] {
					t.Errorf("table row %d = %q, want change %s for %s", i, rows[i], w[1], w[0])
				}
			}
		})
	}
}

// TestDiffJSONKey: diff's JSON writes a key as the report's JSON does,
// key_base64 included when the key is not valid UTF-8, so that keys that
// differ only in bytes that are not UTF-8 stay apart and a diff joins
// with a report of either snapshot.
func TestDiffJSONKey(t *testing.T) {
	type key struct {
		Key       string  `json:"key"`
		KeyBase64 *string `json:"key_base64"`
	}
	exact := func(t *testing.T, k key) string {
		t.Helper()
		if k.KeyBase64 == nil {
			return k.Key
		}
		b, err := base64.StdEncoding.DecodeString(*k.KeyBase64)
		if err != nil {
			t.Fatalf("key_base64 %q: %v", *k.KeyBase64, err)
		}
		return string(b)
	}
	side := DiffSide{Name: "x", Taken: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	for _, c := range []struct {
		name   string
		keys   []string
		base64 bool // key_base64 expected
	}{
		{"plain", []string{"web"}, false},
		{"escapes, valid UTF-8", []string{"\x1b[31mevil\n\u202e"}, false},
		{"not UTF-8, differing only there", []string{"bad\xffutf8", "bad\xfeutf8"}, true},
		{"a lone continuation byte", []string{"\x80"}, true},
		{"cut inside a rune", []string{"caf\xc3"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var groups []sample.Group
			for _, k := range c.keys {
				groups = append(groups, sample.Group{Key: k, RAM: 4096, Count: 1})
			}
			var js bytes.Buffer
			if err := DiffJSON(&js, sample.Diff(groups, groups), side, side, "program"); err != nil {
				t.Fatal(err)
			}
			var diff struct{ Changes []key }
			if err := json.Unmarshal(js.Bytes(), &diff); err != nil {
				t.Fatalf("%v\n%s", err, js.String())
			}
			var rep bytes.Buffer
			if err := JSON(&rep, groups, sample.Group{}, nil, Options{}); err != nil {
				t.Fatal(err)
			}
			var report struct{ Groups []key }
			if err := json.Unmarshal(rep.Bytes(), &report); err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, ch := range diff.Changes {
				got := exact(t, ch)
				if seen[got] {
					t.Errorf("key %q twice in %s", got, js.String())
				}
				seen[got] = true
				if (ch.KeyBase64 != nil) != c.base64 {
					t.Errorf("key %q: key_base64 present %v, want %v", got, ch.KeyBase64 != nil, c.base64)
				}
				for _, g := range report.Groups {
					if exact(t, g) == got && (g.Key != ch.Key || (g.KeyBase64 == nil) != (ch.KeyBase64 == nil) ||
						g.KeyBase64 != nil && *g.KeyBase64 != *ch.KeyBase64) {
						t.Errorf("diff writes key %q as %+v, the report as %+v", got, ch, g)
					}
				}
			}
			for _, k := range c.keys {
				if !seen[k] {
					t.Errorf("key %q not recoverable from %s", k, js.String())
				}
			}
		})
	}
}

// TestDiffTableWhen: the title says how far AFTER is from BEFORE, and in
// which direction, without a minus sign when AFTER is the older file.
func TestDiffTableWhen(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	far := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	for _, c := range []struct {
		name          string
		before, after time.Time
		want          string
	}{
		{"later", t0, t0.Add(time.Hour), "(1h0m0s later)"},
		{"earlier", t0.Add(3 * time.Second), t0, "(3s earlier)"},
		{"the same second", t0, t0, "(0s later)"},
		{"under half a second earlier", t0.Add(400 * time.Millisecond), t0, "(0s later)"},
		{"earlier, rounded", t0.Add(2600 * time.Millisecond), t0, "(3s earlier)"},
		{"beyond a Duration, later", time.Time{}, far, "(over 2562047h47m16s later)"},
		{"beyond a Duration, earlier", far, time.Time{}, "(over 2562047h47m16s earlier)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			err := DiffTable(&b, nil, DiffSide{Name: "b", Taken: c.before}, DiffSide{Name: "a", Taken: c.after}, "")
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(b.String(), "\n")
			if len(lines) < 2 || !strings.HasSuffix(lines[1], " "+c.want) {
				t.Errorf("title %q, want it to end %q", lines[:2], c.want)
			}
		})
	}
}

// TestDiffJSONTime: each side's "time" is written exactly as the
// report's JSON writes the time of the same snapshot (RFC 3339 in UTC,
// whole seconds), so that the two join on it.
func TestDiffJSONTime(t *testing.T) {
	for _, c := range []struct {
		name  string
		taken time.Time
		want  string
	}{
		{"whole seconds", time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), "2026-11-23T10:00:00Z"},
		{"nanoseconds", time.Date(2026, 11, 23, 10, 0, 0, 999999999, time.UTC), "2026-11-23T10:00:00Z"},
		{"another zone", time.Date(2026, 11, 23, 11, 0, 0, 123, time.FixedZone("CET", 3600)), "2026-11-23T10:00:00Z"},
		{"the zero time", time.Time{}, "0001-01-01T00:00:00Z"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var js, rep bytes.Buffer
			side := DiffSide{Name: "x", Taken: c.taken}
			if err := DiffJSON(&js, nil, side, side, "program"); err != nil {
				t.Fatal(err)
			}
			if err := JSON(&rep, nil, sample.Group{}, &sample.Snapshot{Time: c.taken}, Options{}); err != nil {
				t.Fatal(err)
			}
			var d struct{ Before, After struct{ Time string } }
			var r struct{ Time string }
			if err := json.Unmarshal(js.Bytes(), &d); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(rep.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if d.Before.Time != c.want || d.After.Time != c.want || r.Time != c.want {
				t.Errorf("diff's times %q, %q, the report's %q; want %q", d.Before.Time, d.After.Time, r.Time, c.want)
			}
		})
	}
}

// TestDiffJSONTotal: the JSON carries the table's total row: the figures
// of a change row summed over the changes given (after --top), with the
// accuracy the table's '~' gives.
func TestDiffJSONTotal(t *testing.T) {
	const mib = 1 << 20
	changes := sample.Diff(
		[]sample.Group{{Key: "web", RAM: mib, Count: 1}, {Key: "old", RAM: 4096, Swap: 8192, Count: 1, Estimated: 1}},
		[]sample.Group{{Key: "web", RAM: 3 * mib, Swap: 4096, Count: 2}})
	type figures struct {
		RAMBefore   uint64 `json:"ram_before_bytes"`
		RAMAfter    uint64 `json:"ram_after_bytes"`
		RAMChange   int64  `json:"ram_change_bytes"`
		SwapBefore  uint64 `json:"swap_before_bytes"`
		SwapAfter   uint64 `json:"swap_after_bytes"`
		SwapChange  int64  `json:"swap_change_bytes"`
		ProcsBefore int    `json:"procs_before"`
		ProcsAfter  int    `json:"procs_after"`
		Accuracy    string `json:"accuracy"`
	}
	for _, c := range []struct {
		name    string
		changes []sample.Change
		want    figures
	}{
		{"no change", nil, figures{Accuracy: "exact"}},
		{"all", changes, figures{mib + 4096, 3 * mib, 2*mib - 4096, 8192, 4096, -4096, 2, 2, "estimate"}},
		{"top 1", changes[:1], figures{mib, 3 * mib, 2 * mib, 0, 4096, 4096, 1, 2, "exact"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			side := DiffSide{Name: "x", Taken: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
			var js, tab bytes.Buffer
			if err := DiffJSON(&js, c.changes, side, side, "program"); err != nil {
				t.Fatal(err)
			}
			if err := DiffTable(&tab, c.changes, side, side, "Program"); err != nil {
				t.Fatal(err)
			}
			var v struct {
				Changes []json.RawMessage
				Total   *struct {
					figures
					Key    *string
					Change *string
				}
			}
			if err := json.Unmarshal(js.Bytes(), &v); err != nil {
				t.Fatalf("%v\n%s", err, js.String())
			}
			if v.Total == nil {
				t.Fatalf("no total:\n%s", js.String())
			}
			if v.Total.figures != c.want || v.Total.Key != nil || v.Total.Change != nil {
				t.Errorf("total %+v, want %+v and no key or change:\n%s", v.Total.figures, c.want, js.String())
			}
			// The table's total row shows the same figures.
			b := sample.Group{RAM: c.want.RAMBefore, Swap: c.want.SwapBefore, Count: c.want.ProcsBefore}
			a := sample.Group{RAM: c.want.RAMAfter, Swap: c.want.SwapAfter, Count: c.want.ProcsAfter}
			if c.want.Accuracy == "estimate" {
				a.Estimated = 1
			}
			if row := string(diffRow(nil, b, a, "", "total")); !strings.Contains(tab.String(), "-\n"+row) {
				t.Errorf("table's total row is not %q:\n%s", row, tab.String())
			}
		})
	}
}
