package term

import (
	"strings"
	"testing"
)

func TestScreenFrame(t *testing.T) {
	var s Screen
	lines := []string{"title", Bold + "bold" + Reset, "row 1", "row 2", "total"}
	got := string(s.Frame(nil, lines, 20, 10))
	want := "\x1b[H\x1b[2J" + "\x1b[1;1Htitle" + "\x1b[2;1H\x1b[1mbold\x1b[m" + "\x1b[3;1Hrow 1" + "\x1b[4;1Hrow 2" + "\x1b[5;1Htotal"
	if got != want {
		t.Errorf("first frame\n got %q\nwant %q", got, want)
	}

	if got := s.Frame(nil, lines, 20, 10); len(got) != 0 {
		t.Errorf("the same frame again wrote %q, want nothing", got)
	}

	// One row changed: only that row is written, then erased to its
	// end (the old text may be longer).
	lines[3] = "row 2 changed"
	if got, want := string(s.Frame(nil, lines, 20, 10)), "\x1b[4;1Hrow 2 changed\x1b[K"; got != want {
		t.Errorf("one changed row\n got %q\nwant %q", got, want)
	}

	// A row as wide as the terminal gets no erase: it would take the
	// last cell with it.
	lines[2] = strings.Repeat("数", 10)
	if got, want := string(s.Frame(nil, lines, 20, 10)), "\x1b[3;1H"+lines[2]; got != want {
		t.Errorf("full-width row\n got %q\nwant %q", got, want)
	}

	// Fewer lines: what is below the new last line is erased.
	if got, want := string(s.Frame(nil, lines[:3], 20, 10)), "\x1b[4;1H\x1b[J"; got != want {
		t.Errorf("shorter frame\n got %q\nwant %q", got, want)
	}
	// More lines again: the new ones are written.
	if got, want := string(s.Frame(nil, lines[:4], 20, 10)), "\x1b[4;1Hrow 2 changed\x1b[K"; got != want {
		t.Errorf("longer frame\n got %q\nwant %q", got, want)
	}

	// A new size: drawn in full.
	for _, size := range [][2]int{{30, 10}, {30, 12}} {
		got := string(s.Frame(nil, lines, size[0], size[1]))
		if !strings.HasPrefix(got, "\x1b[H\x1b[2J") || strings.Count(got, ";1H") != len(lines) {
			t.Errorf("resized to %d×%d: %q, want the screen cleared and %d lines", size[0], size[1], got, len(lines))
		}
	}
}

func TestWidthTruncate(t *testing.T) {
	for _, tc := range []struct {
		s      string
		width  int
		cut    int
		tail   string
		result string
	}{
		{"helper", 6, 4, "…", "hel…"},
		{"helper", 6, 6, "…", "helper"},
		{"数据库服务", 10, 5, "…", "数据…"},
		{"e\u0301tude", 5, 3, "…", "e\u0301t…"},
		{"🐘🐘🐘", 6, 4, "", "🐘🐘"},
		{Bold + "memwho" + Reset + " watch", 12, 4, "", Bold + "memw" + Reset},
		{"x", 1, 0, "", ""},
	} {
		if w := Width(tc.s); w != tc.width {
			t.Errorf("Width(%q) = %d, want %d", tc.s, w, tc.width)
		}
		if got := Truncate(tc.s, tc.cut, tc.tail); got != tc.result {
			t.Errorf("Truncate(%q, %d, %q) = %q, want %q", tc.s, tc.cut, tc.tail, got, tc.result)
		}
	}
}
