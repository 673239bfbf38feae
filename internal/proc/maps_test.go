package proc

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestNextVMA(t *testing.T) {
	for _, c := range []struct {
		in   string
		want VMA
		ok   bool
	}{
		{"00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n",
			VMA{Start: 0x400000, End: 0x452000, Major: 8, Minor: 2, Inode: 173521, Name: []byte("/usr/bin/dbus-daemon"), ReadOnly: true}, true},
		{"7f1c-7f2d rw-s 000a0000 00:01 1026 /dev/zero (deleted)\n",
			VMA{Start: 0x7f1c, End: 0x7f2d, Shared: true, Offset: 0xa0000, Minor: 1, Inode: 1026, Name: []byte("/dev/zero (deleted)")}, true},
		{"7ffd2a000000-7ffd2a021000 rw-p 00000000 00:00 0                          [stack]\n",
			VMA{Start: 0x7ffd2a000000, End: 0x7ffd2a021000, Name: []byte("[stack]")}, true},
		{"c000000000-c004000000 ---p 00000000 00:00 0 \n",
			VMA{Start: 0xc000000000, End: 0xc004000000, ReadOnly: true, NoAccess: true, Name: []byte{}}, true},
		{"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n",
			VMA{Start: 0xffffffffff600000, End: 0xffffffffff601000, ReadOnly: true, Name: []byte("[vsyscall]")}, true},
		{"1000-2000 rw-p 0 0:0 0\n", VMA{Start: 0x1000, End: 0x2000, Name: []byte{}}, true},
		// Cut short, or not the shape.
		{"1000-2000 rw-p 00000000 00:00 0", VMA{}, false},
		{"2000-1000 rw-p 00000000 00:00 0\n", VMA{}, false},
		{"1000-1000 rw-p 00000000 00:00 0\n", VMA{}, false},
		{"1000-2000 rw-x 00000000 00:00 0\n", VMA{}, false},
		{"1000-2000 rw-p 00000000 00:00 x\n", VMA{}, false},
		{"1000-2000 rw-p 00000000 100000000:00 0\n", VMA{}, false},
		{"10000000000000000-20000000000000000 rw-p 0 0:0 0\n", VMA{}, false},
		{"\n", VMA{}, false},
	} {
		var v VMA
		rest, err := NextVMA([]byte(c.in+"next"), &v)
		if (err == nil) != c.ok {
			t.Errorf("NextVMA(%q): %v, want ok %v", c.in, err, c.ok)
			continue
		}
		if !c.ok {
			continue
		}
		if string(rest) != "next" {
			t.Errorf("NextVMA(%q): rest %q", c.in, rest)
		}
		if v.Start != c.want.Start || v.End != c.want.End || v.Shared != c.want.Shared || v.Offset != c.want.Offset ||
			v.Major != c.want.Major || v.Minor != c.want.Minor || v.Inode != c.want.Inode || string(v.Name) != string(c.want.Name) ||
			v.ReadOnly != c.want.ReadOnly || v.NoAccess != c.want.NoAccess {
			t.Errorf("NextVMA(%q) = %+v, want %+v", c.in, v, c.want)
		}
	}
}

// TestNextVMALive parses this process's maps: every line, each mapping
// after the one before.
func TestNextVMALive(t *testing.T) {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	n, prev := 0, uint64(0)
	for rest := b; len(rest) > 0; n++ {
		var v VMA
		if rest, err = NextVMA(rest, &v); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		if v.Start < prev {
			t.Errorf("line %d: %#x before the previous end %#x", n+1, v.Start, prev)
		}
		prev = v.End
	}
	if want := strings.Count(string(b), "\n"); n != want {
		t.Errorf("%d mappings, %d lines", n, want)
	}
}

