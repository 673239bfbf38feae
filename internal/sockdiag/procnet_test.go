package sockdiag

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/memwho/memwho/internal/proc/fstest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Lines captured from a 6.18 kernel (the ESTABLISHED ones, state 01, made
// up from real ones by changing the state and inode).
const (
	header4 = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode                                                     \n"
	tcp4    = header4 +
		"   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1165 1 000000009f0b4ac0 100 0 0 10 0                      \n" +
		"   1: 0100007F:CD7C 0100007F:85B9 06 00000000:00000000 03:000003F3 00000000     0        0 0 3 00000000769ff634                                      \n" +
		"   2: 0100007F:9FBC 0100007F:82C1 01 00000000:00000000 00:00000000 00000000  1000        0 48213 1 000000000312aeee 20 4 30 10 -1                     \n" +
		"12345: 0100007F:9FBD 0100007F:82C1 01 00000000:00000000 00:00000000 00000000 123456        0 4294967296 1 000000000312aeee 20 4 30 10 -1\n"
	header6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	tcp6    = header6 +
		"   0: 00000000000000000000000001000000:AA84 00000000000000000000000001000000:93BB 06 00000000:00000000 03:0000159E 00000000     0        0 0 3 000000001e7316c6\n" +
		"   1: 00000000000000000000000001000000:AA88 00000000000000000000000001000000:93BB 01 00000000:00000000 00:00000000 00000000     0        0 777 1 000000003edf45a6 20 4 0 10 -1\n"
)

func TestParseProcNet(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		v6   bool
		want []uint64
		err  bool
	}{
		{"tcp", tcp4, false, []uint64{48213, 4294967296}, false},
		{"tcp6", tcp6, true, []uint64{777}, false},
		{"header only", header4, false, nil, false},
		{"empty", "", false, nil, false},
		{"no final newline", strings.TrimSuffix(tcp6, "\n"), true, []uint64{777}, false},
		{"v4 as v6", tcp4, true, nil, true},
		{"cut in the address", header4 + "   0: 0100007F:CD7C 0100\n", false, nil, true},
		{"cut before the inode", header4 + "   2: 0100007F:9FBC 0100007F:82C1 01 00000000:00000000 00:00000000 00000000  1000        0\n", false, nil, true},
		{"letters in the inode", header4 + "   2: 0100007F:9FBC 0100007F:82C1 01 00000000:00000000 00:00000000 00000000  1000        0 48x13 1\n", false, nil, true},
		{"tab for a space", header4 + "   2: 0100007F:9FBC\t0100007F:82C1 01 00000000:00000000 00:00000000 00000000  1000        0 48213 1\n", false, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var set InodeSet
			set.Reset()
			err := ParseProcNet([]byte(tc.in), tc.v6, &set)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Errorf("err = %v, want ErrMalformed", err)
				}
				return
			}
			if got := setSlice(&set); !slices.Equal(got, tc.want) {
				t.Errorf("inodes = %v, want %v", got, tc.want)
			}
		})
	}
}

func setSlice(s *InodeSet) []uint64 {
	var out []uint64
	for k := range s.m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// referenceProcNet is the obvious parser: split each line into fields.
// It is the benchmark's rival and the fuzz test's oracle.
func referenceProcNet(b []byte) (set []uint64, ok bool) {
	lines := strings.Split(string(b), "\n")
	for _, l := range lines[1:] {
		if l == "" {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 10 {
			return nil, false
		}
		if f[3] != "01" {
			continue
		}
		ino, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			return nil, false
		}
		if ino != 0 {
			set = append(set, ino)
		}
	}
	slices.Sort(set)
	return slices.Compact(set), true
}

// FuzzProcNet feeds arbitrary text to the fixed-width parser: it must
// not panic, and whatever it accepts the reference must read the same
// way.
func FuzzProcNet(f *testing.F) {
	f.Add([]byte(tcp4), false)
	f.Add([]byte(tcp6), true)
	f.Add([]byte(header4+"   0: 0100007F:CD7C 0100007F:85B9 01 0:0 0:0 0 0 0 5\n"), false)
	f.Fuzz(func(t *testing.T, b []byte, v6 bool) {
		var set InodeSet
		set.Reset()
		if err := ParseProcNet(b, v6, &set); err != nil {
			return
		}
		want, ok := referenceProcNet(b)
		if !ok {
			t.Fatalf("accepted %q, which the reference rejects", b)
		}
		if got := setSlice(&set); !slices.Equal(got, want) {
			t.Fatalf("%q: inodes %v, reference %v", b, got, want)
		}
	})
}

// FuzzProcNetLines builds lines with the kernel's own format from fuzzed
// values: the parser must accept each and agree with the reference.
func FuzzProcNetLines(f *testing.F) {
	f.Add(uint32(0), uint8(1), uint32(1000), int32(0), uint64(48213), false, uint16(443))
	f.Add(uint32(99999), uint8(10), uint32(4294967295), int32(-1), uint64(1<<40), true, uint16(0))
	f.Fuzz(func(t *testing.T, slot uint32, state uint8, uid uint32, timeout int32, inode uint64, v6 bool, port uint16) {
		var b bytes.Buffer
		addr := fmt.Sprintf("%08X", 0x0100007F)
		if v6 {
			b.WriteString(header6)
			addr = fmt.Sprintf("%08X%08X%08X%08X", 0, 0, 0xFFFF0000, 0x0100007F)
		} else {
			b.WriteString(header4)
		}
		fmt.Fprintf(&b, "%4d: %s:%04X %s:%04X %02X %08X:%08X %02X:%08X %08X %5d %8d %d 1 0000000000000000 20 4 30 10 -1\n",
			slot, addr, port, addr, port^1, state, 0, 0, 0, 0, 0, uid, timeout, inode)
		var set InodeSet
		set.Reset()
		if err := ParseProcNet(b.Bytes(), v6, &set); err != nil {
			t.Fatalf("%q: %v", b.String(), err)
		}
		want, _ := referenceProcNet(b.Bytes())
		if got := setSlice(&set); !slices.Equal(got, want) {
			t.Fatalf("%q: inodes %v, reference %v", b.String(), got, want)
		}
	})
}

func TestReadProcNetFixture(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(root+"/net", 0o755)
	os.WriteFile(root+"/net/tcp", []byte(tcp4), 0o644)
	var set InodeSet
	set.Reset()
	// No tcp6: IPv6 disabled.
	if _, err := ReadProcNet(fstest.Open(t, root), &set, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := setSlice(&set), []uint64{48213, 4294967296}; !slices.Equal(got, want) {
		t.Errorf("inodes = %v, want %v", got, want)
	}
	os.WriteFile(root+"/net/tcp6", []byte(tcp6), 0o644)
	s := NewSource(fstest.Open(t, root))
	defer s.Close()
	if !s.ProcNet {
		t.Error("a fixture root must be read from its files")
	}
	if err := s.Established(&set); err != nil {
		t.Fatal(err)
	}
	if got, want := setSlice(&set), []uint64{777, 48213, 4294967296}; !slices.Equal(got, want) {
		t.Errorf("inodes = %v, want %v", got, want)
	}
}
