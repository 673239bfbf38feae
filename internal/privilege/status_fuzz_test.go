package privilege

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// refStatus reads the four lines parseStatus needs the slow way: each of
// Uid, Gid, CapPrm and CapEff exactly once; Uid and Gid four decimal ids
// (the kernel prints them with %u: 32 bits, no sign), the capability sets
// one hexadecimal number of at most 64 bits.
func refStatus(text string) (State, bool) {
	var s State
	count := map[string]int{}
	for line := range strings.SplitSeq(text, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch key {
		case "Uid", "Gid":
			f := strings.Fields(val)
			if len(f) != 4 {
				return State{}, false
			}
			var ids [4]int
			for i, x := range f {
				n, err := strconv.ParseUint(x, 10, 32)
				if err != nil || strings.HasPrefix(x, "+") {
					return State{}, false
				}
				ids[i] = int(n)
			}
			if key == "Uid" {
				s.RUID, s.EUID, s.SUID, s.FSUID = ids[0], ids[1], ids[2], ids[3]
			} else {
				s.RGID, s.EGID, s.SGID, s.FSGID = ids[0], ids[1], ids[2], ids[3]
			}
		case "CapPrm", "CapEff":
			f := strings.Fields(val)
			if len(f) != 1 || strings.HasPrefix(f[0], "+") {
				return State{}, false
			}
			v, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil {
				return State{}, false
			}
			if key == "CapPrm" {
				s.Permitted = v
			} else {
				s.Effective = v
			}
		default:
			continue
		}
		count[key]++
	}
	for _, k := range []string{"Uid", "Gid", "CapPrm", "CapEff"} {
		if count[k] != 1 {
			return State{}, false
		}
	}
	return s, true
}

func FuzzParseStatus(f *testing.F) {
	for _, p := range []string{"/proc/self/status", "/proc/1/status", "/proc/thread-self/status"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	for _, s := range []string{
		"Name:\tx\nUid:\t1000\t0\t0\t1000\nGid:\t100\t100\t100\t100\nCapInh:\t0000000000000000\nCapPrm:\t0000000000080004\nCapEff:\t0000000000080000\n",
		"Uid:\t1\t1\t1\t1\n",
		"Uid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n",
		"Uid:\t4294967295\t0\t0\t0\nGid:\t0\t0\t0\t0\nCapPrm:\tffffffffffffffff\nCapEff:\t0\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, err := parseStatus(text)
		want, ok := refStatus(text)
		if (err == nil) != ok || (ok && got != want) {
			t.Fatalf("parseStatus(%q) = %+v, %v; reference %+v, %v", text, got, err, want, ok)
		}
		if ok {
			// Round trip: the kernel's own format of the same state.
			again := fmt.Sprintf("Uid:\t%d\t%d\t%d\t%d\nGid:\t%d\t%d\t%d\t%d\nCapPrm:\t%016x\nCapEff:\t%016x\n",
				got.RUID, got.EUID, got.SUID, got.FSUID, got.RGID, got.EGID, got.SGID, got.FSGID, got.Permitted, got.Effective)
			if s, err := parseStatus(again); err != nil || s != got {
				t.Fatalf("round trip of %+v: %+v, %v", got, s, err)
			}
		}
	})
}
