package privilege

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// elevatedStatus is a status of the privileged install after Enter: a
// normal user holding CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH.
const elevatedStatus = "Name:\tmemwho\nUmask:\t0022\nState:\tR (running)\n" +
	"Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n" +
	"CapInh:\t0000000000000000\nCapPrm:\t0000000000080004\nCapEff:\t0000000000080004\n" +
	"CapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\n"

// TestParseStatusHostile: the attacks on parseStatus.
// No text may read as "not elevated" while it holds capabilities, and
// none malformed may be accepted.
func TestParseStatusHostile(t *testing.T) {
	rep := func(old, new string) string { return strings.Replace(elevatedStatus, old, new, 1) }
	for _, tc := range []struct {
		name, text string
		ok         bool
	}{
		{"the kernel's", elevatedStatus, true},
		{"no final newline", strings.TrimSuffix(elevatedStatus, "\n"), true},
		{"CRLF", strings.ReplaceAll(elevatedStatus, "\n", "\r\n"), true},
		{"spaces for tabs", rep("Uid:\t1000\t1000\t1000\t1000", "Uid: 1000 1000 1000 1000"), true},
		{"unknown fields before and after", "Future:\t1\n" + elevatedStatus + "Later:\tx\n", true},
		// "Uid:" inside another line is another key: ignored.
		{"Uid: in the Name line", rep("Name:\tmemwho", "Name:\tUid:\t0\t0\t0\t0"), true},
		{"Uid: after the value", rep("Gid:\t1000\t1000\t1000\t1000", "Gid:\t1000\t1000\t1000\t1000 Uid: 0 0 0 0"), false},
		// An unescaped name with a newline (no kernel prints one) makes a
		// second Uid line: refused, never the last one wins.
		{"second Uid line", rep("Name:\tmemwho", "Name:\tx\nUid:\t0\t0\t0\t0"), false},
		{"second CapPrm line zero", elevatedStatus + "CapPrm:\t0000000000000000\n", false},
		{"second CapEff line zero", rep("CapInh:", "CapEff:\t0000000000000000\nCapInh:"), false},
		{"no CapPrm", rep("CapPrm:\t0000000000080004\n", ""), false},
		{"no Uid", rep("Uid:\t1000\t1000\t1000\t1000\n", ""), false},
		{"key with a space", rep("Uid:", "Uid :"), false},
		{"key lower case", rep("CapPrm:", "capprm:"), false},
		{"CapPrm 0x", rep("CapPrm:\t0000000000080004", "CapPrm:\t0x80004"), false},
		{"CapPrm sign", rep("CapPrm:\t0000000000080004", "CapPrm:\t+80004"), false},
		{"CapPrm underscore", rep("CapPrm:\t0000000000080004", "CapPrm:\t8_0004"), false},
		{"CapPrm empty", rep("CapPrm:\t0000000000080004", "CapPrm:\t"), false},
		{"CapPrm two words", rep("CapPrm:\t0000000000080004", "CapPrm:\t0 80004"), false},
		{"CapPrm 128 bits", rep("CapPrm:\t0000000000080004", "CapPrm:\t00000000000000010000000000080004"), false},
		{"Uid five ids", rep("Uid:\t1000\t1000\t1000\t1000", "Uid:\t1000\t1000\t1000\t1000\t0"), false},
		{"Uid three ids", rep("Uid:\t1000\t1000\t1000\t1000", "Uid:\t1000\t1000\t1000"), false},
		{"Uid negative", rep("Uid:\t1000\t1000\t1000\t1000", "Uid:\t1000\t-1\t1000\t1000"), false},
		{"Uid 2^32", rep("Uid:\t1000\t1000\t1000\t1000", "Uid:\t1000\t4294967296\t1000\t1000"), false},
		{"Uid hex", rep("Uid:\t1000\t1000\t1000\t1000", "Uid:\t1000\t0x0\t1000\t1000"), false},
	} {
		s, err := parseStatus(tc.text)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok %v", tc.name, err, tc.ok)
			continue
		}
		if err == nil && (!s.Elevated() || s.Permitted != 0x80004 || s.Effective != 0x80004 || s.RUID != 1000) {
			t.Errorf("%s: %+v: the capabilities were lost", tc.name, s)
		}
	}
}

// TestVerifyRefusesUnparsable: a thread whose status parseStatus
// refuses fails the check; it used to be skipped like an exited thread,
// so a status format no one parses passed every check (found by the
// seventh review).
func TestVerifyRefusesUnparsable(t *testing.T) {
	want := State{RUID: 1000, EUID: 1000, SUID: 1000, FSUID: 1000, RGID: 1000, EGID: 1000, SGID: 1000, FSGID: 1000}
	write := func(dir, tid, text string) {
		if err := os.MkdirAll(filepath.Join(dir, tid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, tid, "status"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Sanity: the status parses, and holds more than an empty set.
	dir := t.TempDir()
	write(dir, "1", elevatedStatus)
	if err := verifyTasks(dir, want, 0, 0); err == nil {
		t.Fatal("a thread holding capabilities passed a check for none")
	}
	if err := verifyTasks(dir, want, 0x80004, 0x80004); err != nil {
		t.Fatalf("the kept capabilities: %v", err)
	}
	// The same capabilities on a later kernel's wider set, or behind a
	// second Uid line: refused, not skipped.
	for _, text := range []string{
		strings.Replace(elevatedStatus, "CapPrm:\t0000000000080004", "CapPrm:\t00000000000000000000000000080004", 1),
		strings.Replace(elevatedStatus, "Name:\tmemwho", "Name:\tx\nUid:\t1000\t1000\t1000\t1000", 1),
	} {
		dir := t.TempDir()
		write(dir, "1", text)
		if err := verifyTasks(dir, want, 0, 0); err == nil {
			t.Errorf("a thread with an unparsable status passed the check:\n%s", text)
		}
	}
	// A thread that exited between the listing and the read is skipped.
	dir = t.TempDir()
	write(dir, "1", strings.Replace(elevatedStatus, "0000000000080004", "0000000000000000", 2))
	if err := os.MkdirAll(filepath.Join(dir, "2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := verifyTasks(dir, want, 0, 0); err != nil {
		t.Errorf("an exited thread (no status): %v", err)
	}
}
