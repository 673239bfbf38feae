package proc

import (
	"encoding/binary"
	"slices"
	"testing"
)

// TestDirentPIDsCrafted: crafted getdents64 buffers (a fake tree's
// listing, a short read) against appendDirentPIDs: no panic, no loop,
// no PID outside 1..2^31 (the bound stat and status keep too; the kernel
// lists at most 2^22), nothing read after a bad record.
func TestDirentPIDsCrafted(t *testing.T) {
	rec := func(name string, reclen int) []byte {
		n := (19 + len(name) + 1 + 7) &^ 7
		if reclen < 0 {
			reclen = n
		}
		b := make([]byte, n)
		binary.NativeEndian.PutUint16(b[16:], uint16(reclen))
		copy(b[19:], name)
		return b
	}
	cat := func(bs ...[]byte) []byte { return slices.Concat(bs...) }
	noNUL := func(name string) []byte { // name fills the record, no NUL
		b := make([]byte, 19+len(name))
		binary.NativeEndian.PutUint16(b[16:], uint16(len(b)))
		copy(b[19:], name)
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want []int
	}{
		{"plain", cat(rec("1", -1), rec("42", -1), rec("self", -1)), []int{1, 42}},
		{"2^31 is the last", cat(rec("2147483648", -1), rec("2147483649", -1)), []int{1 << 31}},
		{"past int64", rec("99999999999999999999999", -1), nil},
		{"7e9", rec("7000000000", -1), nil},
		{"zero", rec("0", -1), nil},
		{"leading zeros", rec("007", -1), []int{7}},
		{"sign", cat(rec("+5", -1), rec("-5", -1)), nil},
		{"digits then junk", rec("12a", -1), nil},
		{"digits after NUL ignored", rec("12\x00x", -1), []int{12}},
		{"empty name", rec("", -1), nil},
		{"no NUL, record ends the name", noNUL("31"), []int{31}},
		{"reclen 0 stops", cat(rec("1", 0), rec("2", -1)), nil},
		{"reclen 18 stops", cat(rec("1", 18), rec("2", -1)), nil},
		{"reclen 19: empty name, walk goes on", cat(noNUL(""), rec("2", -1)), []int{2}},
		{"reclen past the buffer stops", cat(rec("3", -1), rec("4", 200)), []int{3}},
		{"record cut short", rec("5", -1)[:18], nil},
		{"nothing", nil, nil},
	} {
		got := appendDirentPIDs(nil, tc.b)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		for _, pid := range got {
			if pid < 1 || pid > 1<<31 {
				t.Errorf("%s: PID %d out of range", tc.name, pid)
			}
		}
	}
}
