package term

import (
	"bytes"
	"unicode/utf8"
)

// Key is a key press. Name is what a caller matches: the character
// typed ("q", "G", "/", "é"), or "space", "enter", "esc", "backspace",
// "tab", "up", "down", "left", "right", "home", "end", "pgup", "pgdown",
// "delete", "ctrl+a" … "ctrl+z". Text is what
// the key types: the character itself, " " for space, empty for the
// others.
type Key struct{ Name, Text string }

// Paste is text pasted in one piece (bracketed paste), at most
// [MaxPaste] bytes of it.
type Paste struct{ Text string }

// An Event is a [Key] or a [Paste].
type Event interface{ isEvent() }

func (Key) isEvent()   {}
func (Paste) isEvent() {}

// MaxPaste is the most of one paste that is kept, in bytes; the rest is
// read and dropped. A filter prompt needs a line, not a file.
const MaxPaste = 4096

// maxPending bounds an escape sequence or character split across reads,
// in bytes. Longer ones are not keys a terminal sends unasked and are
// dropped.
const maxPending = 64

// pasteEnd ends a bracketed paste (CSI 200 ~ starts it).
var pasteEnd = []byte("\x1b[201~")

// Decoder turns the bytes read from a terminal in raw mode into key
// presses and pastes. The input comes from whatever writes to the
// terminal (a paste can hold anything), so it must never panic and
// never hold more than maxPending+MaxPaste bytes, whatever it is fed.
//
// It knows the keys a terminal sends without any keyboard protocol
// switched on: UTF-8 text, the C0 controls, arrows, Home and End as CSI
// or SS3 sequences, Page Up, Page Down and Delete, and bracketed paste. Other escape sequences (function keys,
// modified arrows, replies) are read and ignored. An ESC that ends a
// read is the Esc key: a terminal writes a sequence in one piece, so a
// lone ESC is a key press, and waiting for more would delay Esc. For the
// same reason a read of ctrl-c alone ends a paste that never ended.
type Decoder struct {
	pending []byte // an incomplete sequence or character from the last read
	inPaste bool
	paste   []byte // the paste so far, at most MaxPaste bytes
}

// Feed decodes the bytes of one read, appends the events they complete
// to evs and returns it.
func (d *Decoder) Feed(evs []Event, b []byte) []Event {
	if d.inPaste && len(b) == 1 && b[0] == 0x03 {
		// A read of ctrl-c alone ends a paste whose end never came (a
		// terminal gone mid-paste, a hostile input): it must not take
		// ctrl-c, and every key after it, away. A terminal writes a
		// paste in one piece, so this read is a key press.
		evs = append(evs, Paste{Text: string(d.paste)})
		d.inPaste, d.paste, d.pending = false, d.paste[:0], d.pending[:0]
	}
	if len(d.pending) > 0 {
		// Rare (a sequence split across reads): the copy is small.
		b = append(d.pending[:len(d.pending):len(d.pending)], b...)
		d.pending = d.pending[:0]
	}
	for len(b) > 0 {
		if d.inPaste {
			b = d.feedPaste(b)
			if d.inPaste {
				break // all of b consumed or pending
			}
			evs = append(evs, Paste{Text: string(d.paste)})
			d.paste = d.paste[:0]
			continue
		}
		ev, n := d.next(b)
		if n == 0 {
			// Incomplete: keep it for the next read, if it is short.
			if len(b) <= maxPending {
				d.pending = append(d.pending, b...)
			}
			break
		}
		if ev != nil {
			evs = append(evs, ev)
		}
		b = b[n:]
	}
	return evs
}

// feedPaste consumes pasted bytes up to the end marker and returns what
// follows it; d.inPaste turns false when the marker was found. A tail
// of b that may be the start of the marker is kept pending.
func (d *Decoder) feedPaste(b []byte) []byte {
	if i := bytes.Index(b, pasteEnd); i >= 0 {
		d.keepPaste(b[:i])
		d.inPaste = false
		return b[i+len(pasteEnd):]
	}
	keep := 0
	for k := min(len(pasteEnd)-1, len(b)); k > 0; k-- {
		if bytes.HasPrefix(pasteEnd, b[len(b)-k:]) {
			keep = k
			break
		}
	}
	d.keepPaste(b[:len(b)-keep])
	d.pending = append(d.pending, b[len(b)-keep:]...)
	return nil
}

