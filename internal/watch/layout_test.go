//go:build !notui

package watch

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/term"
)

// The live view's cut (cutKeepingPID), layout and total's label, and
// watch --plain's warnings (rows in docs/safe.md).

// TestCutKeepingPID: the PID kept is always the key's last
// " [digits]", the one memwho appended: a name that ends in " [123]"
// itself cannot push it out or stand in for it; the result never passes
// width when there is room for the PID and a cell of name; a key that
// is no by-pid key is left for the caller.
func TestCutKeepingPID(t *testing.T) {
	for _, tc := range []struct {
		key   string
		width int
		want  string
	}{
		{"x [123] [456]", 20, "x [123] [456]"},                     // fits: as it is
		{"aaaaaaaaaa [1] [456]", 12, "aaaaa… [456]"},               // the forged [1] is cut, the real PID kept
		{"sshd [1] [4242]", 12, "sshd… [4242]"},                    // a name posing as another process
		{"[[[[[[[[[[[[[[ [7]", 8, "[[[… [7]"},                      // a name full of "["
		{"a [7]", 3, "a [7]"},                                      // too narrow: for the caller
		{"abcdef [12345]", 9, "abcdef [12345]"},                    // room 1: for the caller
		{"abcdef [12345]", 10, "a… [12345]"},                       // room 2
		{"name [12a]", 5, "name [12a]"},                            // not digits
		{"name [123] ", 5, "name [123] "},                          // not at the end
		{"name[123]", 5, "name[123]"},                              // no space
		{"name []", 5, "n… []"},                                    // no digits: cut as a PID (no key ends so)
		{"日本語日本語日本語 [42]", 10, "日本… [42]"},                         // wide characters
		{"a\u200bb\u200bc\u200bd\u200be\u200bf [42]", 8, ""},       // zero-width: checked for width only
		{"x [1]", 0, "x [1]"},                                      // width 0
		{"x [1]", -5, "x [1]"},                                     // negative
		{"name ] [9]", 7, "na… [9]"},                               // a "]" inside
		{" [99999999999999999999]", 10, " [99999999999999999999]"}, // a PID wider than the column
	} {
		got := cutKeepingPID(tc.key, tc.width)
		if tc.want != "" && got != tc.want {
			t.Errorf("cutKeepingPID(%q, %d) = %q, want %q", tc.key, tc.width, got, tc.want)
		}
		if got != tc.key {
			if term.Width(got) > tc.width {
				t.Errorf("cutKeepingPID(%q, %d) = %q: %d cells", tc.key, tc.width, got, term.Width(got))
			}
			pid := tc.key[strings.LastIndex(tc.key, " ["):]
			if !strings.HasSuffix(got, pid) {
				t.Errorf("cutKeepingPID(%q, %d) = %q: lost %q", tc.key, tc.width, got, pid)
			}
		}
	}
}

// TestForgedPID: by pid, on every width from 1 to 100, a process
// whose name ends in another's " [PID]" never shows that PID as its own:
// its line ends with its own PID whenever any PID is shown whole, and no
// line passes the width. Names full of "[" and wide characters too.
func TestForgedPID(t *testing.T) {
	procs := []proc{
		{pid: 1, name: "init", ram: constant(5 * miB)},
		{pid: 4242, name: "sshd [1]", ram: constant(50 * miB)},
		{pid: 4343, name: strings.Repeat("[", 40) + " [1]", ram: constant(40 * miB)},
		{pid: 4444, name: "日本語の名前 [1]", ram: constant(30 * miB)},
		{pid: 4545, name: "x [1]\u200b", ram: constant(20 * miB)},
	}
	for w := 1; w <= 100; w++ {
		m := NewModel(nil, Options{Interval: time.Second})
		m, _ = m.Update(SizeMsg{Width: w, Height: 12})
		for i := range 3 {
			m.Add(snapshot(i, time.Second, procs))
		}
		m, _ = press(m, "G")
		screen := m.View()
		for i, l := range strings.Split(screen, "\n") {
			if n := term.Width(l); n > w {
				t.Errorf("width %d: line %d is %d cells: %q", w, i+1, n, l)
			}
			// The forgers' lines (by their RAM) never end in PID 1.
			for _, ram := range []string{"50.0 MiB", "40.0 MiB", "30.0 MiB", "20.0 MiB"} {
				if strings.Contains(l, ram) && strings.HasSuffix(l, " [1]") {
					t.Errorf("width %d: a forger shows PID 1 as its own: %q", w, l)
				}
			}
		}
	}
}

