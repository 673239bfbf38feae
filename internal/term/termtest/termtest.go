// Package termtest reads what a full-screen program wrote, for tests:
// the text without escape sequences and its width in cells.
package termtest

import (
	"strings"

	"github.com/clipperhouse/displaywidth"
)

// Strip removes the escape sequences from s: CSI (ESC [ … final byte),
// OSC, DCS, APC, PM and SOS strings (ESC ] … BEL or ESC \), and any
// other two-byte ESC sequence. What is left is the text as drawn.
func Strip(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			break
		}
		switch s[i+1] {
		case '[':
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
		case ']', 'P', '_', '^', 'X':
			j := i + 2
			for j < len(s) && s[j] != 0x07 && !(s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\') {
				j++
			}
			if j < len(s) && s[j] == 0x1b {
				j++
			}
			i = j
		default:
			i++
		}
	}
	return b.String()
}

// Width is the number of cells s takes on a terminal, its escape
// sequences stripped.
func Width(s string) int { return displaywidth.String(Strip(s)) }
