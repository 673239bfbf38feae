package term

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPageKeys: the attacks on the page,
// Home and End keys (docs/safe.md): every spelling split across two
// reads at every byte after its ESC, floods in one read, pastes holding
// them, modified keys of xterm and rxvt, and what follows each.
func TestPageKeys(t *testing.T) {
	keys := []struct{ seq, name string }{
		{"\x1b[5~", "pgup"}, {"\x1b[6~", "pgdown"},
		{"\x1b[1~", "home"}, {"\x1b[7~", "home"}, {"\x1b[H", "home"}, {"\x1bOH", "home"},
		{"\x1b[4~", "end"}, {"\x1b[8~", "end"}, {"\x1b[F", "end"}, {"\x1bOF", "end"},
		{"\x1b[A", "up"}, {"\x1b[B", "down"},
	}
	for _, key := range keys {
		// Split after the ESC (an ESC that ends a read is the Esc key,
		// by design) at every byte, then q.
		for i := 2; i <= len(key.seq); i++ {
			var d Decoder
			evs := d.Feed(nil, []byte(key.seq[:i]))
			evs = d.Feed(evs, []byte(key.seq[i:]))
			evs = d.Feed(evs, []byte("q"))
			if diff := cmp.Diff([]Event{k(key.name), t1("q")}, evs); diff != "" {
				t.Errorf("%q split at %d (-want +got):\n%s", key.seq, i, diff)
			}
		}
	}
	// All of them, 30 times, in one read of 1,002 bytes.
	var all strings.Builder
	var want []Event
	for range 30 {
		for _, key := range keys {
			all.WriteString(key.seq)
			want = append(want, k(key.name))
		}
	}
	var d Decoder
	if diff := cmp.Diff(want, d.Feed(nil, []byte(all.String()))); diff != "" {
		t.Errorf("a flood in one read (-want +got):\n%s", diff)
	}
	if len(d.pending) != 0 || d.inPaste {
		t.Errorf("after the flood: %d bytes pending, in a paste %v", len(d.pending), d.inPaste)
	}

	for _, tc := range []struct {
		name string
		in   []string // one string per read
		want []Event
	}{
		{"a paste of page keys is text", []string{"\x1b[200~\x1b[6~\x1b[H\x1bOF\x1b[201~q"}, []Event{Paste{Text: "\x1b[6~\x1b[H\x1bOF"}, t1("q")}},
		{"a paste of page keys split mid-marker", []string{"\x1b[200~\x1b[6~\x1b[2", "01~q"}, []Event{Paste{Text: "\x1b[6~"}, t1("q")}},
		{"xterm's modified page, Home, End keys", []string{"\x1b[5;5~\x1b[6;2~\x1b[5;3~\x1b[1;2H\x1b[1;5F\x1b[1;2~\x1b[4;5~q"}, []Event{t1("q")}},
		{"kitty's modified keys", []string{"\x1b[5;5:1~\x1b[1;2:3Hq"}, []Event{t1("q")}},
		{"rxvt's ctrl and ctrl+shift page keys", []string{"\x1b[5^\x1b[6@\x1b[7^\x1b[8@q"}, []Event{t1("q")}},
		// rxvt's shift: "$" is an intermediate byte to ECMA-48, so the
		// sequence waited for a final byte and took the next key's.
		{"rxvt's shift+PgUp, then q", []string{"\x1b[5$", "q"}, []Event{t1("q")}},
		{"rxvt's shift+Home, shift+End, shift+Delete, then q", []string{"\x1b[7$", "q", "\x1b[8$", "q", "\x1b[3$", "q"}, []Event{t1("q"), t1("q"), t1("q")}},
		{"rxvt's shift+PgDn and q in one read", []string{"\x1b[6$q"}, []Event{t1("q")}},
		{"rxvt's shift+PgDn, then ctrl+c", []string{"\x1b[6$", "\x03"}, []Event{k("ctrl+c")}},
		{"a reply with $ and a final byte is skipped whole", []string{"\x1b[?1049;2$yq", "\x1b[12;2$yq"}, []Event{t1("q"), t1("q")}},
		{"numbers that are no key", []string{"\x1b[05~\x1b[55~\x1b[9~\x1b[0~\x1b[~q"}, []Event{t1("q")}},
		{"private parameters", []string{"\x1b[?5~\x1b[>6~\x1b[=1~\x1b[<4~q"}, []Event{t1("q")}},
		{"Home and End with parameters (a cursor report's shape)", []string{"\x1b[1H\x1b[12;40H\x1b[2Fq"}, []Event{t1("q")}},
		// Alt+O, then a control key: the control key stays a key
		// (ctrl+c must always quit), as after a lone ESC.
		{"Alt+O, then ctrl+c", []string{"\x1bO\x03"}, []Event{k("ctrl+c")}},
		{"Alt+O, then PgDn", []string{"\x1bO\x1b[6~"}, []Event{k("pgdown")}},
		{"Alt+O, then Esc", []string{"\x1bO\x1b"}, []Event{k("esc")}},
		{"SS3 split after O", []string{"\x1bO", "H"}, []Event{k("home")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d Decoder
			var got []Event
			for _, in := range tc.in {
				got = d.Feed(got, []byte(in))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Feed(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}
