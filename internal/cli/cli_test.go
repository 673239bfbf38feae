package cli

import (
	"io"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"512", 512}, {"512B", 512}, {"4KiB", 4 << 10}, {"4k", 4 << 10}, {"64MiB", 64 << 20},
		{"1GiB", 1 << 30}, {"1.5GiB", 3 << 29}, {"2TiB", 2 << 40}, {"10MB", 10 << 20},
		{"0TI", 0}, {"1KIB", 1 << 10}, {"2gI", 2 << 30}, // FuzzParseSize
	} {
		got, err := ParseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	// "0i" (and so "5iB", "5bB"): found by FuzzParseSize; "NaN" by
	// reading the code then.
	for _, bad := range []string{"", "lots", "-1", "1PiB", "1XB", "GiB", "0i", "5iB", "5bB", "NaN", "nanKiB", "1e300TiB",
		// Taken by strconv.ParseFloat, by no doc, so refused.
		"1e3", "0x1p4K", "inf", "1_0MiB", "+5", ".5GiB", "5.GiB"} {
		if got, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", bad, got)
		}
	}
}

func TestParseDays(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{{"0", 0}, {"30d", 30 * 24 * time.Hour}, {"12h", 12 * time.Hour}, {"90s", 90 * time.Second}} {
		got, err := ParseDays(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseDays(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "3x", "-1h", "d", "1.5d", "+7d", "+12h", "1_0d"} {
		if got, err := ParseDays(bad); err == nil {
			t.Errorf("ParseDays(%q) = %v, want an error", bad, got)
		}
	}
}

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 500_600_000, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{in: "2026-03-01T12:00:00Z", want: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		{in: "2026-03-01T13:00:00.25+01:00", want: time.Date(2026, 3, 1, 12, 0, 0, 250e6, time.UTC)},
		{in: "2026-03-01T12:00:00.000999999Z", want: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, // FuzzParseTime
		{in: "2026-03-01", want: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		{in: "24h", want: time.Date(2026, 3, 9, 12, 0, 0, 500e6, time.UTC)},
		{in: "90m", want: time.Date(2026, 3, 10, 10, 30, 0, 500e6, time.UTC)},
		{in: "7d", want: time.Date(2026, 3, 3, 12, 0, 0, 500e6, time.UTC)},
		{in: "-1h", err: true},
		{in: "yesterday", err: true},
		{in: "d", err: true},
		{in: "", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTime(tc.in, now)
			if tc.err {
				if err == nil {
					t.Errorf("ParseTime(%q) = %v, want an error", tc.in, got)
				}
				return
			}
			if err != nil || !got.Equal(tc.want) {
				t.Errorf("ParseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestSeconds(t *testing.T) {
	for in, want := range map[string]time.Duration{"2": 2 * time.Second, "0.5": 500 * time.Millisecond, "1m": time.Minute} {
		var d Seconds
		if err := d.Set(in); err != nil || time.Duration(d) != want {
			t.Errorf("Set(%q) = %v, %v; want %v", in, time.Duration(d), err, want)
		}
	}
	for _, bad := range []string{"0", "-1", "NaN", "soon"} {
		var d Seconds
		if err := d.Set(bad); err == nil {
			t.Errorf("Set(%q) = %v, want an error", bad, time.Duration(d))
		}
	}
}

// TestSuggest: a typo names the nearest flag or command; a word far from
// all of them, none.
func TestSuggest(t *testing.T) {
	flags := []string{"--system", "--split", "--reverse", "--sort", "--by", "-p", "--pid", "--top", "--total", "--json", "--csv"}
	for word, want := range map[string]string{
		"--sytem": "--system", "--systme": "--system", "--revrese": "--reverse", "--jsno": "--json",
		"--tp": "--top", "--csvv": "--csv", "--colour": "", "--percent": "",
	} {
		if got := Suggest(word, flags); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
	cmds := []string{"report", "watch", "snapshot", "diff", "serve", "record", "leaks", "export"}
	for word, want := range map[string]string{"wach": "watch", "snapshto": "snapshot", "lekas": "leaks", "recrod": "record", "foo": ""} {
		if got := Suggest(word, cmds); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
}

// TestParseHabits: an unknown flag that is a typo names the flag meant;
// a habit from another tool, unknown or given without its value, gets
// its hint; a one-letter flag gets no guess.
func TestParseHabits(t *testing.T) {
	habits := []Habit{{Flag: "-w", Hint: "watch instead"}, {Flag: "-u", Hint: "--by user instead"}}
	for _, tc := range []struct {
		args      []string
		msg, hint string
	}{
		{[]string{"--sytem"}, "unknown flag --sytem (did you mean --system?)", ""},
		{[]string{"-w", "2"}, "unknown flag -w", "watch instead"},
		{[]string{"-u"}, "-u: needs a value", "--by user instead"},
		{[]string{"-x"}, "unknown flag -x", ""},
	} {
		fs := NewFlagSet("t")
		fs.Bool("system", false, "")
		fs.String("u", "", "")
		err := Parse(fs, "", tc.args, io.Discard, habits...)
		ue, ok := err.(*UsageError)
		if !ok || ue.Msg != tc.msg || ue.Hint != tc.hint {
			t.Errorf("%q: %#v; want %q, hint %q", tc.args, err, tc.msg, tc.hint)
		}
	}
}
