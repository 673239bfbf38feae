package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/sample"
)

// TestWarnCountsShown: the estimate warnings count the processes of the
// rows shown, not every process scanned.
func TestWarnCountsShown(t *testing.T) {
	procs := []sample.Process{
		{PID: 1, Accuracy: sample.Estimate, Cause: sample.CauseDenied},
		{PID: 2, Accuracy: sample.Estimate, Cause: sample.CauseDenied},
		{PID: 3},
		{PID: 4, Accuracy: sample.Estimate, Cause: sample.CauseMalformed},
	}
	snap := &sample.Snapshot{Procs: procs, Denied: 2, Malformed: 1}
	for _, tc := range []struct {
		groups []sample.Group
		want   string
	}{
		{nil, "2 of 4 processes are RSS-based estimates"},
		{[]sample.Group{{PIDs: []int{2, 3}}}, "1 of 2 processes are RSS-based estimates"},
		{[]sample.Group{{PIDs: []int{3}}}, ""},
	} {
		var b bytes.Buffer
		Warn(&b, snap, procs, tc.groups, false)
		if tc.want == "" && b.Len() != 0 || !strings.Contains(b.String(), tc.want) {
			t.Errorf("groups %v: warning %q, want %q", tc.groups, b.String(), tc.want)
		}
	}
}