// TestLayoutEveryWidth: on every width (zero and negative too), for every
// sort and grouping, the name keeps at least a cell; Change and MiB/min
// are shown only while the name keeps narrowNameWidth, the sorted one
// kept last; the columns never pass the width while it holds RAM and a
// name of narrowNameWidth.
func TestLayoutEveryWidth(t *testing.T) {
	for _, by := range []sample.By{sample.ByProgram, sample.ByPID, sample.ByUser} {
		for _, sk := range []SortKey{SortRAM, SortRate, SortChange, SortName} {
			for _, conns := range []bool{false, true} {
				for w := -3; w <= 200; w++ {
					shown, nameW := layout(w, by, conns, sk)
					if nameW < 1 || !shown[colName] || !shown[colRAM] {
						t.Fatalf("layout(%d, %v, %v, %v): name %d, shown %v", w, by, conns, sk, nameW, shown)
					}
					used := 0
					for c := range numCols {
						if shown[c] && c != colName {
							used += colDefs[c].width + 1
						}
					}
					if used+nameW != w && w >= colDefs[colRAM].width+1+1 {
						t.Errorf("layout(%d, %v, %v, %v): columns %d + name %d", w, by, conns, sk, used, nameW)
					}
					if (shown[colChange] || shown[colRate]) && nameW < narrowNameWidth {
						t.Errorf("layout(%d, %v, %v, %v): Change or MiB/min with a name of %d", w, by, conns, sk, nameW)
					}
					// The preferred of the two (the sorted one,
					// else Change) gives way only where it does
					// not fit beside RAM and a name of
					// narrowNameWidth; the other may then take
					// the room (MiB/min is narrower).
					pref := colChange
					if sk == SortRate {
						pref = colRate
					}
					if !shown[pref] && colDefs[colRAM].width+1+colDefs[pref].width+1+narrowNameWidth <= w {
						t.Errorf("layout(%d, sort %v): %s dropped where it fits", w, sk, colDefs[pref].title)
					}
				}
			}
		}
	}
}

// TestTotalLabel: the total's label, with rows hidden above and
// below, on every width from 1 to 90 and scroll position: no line passes
// the width, the label keeps "total", and no panic (the label takes the
// blank columns' room: buf is cut, nameW recomputed).
func TestTotalLabel(t *testing.T) {
	for w := 1; w <= 90; w++ {
		for _, keys := range [][]string{nil, {"down", "down"}, {"end"}, {"end", "up"}, {"G", "down"}, {"t", "down"}} {
			m := testModel(t, w, 8, 20, Options{})
			m, _ = press(m, keys...)
			lines := strings.Split(m.View(), "\n")
			for i, l := range lines {
				if n := term.Width(l); n > w {
					t.Errorf("width %d %v: line %d is %d cells: %q", w, keys, i+1, n, l)
				}
			}
			last := lines[len(lines)-1]
			if w >= 20 && !strings.Contains(last, "total") {
				t.Errorf("width %d %v: the total line lost its label: %q", w, keys, last)
			}
		}
	}
}

// deniedSampler is seqSampler with estimates refused (CauseDenied), as a
// user's scan of another user's process.
type deniedSampler struct{ seqSampler }

func (s *deniedSampler) Scan(snap *sample.Snapshot) error {
	if err := s.seqSampler.Scan(snap); err != nil {
		return err
	}
	for i := range snap.Procs {
		if snap.Procs[i].Accuracy == sample.Estimate {
			snap.Procs[i].Cause = sample.CauseDenied
		}
	}
	return nil
}

// TestPlainWarnShown: watch --plain's warnings count the rows
// shown. A filter that keeps no row gives warn an empty list, not nil
// (which report.Warn reads as every process): no warning about rows not
// shown; a filter that keeps the refused one warns of it alone.
func TestPlainWarnShown(t *testing.T) {
	procs := []proc{
		{pid: 1, name: "mine", ram: constant(10 * miB)},
		{pid: 2, name: "theirs", est: true, ram: constant(20 * miB)},
		{pid: 3, name: "theirs-too", est: true, ram: constant(20 * miB)},
	}
	for _, tc := range []struct {
		filter string
		want   string // "" for no warning
	}{
		{"^nothing-matches$", ""},
		{"^mine$", ""},
		{"^theirs$", "1 of 1 processes are RSS-based estimates"},
		{"theirs", "2 of 2 processes are RSS-based estimates"},
		{".", "2 of 3 processes are RSS-based estimates"},
	} {
		var out, stderr bytes.Buffer
		calls := 0
		err := RunPlain(context.Background(), &out, &deniedSampler{seqSampler{procs: procs}}, Options{
			Interval: time.Millisecond, Count: 2, Filter: regexp.MustCompile(tc.filter),
		}, func(snap *sample.Snapshot, shown []sample.Group) {
			calls++
			if shown == nil {
				t.Errorf("filter %q: warn given nil groups (every process)", tc.filter)
			}
			report.Warn(&stderr, snap, snap.Procs, shown, false, report.ScannerSelf)
		})
		if err != nil {
			t.Fatal(err)
		}
		if calls != 1 {
			t.Errorf("filter %q: warn called %d times", tc.filter, calls)
		}
		got := stderr.String()
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("filter %q: warnings %q, want %q", tc.filter, got, tc.want)
		}
		if strings.Count(got, "\n") > 2 {
			t.Errorf("filter %q: %d warning lines: %q", tc.filter, strings.Count(got, "\n"), got)
		}
	}
}
