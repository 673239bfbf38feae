package cli

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// asciiUpper upper-cases ASCII letters only: strings.ToUpper would also
// fold "ı" into "I".
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// refSize reads a size the slow way: a number (strconv.ParseFloat,
// finite, not negative) and one of the units of ParseSize's doc comment,
// in any case, spaces allowed between; below 2^62 bytes.
func refSize(s string) (int64, bool) {
	up := asciiUpper(s)
	shift := 0
	for _, u := range []struct {
		suffix string
		shift  int
	}{
		{"KIB", 10}, {"MIB", 20}, {"GIB", 30}, {"TIB", 40},
		{"KB", 10}, {"MB", 20}, {"GB", 30}, {"TB", 40},
		{"KI", 10}, {"MI", 20}, {"GI", 30}, {"TI", 40},
		{"K", 10}, {"M", 20}, {"G", 30}, {"T", 40}, {"B", 0},
	} {
		if strings.HasSuffix(up, u.suffix) {
			up, shift = up[:len(up)-len(u.suffix)], u.shift
			break
		}
	}
	num := strings.TrimSpace(up)
	n, err := strconv.ParseFloat(num, 64)
	// Plain decimals only: digits, at most one point with digits on
	// both sides.
	whole, frac, dot := strings.Cut(num, ".")
	plain := whole != "" && strings.Trim(whole, "0123456789") == "" &&
		(!dot || frac != "" && strings.Trim(frac, "0123456789") == "")
	if err != nil || !plain || n < 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, false
	}
	v := math.Ldexp(n, shift)
	if v >= 1<<62 {
		return 0, false
	}
	return int64(v), true
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{
		"0", "512", "512B", "4KiB", "4k", "64MiB", "1GiB", "1.5GiB", "2TiB", "10MB", "", "lots", "-1",
		"1PiB", "1XB", "GiB", "4Ki", " 5 K", "1e3", "4611686018427387904", "4095TiB", "4096TiB", "inf", "0x1p4K", "NaN", "nanKiB",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSize(s)
		want, ok := refSize(s)
		if (err == nil) != ok || got != want {
			t.Fatalf("ParseSize(%q) = %d, %v; reference %d, %v", s, got, err, want, ok)
		}
		if err == nil {
			if got < 0 || got >= 1<<62 {
				t.Fatalf("ParseSize(%q) = %d: out of range", s, got)
			}
			if again, err := ParseSize(strconv.FormatInt(got, 10)); err != nil || again != got {
				t.Fatalf("round trip of %d: %d, %v", got, again, err)
			}
		}
	})
}

func FuzzParseDays(f *testing.F) {
	for _, s := range []string{"0", "30d", "12h", "90s", "", "3x", "-1h", "d", "1.5d", "36500d", "36501d", "+7d", "-0d", "-0s", "+1h", "1h30m", "2562047h47m16.854775807s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseDays(s)
		// The reference: a whole number of days up to 100 years, or a
		// Go duration that is not negative.
		var want time.Duration
		ok := true
		if s == "0" {
		} else if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
			ok = false
		} else if days, isDays := strings.CutSuffix(s, "d"); isDays {
			n, e := strconv.ParseUint(days, 10, 64)
			ok = e == nil && n <= 36500
			want = time.Duration(n) * 24 * time.Hour
		} else {
			d, e := time.ParseDuration(s)
			ok = e == nil && d >= 0
			want = d
		}
		if (err == nil) != ok || (ok && got != want) {
			t.Fatalf("ParseDays(%q) = %v, %v; reference %v, %v", s, got, err, want, ok)
		}
		if err != nil {
			return
		}
		if got < 0 {
			t.Fatalf("ParseDays(%q) = %v: negative", s, got)
		}
		// Round trips: Duration.String, and whole days as "Nd".
		if again, err := ParseDays(got.String()); err != nil || again != got {
			t.Fatalf("round trip of %v via %q: %v, %v", got, got.String(), again, err)
		}
		if got%(24*time.Hour) == 0 && got <= 36500*24*time.Hour {
			days := strconv.FormatInt(int64(got/(24*time.Hour)), 10) + "d"
			if again, err := ParseDays(days); err != nil || again != got {
				t.Fatalf("round trip of %v via %q: %v, %v", got, days, again, err)
			}
		}
	})
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{
		"2026-03-01T12:00:00Z", "2026-03-01T13:00:00.25+01:00", "2026-03-01", "24h", "90m", "7d", "-1h",
		"yesterday", "d", "", "65535d", "65536d", "2026-11-26T05:16:00.123456789Z", "0001-01-01", "9999-12-31T23:59:59.999999999-23:59",
	} {
		f.Add(s, int64(1795670212123456789))
	}
	f.Fuzz(func(t *testing.T, s string, nowNs int64) {
		now := time.Unix(0, nowNs).UTC()
		got, err := ParseTime(s, now)
		if err != nil {
			return
		}
		// Whatever the form, the result is to the millisecond.
		if got.Nanosecond()%int(time.Millisecond) != 0 {
			t.Fatalf("ParseTime(%q) = %v: not truncated to the millisecond", s, got)
		}
		// A duration ago is not after now, and as far before it as said.
		var d time.Duration
		isDur := false
		if days, ok := strings.CutSuffix(s, "d"); ok {
			if n, e := strconv.ParseUint(days, 10, 16); e == nil {
				d, isDur = time.Duration(n)*24*time.Hour, true
			}
		} else if v, e := time.ParseDuration(s); e == nil {
			d, isDur = v, true
		}
		if isDur {
			if want := now.Add(-d).Truncate(time.Millisecond); !got.Equal(want) {
				t.Fatalf("ParseTime(%q, %v) = %v, want %v", s, now, got, want)
			}
			return
		}
		// An absolute time round-trips through RFC 3339.
		if again, err := ParseTime(got.Format(time.RFC3339Nano), now); err != nil || !again.Equal(got) {
			t.Fatalf("round trip of %v: %v, %v", got, again, err)
		}
	})
}
