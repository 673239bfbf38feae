package proc

import (
	"os"
	"testing"
)

// TestEstimateAvailableLive sets the kernel's own MemAvailable against
// EstimateAvailable from the same moment's meminfo and zoneinfo. The two
// reads are not atomic, so they may differ by what changed in between;
// 2% of MemTotal is far more than an idle second moves and far less than
// the error of leaving the estimate out (MemAvailable read as 0).
func TestEstimateAvailableLive(t *testing.T) {
	fs := openLive(t)
	r := fs.NewReader()
	var m Meminfo
	var z Zoneinfo
	if err := r.Meminfo(&m); err != nil {
		t.Fatal(err)
	}
	if err := r.Zoneinfo(&z); err != nil {
		t.Skipf("skipping: /proc/zoneinfo: %v", err)
	}
	if !m.HasMemAvailable {
		t.Skip("skipping: this kernel has no MemAvailable to compare with")
	}
	got := EstimateAvailable(&m, &z)
	diff := int64(got) - int64(m.MemAvailable)
	if diff < 0 {
		diff = -diff
	}
	if diff > int64(m.MemTotal/50) {
		t.Errorf("EstimateAvailable = %d, kernel's MemAvailable %d (diff %d bytes > 2%% of MemTotal)", got, m.MemAvailable, diff)
	}
	t.Logf("EstimateAvailable %d, MemAvailable %d, diff %d bytes (low %d, reserve %d)", got, m.MemAvailable, diff, z.LowWatermark, z.Reserve)
}

func TestParseZoneinfo(t *testing.T) {
	in := "Node 0, zone      DMA\n  pages free     3840\n        min      47\n        low      58\n        high     69\n        managed  3840\n        protection: (0, 3018, 5322, 5322)\n" +
		"Node 0, zone   Normal\n  pagesets\n    cpu: 0\n              count: 17\n              high:  0\n    cpu: 1\n              count:    25\n              high:  0\n        min      7292\n        low      9115\n        high     10938\n        managed  589824\n        protection: (0, 0, 0)\n"
	var z Zoneinfo
	if err := ParseZoneinfo([]byte(in), &z, 4096); err != nil {
		t.Fatal(err)
	}
	if got, want := z.LowWatermark, uint64(58+9115)*4096; got != want {
		t.Errorf("LowWatermark = %d, want %d", got, want)
	}
	// DMA: 5322+69 capped at 3840 managed; Normal: 0+10938.
	if got, want := z.Reserve, uint64(3840+10938)*4096; got != want {
		t.Errorf("Reserve = %d, want %d", got, want)
	}
	// The per-CPU lists' free pages: 17 + 25.
	if got, want := z.PCPFree, uint64(17+25)*4096; got != want {
		t.Errorf("PCPFree = %d, want %d", got, want)
	}
	if err := ParseZoneinfo([]byte("nothing\n"), &z, 4096); err != ErrMalformed {
		t.Errorf("no zones: err = %v, want ErrMalformed", err)
	}
	b, err := os.ReadFile("/proc/zoneinfo")
	if err == nil {
		if n := testing.AllocsPerRun(10, func() { ParseZoneinfo(b, &z, 4096) }); n != 0 {
			t.Errorf("ParseZoneinfo allocs = %v, want 0", n)
		}
	}
}
