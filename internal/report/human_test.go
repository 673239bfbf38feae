package report

import (
	"bytes"
	"math"
	"testing"

	"github.com/memwho/memwho/internal/sample"
)

func TestHumanBytes(t *testing.T) {
	const (
		KiB = 1 << 10
		MiB = 1 << 20
		GiB = 1 << 30
		TiB = 1 << 40
	)
	tests := []struct {
		n    uint64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{512, "512 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1075, "1.0 KiB"},               // 1.0498 KiB
		{1076, "1.1 KiB"},               // 1.0508 KiB
		{1536, "1.5 KiB"},               // half a KiB exactly
		{1024*1023 + 921, "1023.9 KiB"}, // 1023.8994
		{1024*1024 - 52, "1023.9 KiB"},  // 1023.949
		{1024*1024 - 51, "1.0 MiB"},     // 1023.950 rounds to 1024.0: roll over
		{MiB - 1, "1.0 MiB"},
		{MiB, "1.0 MiB"},
		{3 * MiB / 2, "1.5 MiB"},
		{300 * KiB, "300.0 KiB"},
		{GiB - 1, "1.0 GiB"},
		{5*GiB + 512*MiB, "5.5 GiB"},
		{TiB, "1.0 TiB"},
		{1 << 50, "1.0 PiB"},
		{1 << 60, "1.0 EiB"},
		{math.MaxUint64, "16.0 EiB"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := string(HumanBytes(nil, tt.n)); got != tt.want {
				t.Errorf("HumanBytes(%d) = %q, want %q", tt.n, got, tt.want)
			}
		})
	}
}

// TestHumanBytesWidth checks the claim the table layout rests on: no
// figure below 1 EiB is wider than "1023.9 KiB", and none reads 1024.x.
func TestHumanBytesWidth(t *testing.T) {
	for shift := 0; shift < 60; shift++ {
		for _, d := range []int64{-60, -52, -51, -50, -1, 0, 1} {
			v := int64(1)<<shift + d
			if v < 0 {
				continue
			}
			got := HumanBytes(nil, uint64(v))
			if len(got) > numWidth {
				t.Errorf("HumanBytes(%d) = %q: wider than %d", v, got, numWidth)
			}
			if bytes.HasPrefix(got, []byte("1024.")) {
				t.Errorf("HumanBytes(%d) = %q: should roll to the next unit", v, got)
			}
		}
	}
}

func TestAppendSignedBytes(t *testing.T) {
	tests := []struct {
		v    int64
		want string
	}{
		{0, "0 B"},
		{-1, "-1 B"},
		{-1536, "-1.5 KiB"},
		{1536, "1.5 KiB"},
		{math.MinInt64, "-8.0 EiB"},
	}
	for _, tt := range tests {
		if got := string(appendSignedBytes(nil, tt.v)); got != tt.want {
			t.Errorf("appendSignedBytes(%d) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestTotalLine(t *testing.T) {
	var b bytes.Buffer
	if err := TotalLine(&b, sample.Group{RAM: 123456789, Swap: 5}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "123456789\n"; got != want {
		t.Errorf("TotalLine = %q, want %q", got, want)
	}
}
