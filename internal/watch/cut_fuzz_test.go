//go:build !notui

package watch

import (
	"strconv"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/term"
)

// FuzzCutKeepingPID: whatever a process is named (any bytes, escaped as
// the view escapes them) and whatever the width, cutting a by-pid key
// never panics; a cut key fits the width and ends with the key's own
// " [PID]", never one the name forged.
func FuzzCutKeepingPID(f *testing.F) {
	for _, s := range []string{"postgres", "sshd [1]", "a [", "[[[[", "数据库服务", "x\x1b[31m", "\u200b\u200b", ""} {
		f.Add(s, 4242, 12)
	}
	f.Fuzz(func(t *testing.T, name string, pid, width int) {
		if pid < 0 {
			pid = -pid
		}
		if width < -10 || width > 300 {
			return
		}
		key := string(report.Sanitize(nil, name)) + " [" + strconv.Itoa(pid) + "]"
		got := cutKeepingPID(key, width)
		if got == key {
			return // fits, or left to the caller to cut
		}
		suffix := " [" + strconv.Itoa(pid) + "]"
		if !strings.HasSuffix(got, suffix) {
			t.Fatalf("cutKeepingPID(%q, %d) = %q: lost its PID %q", key, width, got, suffix)
		}
		if w := term.Width(got); w > width {
			t.Fatalf("cutKeepingPID(%q, %d) = %q: %d cells", key, width, got, w)
		}
	})
}
