package cli

import (
	"testing"
	"time"
)

// TestParseSizeOdd: odd spellings against ParseSize: never a
// negative size, NaN, a wrapped int64 or a unit read from stray
// letters.
func TestParseSizeOdd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64 // -1: refused
	}{
		{"1KiB", 1 << 10}, {"1kib", 1 << 10}, {"1KIB", 1 << 10}, {"1TI", 1 << 40}, {"1kb", 1 << 10},
		{" 5 KiB", 5 << 10}, {"5\u00a0MiB", 5 << 20}, {"5 ", 5},
		{"-0", -1}, {"-0K", -1}, {"-1", -1}, {"-1K", -1},
		{"NaN", -1}, {"nanK", -1}, {"-nan", -1}, {"Inf", -1}, {"+InfK", -1}, {"infinity", -1},
		{"1e308T", -1}, {"4194303.999T", 4611686017327876096}, {"4194304T", -1}, {"4194303T", 4194303 << 40}, {"4611686018427387904", -1},
		{"1.5B", 1}, {"0.5K", 512}, {"1e3K", -1}, {"0x1p4", -1}, {"0x10", -1},
		{"5iB", -1}, {"5bB", -1}, {"0i", -1}, {"1KiBB", -1}, {"1 K iB", -1}, {"1Kb ", -1},
		{"1P", -1}, {"1E", -1}, {"K", -1}, {"", -1}, {"B", -1}, {"1_000", -1}, // refused since: plain decimals only
	} {
		got, err := ParseSize(tc.in)
		if tc.want < 0 {
			if err == nil {
				t.Errorf("ParseSize(%q) = %d, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
		if got < 0 || got >= 1<<62 {
			t.Errorf("ParseSize(%q) = %d: out of range", tc.in, got)
		}
	}
}

// TestParseDaysOdd: never negative, no overflow, days only whole.
func TestParseDaysOdd(t *testing.T) {
	const day = 24 * time.Hour
	for _, tc := range []struct {
		in   string
		want time.Duration // -1: refused
	}{
		{"0", 0}, {"0d", 0}, {"-0d", -1}, {"+5d", -1}, {"+1h", -1}, {"36500d", 36500 * day}, {"36501d", -1},
		{"-1d", -1}, {"-1h", -1}, {"-0s", -1 /* no sign */}, {"1.5d", -1}, {"d", -1}, {"5", -1}, {"5d ", -1}, {" 5d", -1},
		{"9223372036854775807d", -1}, {"2562048h", -1}, {"1h30m", 90 * time.Minute}, {"5D", -1},
	} {
		got, err := ParseDays(tc.in)
		if tc.want < 0 {
			if err == nil {
				t.Errorf("ParseDays(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseDays(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestParseTimeOdd: every time comes back on a millisecond, never
// after now for a duration, and the odd ones are refused.
func TestParseTimeOdd(t *testing.T) {
	now := time.Date(2026, 11, 26, 6, 30, 0, 123456789, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time // zero: refused
	}{
		{"2026-11-26T12:00:00.0005Z", time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)},
		{"2026-11-26T12:00:00.9999999Z", time.Date(2026, 11, 26, 12, 0, 0, 999e6, time.UTC)},
		{"0001-01-01T00:00:00.0011Z", time.Date(1, 1, 1, 0, 0, 0, 1e6, time.UTC)},
		{"2026-11-26T23:59:60Z", time.Time{}},
		{"2026-02-30", time.Time{}},
		{"2026-11-26", time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)},
		{"0", now.Truncate(time.Millisecond)},
		{"-0s", time.Time{}}, // no sign
		{"-1h", time.Time{}},
		{"-1d", time.Time{}},
		{"+1d", time.Time{}}, // ParseUint takes no sign
		{"65536d", time.Time{}},
		{"1d", now.Add(-24 * time.Hour).Truncate(time.Millisecond)},
		{"", time.Time{}},
		{"now", time.Time{}},
	} {
		got, err := ParseTime(tc.in, now)
		if tc.want.IsZero() {
			if err == nil {
				t.Errorf("ParseTime(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if got.Nanosecond()%1e6 != 0 {
			t.Errorf("ParseTime(%q) = %v: not on a millisecond", tc.in, got)
		}
	}
}
