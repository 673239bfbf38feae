package cli

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptibleSignals: SIGHUP ends an Interruptible context
// as SIGINT and SIGTERM do (a closed terminal left a snapshot -o's or a
// report --html's temporary file behind), and SIGINT and SIGHUP that
// the process ignores stay ignored (nohup, a script's background job):
// os/signal installed a handler for them, so a Ctrl-C meant for a
// script's foreground command stopped the record it ran with "&".
func TestInterruptibleSignals(t *testing.T) {
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
			} else {
				unignore(tc.sig) // an earlier case's, with -count 2
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

// TestParsersStrict: the tightened parsers (sizes plain decimals, days
// and times without a sign) against spellings around the new rules:
// other scripts' digits, invisible and no-break spaces, points in odd
// places, long digit strings, and a sign on a zero ("-0s" and "-0h" were
// still taken by ParseDays after "-0d" was refused, and "+1h" and "-0s"
// by ParseTime for --since and --to).
func TestParsersStrict(t *testing.T) {
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

// TestInterruptibleViewHangup: InterruptibleView closes its channel at
// a SIGHUP and leaves the context alone (the view decides what a
// hang-up means); a SIGHUP before anyone looks at the channel is kept
// (a hang-up dropped before the view's own handling left it running);
// SIGINT and SIGTERM end the context; under nohup the channel stays
// open and SIGHUP ignored. It runs in a process of its own: os/signal
// goes on reporting a signal as ignored after signal.Reset (here, after
// TestInterruptibleSignals' nohup cases), which would change
// what InterruptibleView catches.
func TestInterruptibleViewHangup(t *testing.T) {
	if os.Getenv("MEMWHO_TEST_VIEW_HANGUP") == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestInterruptibleViewHangup$", "-test.v")
		cmd.Env = append(os.Environ(), "MEMWHO_TEST_VIEW_HANGUP=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestInterruptibleViewHangup") {
			t.Fatalf("%v:\n%s", err, out)
		}
		return
	}
	// The child inherits what the parent ignores.
	unignore(syscall.SIGHUP, syscall.SIGINT)
	t.Run("SIGHUP", func(t *testing.T) {
		ctx, hangup, stop := InterruptibleView(context.Background(), nil)
		defer stop()
		syscall.Kill(syscall.Getpid(), syscall.SIGHUP)
		time.Sleep(50 * time.Millisecond) // nobody reading yet
		select {
		case <-hangup:
		case <-time.After(5 * time.Second):
			t.Fatal("SIGHUP did not close the hang-up channel")
		}
		if ctx.Err() != nil {
			t.Error("SIGHUP ended the context")
		}
		// A second hang-up is caught and dropped, not the default action.
		syscall.Kill(syscall.Getpid(), syscall.SIGHUP)
		time.Sleep(50 * time.Millisecond)
		stop()
		stop() // twice is harmless
	})
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, hangup, stop := InterruptibleView(context.Background(), nil)
			defer stop()
			syscall.Kill(syscall.Getpid(), sig)
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatalf("%v did not end the context", sig)
			}
			select {
			case <-hangup:
				t.Errorf("%v closed the hang-up channel", sig)
			default:
			}
		})
	}
	t.Run("SIGHUP ignored (nohup)", func(t *testing.T) {
		signal.Ignore(syscall.SIGHUP)
		defer signal.Reset(syscall.SIGHUP)
		ctx, hangup, stop := InterruptibleView(context.Background(), nil)
		defer stop()
		syscall.Kill(syscall.Getpid(), syscall.SIGHUP)
		select {
		case <-hangup:
			t.Error("an ignored SIGHUP closed the hang-up channel")
		case <-ctx.Done():
			t.Error("an ignored SIGHUP ended the context")
		case <-time.After(300 * time.Millisecond):
		}
		if !signal.Ignored(syscall.SIGHUP) {
			t.Error("SIGHUP no longer ignored after InterruptibleView")
		}
	})
}

// unignore undoes signal.Ignore, which signal.Reset does not: the
// signal stays ignored, and os/signal says so. Notify takes it back (and
// os/signal no longer counts it ignored); Stop leaves it to the code
// under test.
func unignore(sigs ...os.Signal) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, sigs...)
	signal.Stop(c)
}

// TestFlagError: the flag package's errors reworded as memwho's others
// read (audit, 2026-11-26: "flag provided but not defined: -bogus",
// "invalid value "abc" for flag -top: parse error").
func TestFlagError(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"flag provided but not defined: -bogus", "unknown flag --bogus"},
		{"flag provided but not defined: -x", "unknown flag -x"},
		{"flag needs an argument: -by", "--by: needs a value"},
		{`invalid value "abc" for flag -top: parse error`, `--top: invalid value "abc": not a number`},
		{`invalid value "9999999999999999999999" for flag -top: value out of range`, `--top: invalid value "9999999999999999999999": out of range`},
		{`invalid value "0" for flag -interval: want a positive number`, `--interval: invalid value "0": want a positive number`},
		{`invalid value "x: y" for flag -n: bad`, `-n: invalid value "x: y": bad`},
		{`invalid boolean value "maybe" for -json: parse error`, `--json: invalid value "maybe": want true or false (or the flag alone)`},
		{"bad flag syntax: ---x", "bad flag syntax: ---x"},
		{"something else", "something else"},
	} {
		if got := flagError(tc.in); got != tc.want {
			t.Errorf("flagError(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