// refVMA parses a maps line the slow way, with strings and strconv.
func refVMA(s string) (VMA, string, bool) {
	line, rest, ok := strings.Cut(s, "\n")
	if !ok {
		return VMA{}, "", false
	}
	hex := func(f string, bits int) (uint64, bool) {
		if f == "" || len(f) > 16 || strings.ContainsAny(f, "+-xX_") {
			return 0, false
		}
		v, err := strconv.ParseUint(f, 16, bits)
		return v, err == nil
	}
	var v VMA
	rng, line, ok := strings.Cut(line, " ")
	a, b, ok2 := strings.Cut(rng, "-")
	var ok3, ok4 bool
	v.Start, ok3 = hex(a, 64)
	v.End, ok4 = hex(b, 64)
	if !ok || !ok2 || !ok3 || !ok4 || v.End <= v.Start || len(line) < 5 || line[4] != ' ' {
		return VMA{}, "", false
	}
	perms := line[:4]
	if perms[3] != 's' && perms[3] != 'p' {
		return VMA{}, "", false
	}
	v.Shared, v.ReadOnly = perms[3] == 's', perms[1] != 'w'
	v.NoAccess = perms[:3] == "---"
	off, line, ok := strings.Cut(line[5:], " ")
	if v.Offset, ok2 = hex(off, 64); !ok || !ok2 {
		return VMA{}, "", false
	}
	dev, line, ok := strings.Cut(line, " ")
	maj, min, ok2 := strings.Cut(dev, ":")
	mj, ok3 := hex(maj, 32)
	mn, ok4 := hex(min, 32)
	if !ok || !ok2 || !ok3 || !ok4 {
		return VMA{}, "", false
	}
	v.Major, v.Minor = uint32(mj), uint32(mn)
	ino, name, _ := strings.Cut(line, " ")
	if ino == "" || strings.ContainsAny(ino, "+-_") {
		return VMA{}, "", false
	}
	var err error
	if v.Inode, err = strconv.ParseUint(ino, 10, 64); err != nil {
		return VMA{}, "", false
	}
	v.Name = []byte(strings.TrimLeft(name, " "))
	return v, rest, true
}

func FuzzNextVMA(f *testing.F) {
	seeds(f, "maps")
	for _, s := range []string{
		"00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n",
		"c000000000-c004000000 ---p 00000000 00:00 0 \n", "1-2 rw-s 0 0:0 0\n",
		"ffffffffffffffff-0 rw-p 0 0:0 0\n", "1-2 rw-p 0 fffffffff:0 0\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got VMA
		rest, err := NextVMA([]byte(s), &got)
		want, wrest, ok := refVMA(s)
		if (err == nil) != ok {
			t.Fatalf("NextVMA(%q): err %v, reference ok %v", s, err, ok)
		}
		if !ok {
			return
		}
		if string(rest) != wrest || got.Start != want.Start || got.End != want.End || got.Shared != want.Shared ||
			got.Offset != want.Offset || got.Major != want.Major || got.Minor != want.Minor || got.Inode != want.Inode ||
			string(got.Name) != string(want.Name) || got.ReadOnly != want.ReadOnly || got.NoAccess != want.NoAccess {
			t.Fatalf("NextVMA(%q) = %+v %q, reference %+v %q", s, got, rest, want, wrest)
		}
	})
}

// FuzzPagedSums feeds arbitrary pagemap entries to the sums of a paced
// read without frame lookups, and checks what holds for any: private
// pages count in full in Pss, shared ones between nothing and half, the
// bound covers the estimate, and every entry counts once.
func FuzzPagedSums(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0x81, 0, 0, 0, 0, 0, 0, 0, 0xa0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ent := make([]uint64, len(b)/8)
		for i := range ent {
			for k := range 8 {
				ent[i] |= uint64(b[8*i+k]) << (8 * k)
			}
			ent[i] &^= pmPFN // no frame numbers: not root
		}
		var a pagedAcc
		pc := &Pacer{NoLookups: true}
		v := VMA{Name: []byte("/memfd:x (deleted)")}
		class := classNone
		if err := a.pages(ent, pc, nil, &v, &class); err != nil {
			t.Fatal(err)
		}
		var out Rollup
		if err := a.finish(&out, PagedAnonPages, pc); err != nil {
			t.Fatal(err)
		}
		var present, excl, swap uint64
		for _, e := range ent {
			switch {
			case e&pmPresent != 0:
				present++
				if e&pmExclusive != 0 {
					excl++
				}
			case e&pmSwap != 0:
				swap++
			}
		}
		if out.Rss != present*pageSize || out.PrivateDirty != excl*pageSize || out.Swap != swap*pageSize {
			t.Fatalf("Rss %d Private %d Swap %d; entries: %d present, %d exclusive, %d swapped", out.Rss, out.PrivateDirty, out.Swap, present, excl, swap)
		}
		shared := present - excl
		if out.Pss+1024 < out.PrivateDirty+shared*pageSize/2 || out.Pss > out.PrivateDirty+shared*pageSize/2 {
			t.Fatalf("Pss %d, private %d and %d shared pages", out.Pss, out.PrivateDirty, shared)
		}
		if out.Bound != shared*pageSize/2 || out.SwapBound != out.Swap || out.PssAnon+out.PssShmem > out.Pss+1024 {
			t.Fatalf("bounds %d %d, Pss %d = %d + %d + %d", out.Bound, out.SwapBound, out.Pss, out.PssAnon, out.PssFile, out.PssShmem)
		}
	})
}
