package proc

import (
	"bytes"
	"io"
	"os"
	"strings"
)

// DefaultSysRoot is where sysfs is mounted on a live host.
const DefaultSysRoot = "/sys"

// Caps on what ZramUsed reads: the kernel allows at most a few hundred
// zram devices (and a fake tree could hold millions of entries), and an
// mm_stat line is under 200 bytes.
const (
	maxZramDevices = 1024
	maxMmStat      = 4 << 10
)

// ZramUsed returns the RAM all zram devices take, in bytes: the sum of
// mem_used_total, the third field of block/zram*/mm_stat under sysRoot
// (DefaultSysRoot on a live host): compressed pages plus the allocator's
// overhead. No block directory or no zram device is 0 and no error; a
// device whose mm_stat cannot be read (reset, or a kernel before 4.1) is
// skipped; an mm_stat that is not a line of numbers is ErrMalformed, the
// devices read so far summed. Reads are confined to sysRoot (os.Root):
// /sys/block's entries are symlinks into /sys/devices.
func ZramUsed(sysRoot string) (uint64, error) {
	root, err := os.OpenRoot(sysRoot)
	if err != nil {
		return 0, nil
	}
	defer root.Close()
	dir, err := root.Open("block")
	if err != nil {
		return 0, nil
	}
	names, _ := dir.Readdirnames(maxZramDevices * 4)
	dir.Close()
	var sum uint64
	n := 0
	for _, name := range names {
		if !strings.HasPrefix(name, "zram") || strings.ContainsRune(name, '/') {
			continue
		}
		if n++; n > maxZramDevices {
			break
		}
		f, err := root.Open("block/" + name + "/mm_stat")
		if err != nil {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(f, maxMmStat+1))
		f.Close()
		if err != nil {
			continue
		}
		v, ok := parseMmStat(b)
		if !ok {
			return sum, ErrMalformed
		}
		sum = min(sum+v, MaxBytes) // each at most MaxBytes: no wrap
	}
	return sum, nil
}

// parseMmStat returns mem_used_total, the third field of an mm_stat
// line, in bytes.
func parseMmStat(b []byte) (uint64, bool) {
	if len(b) > maxMmStat {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return 0, false
	}
	for _, x := range f[:3] {
		if _, n, ok := parseUint(x); !ok || n != len(x) {
			return 0, false
		}
	}
	v, _, _ := parseUint(f[2])
	if v > MaxBytes {
		return 0, false
	}
	return v, true
}
