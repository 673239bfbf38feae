package term

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func k(name string) Event { return Key{Name: name} }
func t1(s string) Event   { return Key{Name: s, Text: s} }

func TestDecoder(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string // one string per read
		want []Event
	}{
		{"letters", []string{"qG/?"}, []Event{t1("q"), t1("G"), t1("/"), t1("?")}},
		{"space", []string{" "}, []Event{Key{Name: "space", Text: " "}}},
		{"enter CR and LF", []string{"\r\n"}, []Event{k("enter"), k("enter")}},
		{"backspace DEL and BS", []string{"\x7f\x08"}, []Event{k("backspace"), k("backspace")}},
		{"ctrl keys", []string{"\x03\x15\x01\x1a\x09"}, []Event{k("ctrl+c"), k("ctrl+u"), k("ctrl+a"), k("ctrl+z"), k("tab")}},
		{"NUL and others ignored", []string{"\x00\x1c\x1f"}, nil},
		{"lone esc", []string{"\x1b"}, []Event{k("esc")}},
		{"esc esc", []string{"\x1b\x1b"}, []Event{k("esc"), k("esc")}},
		{"esc then ctrl+c", []string{"\x1b\x03"}, []Event{k("esc"), k("ctrl+c")}},
		{"arrows CSI", []string{"\x1b[A\x1b[B\x1b[C\x1b[D"}, []Event{k("up"), k("down"), k("right"), k("left")}},
		{"arrows SS3", []string{"\x1bOC\x1bOD\x1bOP"}, []Event{k("right"), k("left")}},
		{"modified arrow ignored", []string{"\x1b[1;5Cq"}, []Event{t1("q")}},
		{"function key ignored", []string{"\x1b[15~q"}, []Event{t1("q")}},
		{"delete", []string{"\x1b[3~"}, []Event{k("delete")}},
		{"page up and down", []string{"\x1b[5~\x1b[6~"}, []Event{k("pgup"), k("pgdown")}},
		{"home and end, xterm", []string{"\x1b[H\x1b[F\x1bOH\x1bOF"}, []Event{k("home"), k("end"), k("home"), k("end")}},
		{"home and end, console and rxvt", []string{"\x1b[1~\x1b[4~\x1b[7~\x1b[8~"}, []Event{k("home"), k("end"), k("home"), k("end")}},
		{"modified page and home keys ignored", []string{"\x1b[5;5~\x1b[1;2Hq"}, []Event{t1("q")}},
		{"alt key ignored", []string{"\x1bqx\x1bé"}, []Event{t1("x")}},
		{"OSC with BEL ignored", []string{"\x1b]11;rgb:0/0/0\x07q"}, []Event{t1("q")}},
		{"OSC with ST ignored", []string{"\x1b]0;t\x1b\\q"}, []Event{t1("q")}},
		{"unterminated OSC dropped with its read", []string{"\x1b]0;never ends q", "w"}, []Event{t1("w")}},
		{"not CSI", []string{"\x1b[\x01q"}, []Event{k("ctrl+a"), t1("q")}},
		{"UTF-8", []string{"é数🐘"}, []Event{t1("é"), t1("数"), t1("🐘")}},
		{"invalid UTF-8 and C1 ignored", []string{"\xff\xc2\x9b\xe2\x80\xa8q"}, []Event{t1("q")}},
		{"UTF-8 split", []string{"\xe6", "\x95", "\xb0"}, []Event{t1("数")}},
		{"CSI split", []string{"\x1b[", "1;", "5", "C", "\x1b[", "D"}, []Event{k("left")}},
		{"SS3 split", []string{"\x1bO", "C"}, []Event{k("right")}},
		{"paste", []string{"\x1b[200~he\x03l\rq\x1b[201~q"}, []Event{Paste{Text: "he\x03l\rq"}, t1("q")}},
		{"paste holding escapes", []string{"\x1b[200~a\x1b[Cb\x1b\x1b[201~"}, []Event{Paste{Text: "a\x1b[Cb\x1b"}}},
		{"paste across reads", []string{"\x1b[200~ab", "cd\x1b", "[20", "1", "~q"}, []Event{Paste{Text: "abcd"}, t1("q")}},
		{"paste end prefix that is not the end", []string{"\x1b[200~a\x1b[20", "0~b\x1b[201~"}, []Event{Paste{Text: "a\x1b[200~b"}}},
		{"empty paste", []string{"\x1b[200~\x1b[201~"}, []Event{Paste{}}},
		{"paste end alone", []string{"\x1b[201~q"}, []Event{t1("q")}},
		// Hostile input (a paste of anything, replies split
		// across reads, bytes from a pipe or a hostile terminal).
		{"nested paste ends at the first end", []string{"\x1b[200~a\x1b[200~b\x1b[201~c\x1b[201~"}, []Event{Paste{Text: "a\x1b[200~b"}, t1("c")}},
		{"unterminated paste is kept for later reads", []string{"\x1b[200~abc", "def"}, nil},
		{"paste holding NUL, C1, invalid UTF-8", []string{"\x1b[200~\x00\x9b2J\xc2\x9b\xff\x1b[201~"}, []Event{Paste{Text: "\x00\x9b2J\xc2\x9b\xff"}}},
		{"single-byte CSI 0x9b is no key", []string{"\x9b2Jq"}, []Event{t1("2"), t1("J"), t1("q")}},
		{"U+009B is no key", []string{"\xc2\x9b2Jq"}, []Event{t1("2"), t1("J"), t1("q")}},
		{"NUL is no key", []string{"\x00q\x00"}, []Event{t1("q")}},
		{"CSI of 64 bytes split is kept", []string{"\x1b[" + strings.Repeat("1", 62), "A"}, nil},
		{"CSI of 64 bytes then a key", []string{"\x1b[" + strings.Repeat(";", 62), "Dq"}, []Event{t1("q")}},
		{"CSI over 64 bytes is dropped, the rest read as keys", []string{"\x1b[" + strings.Repeat("1", 63), "1Aq"}, []Event{t1("1"), t1("A"), t1("q")}},
		{"OSC reply split across reads: its tail is read as keys", []string{"\x1b]11;rgb:0", "/0/0\x07q"}, []Event{t1("/"), t1("0"), t1("/"), t1("0"), k("ctrl+g"), t1("q")}},
		{"DCS reply with ST", []string{"\x1bP1+r544e=78\x1b\\q"}, []Event{t1("q")}},
		{"ESC then a C1 in UTF-8 (alt+U+009B) skipped whole", []string{"\x1b\xc2\x9bq"}, []Event{t1("q")}},
		{"ESC then a split character waits", []string{"\x1b\xe6", "\x95\xb0q"}, []Event{t1("q")}},
		{"unterminated paste ended by ctrl+c alone in a read", []string{"\x1b[200~abc", "de", "\x03", "q"}, []Event{Paste{Text: "abcde"}, k("ctrl+c"), t1("q")}},
		{"ctrl+c inside a paste's read is pasted", []string{"\x1b[200~a\x03b", "\x1b[201~"}, []Event{Paste{Text: "a\x03b"}}},
		{"ctrl+c alone while a paste end is pending", []string{"\x1b[200~a\x1b[20", "\x03"}, []Event{Paste{Text: "a"}, k("ctrl+c")}},
		{"paste end split byte by byte", []string{"\x1b[200~x", "\x1b", "[", "2", "0", "1", "~", "q"}, []Event{Paste{Text: "x"}, t1("q")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d Decoder
			var got []Event
			for _, r := range tc.in {
				got = d.Feed(got, []byte(r))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Feed(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestDecoderPasteBounded(t *testing.T) {
	var d Decoder
	evs := d.Feed(nil, []byte("\x1b[200~"))
	// A paste that goes on and on: kept up to MaxPaste, no further.
	chunk := []byte(strings.Repeat("é", 1000) + "x") // 2001 bytes: the cut falls in a character
	for range 1000 {
		evs = d.Feed(evs, chunk)
		if len(d.paste) > MaxPaste || len(d.pending) > maxPending {
			t.Fatalf("paste %d bytes, pending %d", len(d.paste), len(d.pending))
		}
	}
	evs = d.Feed(evs, []byte("\x1b[201~q"))
	if len(evs) != 2 {
		t.Fatalf("events %d, want the paste and q", len(evs))
	}
	p := evs[0].(Paste).Text
	if len(p) > MaxPaste || len(p) < MaxPaste-utf8.UTFMax || !utf8.ValidString(p) {
		t.Errorf("paste of %d bytes (valid UTF-8: %v), want up to %d cut at a character", len(p), utf8.ValidString(p), MaxPaste)
	}
	if evs[1] != t1("q") {
		t.Errorf("after the paste: %v, want q", evs[1])
	}
}

func TestDecoderPendingBounded(t *testing.T) {
	// An escape sequence that never ends is dropped, not kept.
	var d Decoder
	evs := d.Feed(nil, []byte("\x1b["+strings.Repeat("1", 10000)))
	if len(evs) != 0 || len(d.pending) > maxPending {
		t.Fatalf("events %v, pending %d bytes", evs, len(d.pending))
	}
	if evs = d.Feed(nil, []byte("q")); len(evs) != 1 || evs[0] != t1("q") {
		t.Errorf("after a dropped sequence: %v, want q", evs)
	}
}

func FuzzDecoder(f *testing.F) {
	for _, s := range []string{"q", "\x1b", "\x1b[A", "\x1bOC", "\x1b[200~x\x1b[201~", "\x1b]0;x\x07", "é", "\xff", "\x1b[1;5C", "\x1b[200~\x1b[20"} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, split uint8) {
		var d Decoder
		var evs []Event
		// Feed in reads of split+1 bytes.
		step := int(split) + 1
		for len(in) > 0 {
			n := min(step, len(in))
			evs = d.Feed(evs[:0], in[:n])
			in = in[n:]
			if len(d.paste) > MaxPaste || len(d.pending) > maxPending+step {
				t.Fatalf("paste %d bytes, pending %d", len(d.paste), len(d.pending))
			}
			for _, ev := range evs {
				switch ev := ev.(type) {
				case Key:
					if ev.Name == "" {
						t.Fatalf("a key without a name: %+v", ev)
					}
					for _, r := range ev.Text {
						if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
							t.Fatalf("key text %q holds %U", ev.Text, r)
						}
					}
				case Paste:
					if len(ev.Text) > MaxPaste {
						t.Fatalf("paste of %d bytes", len(ev.Text))
					}
				default:
					t.Fatalf("event %T", ev)
				}
			}
		}
	})
}
