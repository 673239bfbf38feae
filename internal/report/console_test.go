package report

import (
	"bytes"
	"os"
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
		Warn(&b, snap, procs, tc.groups, false, ScannerSelf)
		if tc.want == "" && b.Len() != 0 || !strings.Contains(b.String(), tc.want) {
			t.Errorf("groups %v: warning %q, want %q", tc.groups, b.String(), tc.want)
		}
	}
}

// TestWarnHintPrivileged: the hint after refused walks suggests root or
// the capability only to a scan that had neither; with the capability
// (the privileged install, or the agent's snapshot) it says that no
// capability crosses the boundary, since suggesting it there misleads.
func TestWarnHintPrivileged(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root gets the root hint whatever the flag; run as a normal user")
	}
	procs := []sample.Process{{PID: 1, Accuracy: sample.Estimate, Cause: sample.CauseDenied}}
	snap := &sample.Snapshot{Procs: procs, Denied: 1}
	for _, tc := range []struct {
		by        Scanner
		want, not string
	}{
		{ScannerSelf, "install memwho with CAP_SYS_PTRACE", "even with"},
		{ScannerPrivileged, "even with CAP_SYS_PTRACE memwho may not walk these processes", "install memwho"},
		{ScannerFile, "whoever took it could not walk these processes", "even"},
	} {
		var b bytes.Buffer
		Warn(&b, snap, procs, nil, false, tc.by)
		if !strings.Contains(b.String(), tc.want) || strings.Contains(b.String(), tc.not) {
			t.Errorf("scanner %v: %q, want %q and not %q", tc.by, b.String(), tc.want, tc.not)
		}
	}
}

// TestWarnHintFile: a snapshot file's refused walks were its taker's:
// root reading it is not told "even root may not".
func TestWarnHintFile(t *testing.T) {
	procs := []sample.Process{{PID: 1, Accuracy: sample.Estimate, Cause: sample.CauseDenied}}
	snap := &sample.Snapshot{Procs: procs, Denied: 1}
	var b bytes.Buffer
	Warn(&b, snap, procs, nil, false, ScannerFile)
	if got := b.String(); !strings.Contains(got, "the snapshot file's figures: whoever took it could not walk") || strings.Contains(got, "even root") || strings.Contains(got, "run as root") {
		t.Errorf("hint for a file: %q", got)
	}
}

// TestSwapMarkFollowsEstimatedSwap: a group's swap is marked an estimate
// only when an estimated process had swap; one with none adds an exact
// 0 (else a host can show tens of MiB of swap marked an estimate, all of
// it exact). A group made without the count (from the history) keeps the
// mark.
func TestSwapMarkFollowsEstimatedSwap(t *testing.T) {
	exact := sample.Process{PID: 1, Comm: "a", RAM: 1 << 20, Swap: 10 << 20}
	noSwap := sample.Process{PID: 2, Comm: "a", RAM: 1 << 20, Accuracy: sample.Estimate, Cause: sample.CauseDenied}
	withSwap := sample.Process{PID: 3, Comm: "a", RAM: 1 << 20, Swap: 1 << 20, Accuracy: sample.Estimate, Cause: sample.CauseDenied}
	for _, tc := range []struct {
		name      string
		procs     []sample.Process
		ram, swap byte
	}{
		{"all exact", []sample.Process{exact}, 0, 0},
		{"an estimate without swap", []sample.Process{exact, noSwap}, markEstimate, 0},
		{"an estimate with swap", []sample.Process{exact, noSwap, withSwap}, markEstimate, markEstimate},
	} {
		g := sample.SumProcs(tc.procs)
		total := sample.Total([]sample.Group{g})
		for _, gg := range []sample.Group{g, total} {
			if ram, swap := marks(&gg); ram != tc.ram || swap != tc.swap {
				t.Errorf("%s (%s): marks %q %q, want %q %q", tc.name, gg.Key, ram, swap, tc.ram, tc.swap)
			}
		}
	}
	history := sample.Group{Key: "h", Swap: 1 << 20, Estimated: 1}
	if _, swap := marks(&history); swap != markEstimate {
		t.Errorf("a group from the history lost its swap mark")
	}
}
