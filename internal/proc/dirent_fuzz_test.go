package proc

import (
	"encoding/binary"
	"slices"
	"strconv"
	"syscall"
	"testing"
)

// refDirentPIDs is appendDirentPIDs the slow way: encoding/binary for the
// record length, strconv for the name.
func refDirentPIDs(b []byte) []int {
	var out []int
	for len(b) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			break
		}
		name := b[19:reclen]
		if i := slices.Index(name, 0); i >= 0 {
			name = name[:i]
		}
		ok := len(name) > 0
		for _, c := range name {
			if c < '0' || c > '9' {
				ok = false
			}
		}
		if ok {
			if n, err := strconv.ParseUint(string(name), 10, 63); err == nil && n > 0 && n <= 1<<31 {
				out = append(out, int(n))
			}
		}
		b = b[reclen:]
	}
	return out
}

// FuzzDirentPIDs: the PIDs of a getdents64 buffer of /proc, whatever the
// bytes (a fake tree's directory, a short read), never read past the
// buffer and agree with the reference: a name of digits is a PID from 1
// to 2^31, anything else is not one.
func FuzzDirentPIDs(f *testing.F) {
	// Seeds: this process's own /proc listing, and records cut short.
	if fd, err := syscall.Open("/proc", syscall.O_RDONLY|syscall.O_DIRECTORY, 0); err == nil {
		buf := make([]byte, 4096)
		if n, err := syscall.ReadDirent(fd, buf); err == nil && n > 0 {
			f.Add(buf[:n])
			f.Add(buf[:n/2])
		}
		syscall.Close(fd)
	}
	rec := func(name string) []byte {
		n := (19 + len(name) + 1 + 7) &^ 7
		b := make([]byte, n)
		binary.NativeEndian.PutUint16(b[16:], uint16(n))
		copy(b[19:], name)
		return b
	}
	f.Add(append(rec("1"), rec("self")...))
	f.Add(append(rec("4194304"), rec("99999999999")...))
	f.Add(rec(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := appendDirentPIDs(nil, b)
		if want := refDirentPIDs(b); !slices.Equal(got, want) {
			t.Fatalf("appendDirentPIDs = %v, reference %v, on %q", got, want, b)
		}
	})
}
