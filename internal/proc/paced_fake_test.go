package proc

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A paced read of a tree given with --proc DIR: whatever its maps and
// pagemap are, the read ends quickly with figures or an error, holds
// memory within its caps, and never looks frames up.

const fakePID = 4242

// fakeTree makes a tree holding process fakePID with statm resident
// pages, maps and a pagemap of entries at page indexes (page i's entry
// at byte 8*i); nil entries leave pagemap out. It returns the tree.
func fakeTree(t *testing.T, resident uint64, maps string, entries map[uint64]uint64) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, itoa(fakePID))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("statm", fmt.Sprintf("%d %d 0 1 0 %d 0\n", resident+1, resident, resident))
	write("maps", maps)
	if entries != nil {
		f, err := os.Create(filepath.Join(dir, "pagemap"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var b [8]byte
		for i, e := range entries {
			binary.LittleEndian.PutUint64(b[:], e)
			if _, err := f.WriteAt(b[:], int64(i*8)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// fakePaced reads fakePID of the tree at root page by page.
func fakePaced(t *testing.T, root string, pc *Pacer) (Rollup, *Reader, error) {
	t.Helper()
	fs, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	r := fs.NewReader()
	t.Cleanup(r.Close)
	r.Select(fakePID)
	st, err := r.Statm()
	if err != nil {
		t.Fatal(err)
	}
	var ru Rollup
	if err := r.HoldPagemap(); err != nil {
		return ru, r, err
	}
	done := make(chan error, 1)
	go func() { done <- r.Paced(&ru, pc, st) }()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a paced read of a fake tree did not end in 20 s")
	}
	return ru, r, err
}

// TestPacedFakeTreeNotRegular: a pagemap or maps that is a FIFO (a read
// would block), a symbolic link (to anything), a directory or a device is
// refused, not read.
func TestPacedFakeTreeNotRegular(t *testing.T) {
	const maps = "00001000-00002000 rw-p 00000000 00:00 0 \n"
	entries := map[uint64]uint64{1: pmPresent | pmExclusive}
	for _, file := range []string{"pagemap", "maps"} {
		for _, kind := range []string{"fifo", "symlink to /dev/zero", "symlink to a regular file", "directory", "device"} {
			t.Run(file+" "+kind, func(t *testing.T) {
				root := fakeTree(t, 1, maps, entries)
				p := filepath.Join(root, itoa(fakePID), file)
				real := filepath.Join(t.TempDir(), "real")
				os.Rename(p, real)
				var err error
				switch kind {
				case "fifo":
					err = syscall.Mkfifo(p, 0o644)
				case "symlink to /dev/zero":
					err = os.Symlink("/dev/zero", p)
				case "symlink to a regular file":
					err = os.Symlink(real, p)
				case "directory":
					err = os.Mkdir(p, 0o755)
				case "device":
					if os.Geteuid() != 0 {
						t.Skip("mknod needs root")
					}
					err = syscall.Mknod(p, syscall.S_IFCHR|0o644, 1<<8|5) // /dev/zero
				}
				if err != nil {
					t.Fatal(err)
				}
				_, _, err = fakePaced(t, root, &Pacer{})
				if err != ErrNotRegular {
					t.Errorf("%s as a %s: err %v, want ErrNotRegular", file, kind, err)
				}
			})
		}
	}
}

// TestPacedFakeTreeCapped: maps lines spanning the whole address space,
// or one range listed a hundred thousand times, over a sparse pagemap of
// a terabyte, with a statm claiming enough resident pages to be read
// entry by entry: the read stops at MaxFileSize of pagemap read, as any
// file of such a tree is capped.
func TestPacedFakeTreeCapped(t *testing.T) {
	for _, c := range []struct {
		name string
		maps string
	}{
		{"whole address space", "00000000-7ffffffff000 rw-p 00000000 00:00 0 \n"},
		{"one range again and again", strings.Repeat("00000000-40000000 rw-p 00000000 00:00 0 \n", 100000)},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := fakeTree(t, 1<<40, c.maps, map[uint64]uint64{1 << 37: pmPresent | pmExclusive})
			pc := &Pacer{}
			_, _, err := fakePaced(t, root, pc)
			if err != ErrTooLarge {
				t.Errorf("err %v, want ErrTooLarge", err)
			}
			if pc.Entries > MaxFileSize/8+PacedStep/pageSize {
				t.Errorf("%d entries read, beyond the cap", pc.Entries)
			}
			if pc.Scans != 0 {
				t.Errorf("%d PAGEMAP_SCAN calls on a file of a fake tree", pc.Scans)
			}
		})
	}
}

// TestPacedFakeTreeMapsMemory: maps of long lines are read a chunk at a
// time into 24 bytes a mapping; beyond MaxMapsSize the read gives up.
// Whole, maps of 65508 mappings with paths of 3.9 KB (252 MB) made a
// report of that process peak at 516 MiB.
func TestPacedFakeTreeMapsMemory(t *testing.T) {
	name := "/" + strings.Repeat(strings.Repeat("x", 250)+"/", 15) + "f"
	line := func(i int) string {
		return fmt.Sprintf("%08x-%08x r--s 00000000 fe:00 12 %s\n", (2*i+1)*pageSize, (2*i+2)*pageSize, name)
	}
	build := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(line(i))
		}
		return b.String()
	}
	lineLen := len(line(0))
	entries := map[uint64]uint64{}
	under := MaxMapsSize/lineLen - 1
	for i := range under {
		entries[uint64(2*i+1)] = pmPresent | pmFile | pmExclusive
	}
	t.Run("under the cap", func(t *testing.T) {
		root := fakeTree(t, uint64(under), build(under), entries)
		pc := &Pacer{}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ru, r, err := fakePaced(t, root, pc)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if want := uint64(under) * pageSize; ru.Rss != want {
			t.Errorf("Rss %d, want %d", ru.Rss, want)
		}
		if len(r.buf) > MaxSmallFile || len(pc.chunk) != mapsChunk {
			t.Errorf("buffers of %d and %d bytes", len(r.buf), len(pc.chunk))
		}
		if got, most := after.TotalAlloc-before.TotalAlloc, uint64(under*24*2+8<<20); got > most {
			t.Errorf("%d bytes allocated to read %d bytes of maps, want at most %d", got, under*lineLen, most)
		}
	})
	t.Run("over the cap", func(t *testing.T) {
		n := MaxMapsSize/lineLen + 1
		root := fakeTree(t, uint64(n), build(n), entries)
		if _, _, err := fakePaced(t, root, &Pacer{}); err != ErrTooLarge {
			t.Errorf("err %v, want ErrTooLarge", err)
		}
	})
	t.Run("a line longer than a chunk", func(t *testing.T) {
		long := fmt.Sprintf("00001000-00002000 r--s 00000000 fe:00 12 /%s\n", strings.Repeat("y", mapsChunk))
		root := fakeTree(t, 1, long, entries)
		if _, _, err := fakePaced(t, root, &Pacer{}); err != ErrMalformed {
			t.Errorf("err %v, want ErrMalformed", err)
		}
	})
}

