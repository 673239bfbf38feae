package cli

import (
	"context"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReview8InterruptibleSignals: SIGHUP ends an Interruptible context
// as SIGINT and SIGTERM do (a closed terminal left a snapshot -o's or a
// report --html's temporary file behind), and SIGINT and SIGHUP that
// the process ignores stay ignored (nohup, a script's background job):
// os/signal installed a handler for them, so a Ctrl-C meant for a
// script's foreground command stopped the record it ran with "&".
func TestReview8InterruptibleSignals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sig     syscall.Signal
		ignored bool
		ends    bool
	}{
		{"SIGHUP", syscall.SIGHUP, false, true},
		{"SIGINT", syscall.SIGINT, false, true},
		{"SIGTERM", syscall.SIGTERM, false, true},
		{"SIGHUP ignored (nohup)", syscall.SIGHUP, true, false},
		{"SIGINT ignored (a background job of sh)", syscall.SIGINT, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ignored {
				signal.Ignore(tc.sig)
				defer signal.Reset(tc.sig)
			}
			ctx, stop := Interruptible(context.Background())
			defer stop()
			syscall.Kill(syscall.Getpid(), tc.sig)
			select {
			case <-ctx.Done():
				if !tc.ends {
					t.Errorf("%v ended the context; it was ignored", tc.sig)
				}
			case <-time.After(300 * time.Millisecond):
				if tc.ends {
					t.Errorf("%v did not end the context", tc.sig)
				}
			}
			if tc.ignored && !signal.Ignored(tc.sig) {
				t.Errorf("%v no longer ignored after Interruptible", tc.sig)
			}
		})
	}
}

// TestReview8Parsers: the tightened parsers (sizes plain decimals, days
// and times without a sign) against spellings around the new rules:
// other scripts' digits, invisible and no-break spaces, points in odd
// places, long digit strings, and a sign on a zero ("-0s" and "-0h" were
// still taken by ParseDays after "-0d" was refused, and "+1h" and "-0s"
// by ParseTime for --since and --to).
func TestReview8Parsers(t *testing.T) {
	long := strings.Repeat("9", 400)
	for _, tc := range []struct {
		in   string
		want int64 // -1: refused
	}{
		{"1.5.5K", -1}, {"1..5", -1}, {"1.K", -1}, {".K", -1}, {".", -1}, {"1.5e3", -1},
		{"\u0665", -1}, {"\uff15K", -1}, {"1 5", -1}, {"5\u200bK", -1}, {"5K\u00a0", -1},
		{"\t5K", 5 << 10}, {"05", 5}, {"0005.5K", 5632}, {"0.0000001", 0}, {"5 K", 5 << 10},
		{"4194303.9999999999999T", -1}, {long, -1}, {long + "." + long, -1}, {"1" + strings.Repeat("0", 30) + "K", -1},
		{"0x", -1}, {"0b1", -1}, {"1__0", -1}, {"1,5K", -1}, {"１K", -1},
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
	}
	const day = 24 * time.Hour
	for _, tc := range []struct {
		in   string
		want time.Duration // -1: refused
	}{
		{"-0s", -1}, {"-0h", -1}, {"-0", -1}, {"+0", -1}, {"+1h", -1}, {"\u22121h", -1}, {"1h-1m", -1},
		{"00d", 0}, {"0000000000000000000001d", day}, {"1d1h", -1}, {"\u0665d", -1}, {"5\u00a0d", -1},
		{"0s", 0}, {"0h", 0}, {"5µs", 5 * time.Microsecond}, {"1.5h", 90 * time.Minute},
		// Go's duration syntax, as documented ("a Go duration"): a
		// point with no digit before it stays taken, unlike sizes.
		{".5h", 30 * time.Minute},
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
	now := time.Date(2026, 11, 26, 6, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"+1h", false}, {"-0s", false}, {"-0d", false}, {"+1d", false}, {"1h", true}, {"0", true}, {"7d", true},
		{"2026-11-26T06:00:00+01:00", true}, {"2026-11-26T06:00:00-01:00", true},
	} {
		if got, err := ParseTime(tc.in, now); (err == nil) != tc.ok {
			t.Errorf("ParseTime(%q) = %v, %v; want ok=%v", tc.in, got, err, tc.ok)
		}
	}
}
