// Package termtest reads what a full-screen program wrote, for tests:
// the text without escape sequences and its width in cells.
package termtest

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/clipperhouse/displaywidth"
	"golang.org/x/sys/unix"
)

// OpenPTY returns the two ends of a new pseudo-terminal of cols×rows,
// neither of them the test's controlling terminal; both are closed when
// the test ends. The test is skipped where pseudo-terminals are missing.
func OpenPTY(t *testing.T, cols, rows uint16) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatal(err)
	}
	return master, slave
}

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