// TestPacedFakeTreeOddMaps: lines a kernel never prints end the read
// with ErrMalformed (the process is then read the usual way).
func TestPacedFakeTreeOddMaps(t *testing.T) {
	entries := map[uint64]uint64{1: pmPresent | pmExclusive}
	for _, maps := range []string{
		"00001000-00001001 rw-p 00000000 00:00 0 \n",
		"00001001-00003000 rw-p 00000000 00:00 0 \n",
		"00001000-00002000 rw-p 00000000 00:00 0 ",
		"00002000-00001000 rw-p 00000000 00:00 0 \n",
		"garbage\n",
	} {
		root := fakeTree(t, 1, maps, entries)
		if _, _, err := fakePaced(t, root, &Pacer{}); err != ErrMalformed {
			t.Errorf("maps %q: err %v, want ErrMalformed", maps, err)
		}
	}
	root := fakeTree(t, 1, "", entries)
	if _, _, err := fakePaced(t, root, &Pacer{}); err != ErrNoMM {
		t.Errorf("empty maps: err %v, want ErrNoMM", err)
	}
}

// TestPacedFakeTreeNoFrameLookups: a fake pagemap showing frame numbers
// of shared pages, beside a kpagecount file of its own, read by root:
// frames are never looked up (OpenKPages refuses any tree but a real
// procfs root), and the shared pages are estimates within the bound.
func TestPacedFakeTreeNoFrameLookups(t *testing.T) {
	entries := map[uint64]uint64{}
	for i := uint64(1); i <= 64; i++ {
		entries[i] = pmPresent | pmFile | 1000 + i // shared, a frame number
	}
	root := fakeTree(t, 64, "00001000-00041000 r--s 00000000 fe:00 12 /lib/x\n", entries)
	counts := make([]byte, 8*2048)
	for i := range 2048 {
		binary.LittleEndian.PutUint64(counts[8*i:], 1) // "mapped once": would make them private
	}
	for _, f := range []string{"kpagecount", "kpageflags"} {
		if err := os.WriteFile(filepath.Join(root, f), counts, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pc := &Pacer{}
	ru, _, err := fakePaced(t, root, pc)
	if err != nil {
		t.Fatal(err)
	}
	if pc.KP != nil {
		t.Error("frame lookups opened on a fake tree")
	}
	if ru.PrivateDirty != 0 || ru.Bound != 64*pageSize/2 || ru.Rss != 64*pageSize {
		t.Errorf("Private %d Bound %d Rss %d: want the 64 shared pages estimated", ru.PrivateDirty, ru.Bound, ru.Rss)
	}
}