func (d *Decoder) keepPaste(b []byte) {
	if room := MaxPaste - len(d.paste); len(b) > room {
		b = b[:room]
		// Cut before a character the limit splits.
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	d.paste = append(d.paste, b...)
}

// printable holds the printable ASCII characters, so that a key's name
// is a slice of it: no string to make per key, and no table to build at
// start-up (package initialisers delay every start of the binary).
const printable = " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"

// ctrlKey names the C0 control c (not ESC).
func ctrlKey(c byte) Event {
	switch c {
	case 0x08, 0x7f:
		return Key{Name: "backspace"}
	case 0x09:
		return Key{Name: "tab"}
	case 0x0a, 0x0d:
		return Key{Name: "enter"}
	}
	if c >= 1 && c <= 26 {
		return Key{Name: "ctrl+" + printable['a'-' '+c-1:'a'-' '+c]}
	}
	return nil // NUL, FS, GS, RS, US
}

// next decodes the event at the start of b (len(b) > 0) and how many
// bytes it took; a nil event for bytes that are read and ignored, n == 0
// when b holds only the start of a sequence or character.
func (d *Decoder) next(b []byte) (Event, int) {
	c := b[0]
	switch {
	case c == 0x1b:
		return d.escape(b)
	case c == ' ':
		return Key{Name: "space", Text: " "}, 1
	case c < 0x20 || c == 0x7f:
		return ctrlKey(c), 1
	case c < utf8.RuneSelf:
		s := printable[c-' ' : c-' '+1]
		return Key{Name: s, Text: s}, 1
	}
	if !utf8.FullRune(b) {
		return nil, 0
	}
	r, n := utf8.DecodeRune(b)
	if r == utf8.RuneError || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 {
		return nil, n // invalid, a C1 control or a line separator
	}
	s := string(b[:n])
	return Key{Name: s, Text: s}, n
}

// escape decodes a sequence that starts with ESC.
func (d *Decoder) escape(b []byte) (Event, int) {
	if len(b) == 1 {
		return Key{Name: "esc"}, 1
	}
	switch b[1] {
	case 0x1b:
		return Key{Name: "esc"}, 1 // the second ESC starts the next event
	case '[':
		return d.csi(b)
	case 'O':
		// SS3: arrows in application cursor mode, F1–F4.
		if len(b) < 3 {
			return nil, 0
		}
		if b[2] < 0x20 || b[2] == 0x7f {
			// Alt+O, then a control key: that key (ctrl+c must always
			// quit, an ESC starts the next event), as after a lone ESC.
			return nil, 2
		}
		return arrow(b[2]), 3
	case ']', 'P', '_', '^', 'X':
		// A string (OSC, DCS, APC, PM, SOS), a reply nothing asked
		// for: skip to its terminator, BEL or ESC \, or the end of the
		// read.
		for i := 2; i < len(b); i++ {
			if b[i] == 0x07 {
				return nil, i + 1
			}
			if b[i] == 0x1b {
				if i+1 < len(b) && b[i+1] == '\\' {
					return nil, i + 2
				}
				return nil, i // an ESC that does not end it starts the next event
			}
		}
		return nil, len(b)
	}
	if b[1] < 0x20 || b[1] == 0x7f {
		// Esc, then a control key (ctrl+c must always quit).
		return Key{Name: "esc"}, 1
	}
	// Alt with a key: not a key the caller uses. Skip the whole
	// character after ESC.
	if b[1] < utf8.RuneSelf {
		return nil, 2
	}
	if !utf8.FullRune(b[1:]) {
		return nil, 0
	}
	_, n := utf8.DecodeRune(b[1:])
	return nil, 1 + n
}

// csi decodes ESC [ parameters intermediates final.
func (d *Decoder) csi(b []byte) (Event, int) {
	i := 2
	for i < len(b) && b[i] >= 0x30 && b[i] <= 0x3f {
		i++
	}
	params := b[2:i]
	if i < len(b) && b[i] == '$' && digits(params) {
		// rxvt's shifted keys (CSI 5 $: Shift+PgUp; 6, 7, 8, 2, 3):
		// ECMA-48 reads the "$" as an intermediate byte, and waiting
		// for a final byte took the next key's.
		return nil, i + 1
	}
	for i < len(b) && b[i] >= 0x20 && b[i] <= 0x2f {
		i++
	}
	if i == len(b) {
		return nil, 0 // incomplete (Feed drops it when it is too long)
	}
	final := b[i]
	if final < 0x40 || final > 0x7e {
		return nil, i // not a CSI sequence: skip what was read of it
	}
	n := i + 1
	if final == '~' && i == len(params)+2 {
		switch string(params) {
		case "200":
			d.inPaste = true
			return nil, n
		case "3":
			return Key{Name: "delete"}, n
		case "5":
			return Key{Name: "pgup"}, n
		case "6":
			return Key{Name: "pgdown"}, n
		case "1", "7":
			// Home as the Linux console and rxvt send it.
			return Key{Name: "home"}, n
		case "4", "8":
			return Key{Name: "end"}, n
		}
		return nil, n
	}
	if len(params) == 0 && i == 2 {
		return arrow(final), n
	}
	return nil, n // modified arrows, function keys, replies
}

// digits reports whether p is a number: one or more ASCII digits.
func digits(p []byte) bool {
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(p) > 0
}

// arrow is the key of a CSI or SS3 sequence without parameters: the
// arrows, and Home and End as xterm sends them.
func arrow(c byte) Event {
	switch c {
	case 'H':
		return Key{Name: "home"}
	case 'F':
		return Key{Name: "end"}
	case 'A':
		return Key{Name: "up"}
	case 'B':
		return Key{Name: "down"}
	case 'C':
		return Key{Name: "right"}
	case 'D':
		return Key{Name: "left"}
	}
	return nil
}
