package term

import (
	"strconv"

	"github.com/clipperhouse/displaywidth"
)

// Styles as SGR sequences. Reset ends any of them.
const (
	Bold    = "\x1b[1m"
	Faint   = "\x1b[2m"
	Reverse = "\x1b[7m"
	Reset   = "\x1b[m"
)

// sgrAware measures text that may hold SGR sequences: they take no cells.
var sgrAware = displaywidth.Options{ControlSequences: true}

// Width is the number of terminal cells s takes: graphemes measured as
// terminals draw them (wide East Asian characters and emoji 2,
// combining marks 0), escape sequences 0.
func Width(s string) int { return sgrAware.String(s) }

// Truncate cuts s to at most width cells, tail included when it is cut
// (tail is not added when s fits). Escape sequences after the cut are
// kept, so that a style's reset is not lost.
func Truncate(s string, width int, tail string) string {
	if width <= 0 {
		return ""
	}
	return sgrAware.TruncateString(s, width, tail)
}

// Screen draws frames, each a list of lines, writing only the lines
// that differ from the frame before. The zero value draws its first
// frame in full.
type Screen struct {
	lines         []string
	width, height int
	drawn         bool
}

// Frame appends to dst what turns the frame before into lines, on a
// terminal of width×height cells, and returns it: for each changed line
// the cursor moved to it, the line and, when the line is narrower than
// the terminal, an erase to the end of the line; lines beyond the new
// frame's end are erased. Nothing is appended when nothing changed.
// Lines must not be wider than the terminal nor more than its height.
//
// The erase is left out after a line that fills the width: the cursor
// then waits on the last cell, and an erase there would take the line's
// last character with it.
func (s *Screen) Frame(dst []byte, lines []string, width, height int) []byte {
	full := !s.drawn || width != s.width || height != s.height
	if full {
		// Home, and erase the whole screen.
		dst = append(dst, "\x1b[H\x1b[2J"...)
		s.lines = s.lines[:0]
	}
	for i, l := range lines {
		if i < len(s.lines) && s.lines[i] == l {
			continue
		}
		if full && l == "" {
			continue
		}
		dst = cup(dst, i+1)
		dst = append(dst, l...)
		if !full && Width(l) < width {
			dst = append(dst, "\x1b[K"...)
		}
	}
	if !full && len(lines) < len(s.lines) {
		// Erase from the first line no longer used to the end.
		dst = cup(dst, len(lines)+1)
		dst = append(dst, "\x1b[J"...)
	}
	s.lines = append(s.lines[:0], lines...)
	s.width, s.height, s.drawn = width, height, true
	return dst
}

// cup moves the cursor to the start of line row (from 1).
func cup(dst []byte, row int) []byte {
	dst = append(dst, "\x1b["...)
	dst = strconv.AppendInt(dst, int64(row), 10)
	return append(dst, ";1H"...)
}
