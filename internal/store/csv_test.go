package store

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestAppendCSVField(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        "plain",
		"":             `""`,
		" lead":        " lead", // PostgreSQL does not quote a leading space
		"a,b":          `"a,b"`,
		`say "hi"`:     `"say ""hi"""`,
		"two\nlines":   "\"two\nlines\"",
		"cr\r":         "\"cr\r\"",
		`back\slash`:   `back\slash`,
		"ünïcödé":      "ünïcödé",
		`\.`:           `\.`,
		"tab\there":    "tab\there",
		"semi;colon":   "semi;colon",
		"'single'":     "'single'",
		"ends,":        `"ends,"`,
		"\"":           `""""`,
		"x\x1b[31my":   "x\x1b[31my",
		"multi\n\"q\"": "\"multi\n\"\"q\"\"\"",
	} {
		if got := string(AppendCSVField(nil, in)); got != want {
			t.Errorf("AppendCSVField(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCSVLines(t *testing.T) {
	s := Sample{Time: time.Date(2026, 3, 1, 12, 0, 0, 5e6, time.FixedZone("X", 3600)), Host: "h,1", BootID: ""}
	s.Meminfo.MemTotal = 1 << 30
	r := Row{Kind: KindCgroup, Key: "/a", Count: 2, PSS: 10, MemLimit: 100, MemLimitFree: 40}
	if got, want := string(AppendUsageCSV(nil, &s, &r)), "2026-03-01T11:00:00.005Z,\"h,1\",cgroup,/a,0,0,2,10,0,0,0,0,100,40\n"; got != want {
		t.Errorf("usage line = %q, want %q", got, want)
	}
	if got, want := string(AppendSampleCSV(nil, &s)), "2026-03-01T11:00:00.005Z,\"h,1\",\"\",1073741824,0,0,0,0,0,0,0,0,0,0\n"; got != want {
		t.Errorf("samples line = %q, want %q", got, want)
	}
	if got, want := string(AppendHeader(nil, TableUsage)), strings.Join(UsageColumns, ",")+"\n"; got != want {
		t.Errorf("header = %q, want %q", got, want)
	}
}

// FuzzCSVField checks that every field reads back unchanged through a
// standard CSV reader, alone and between other fields.
func FuzzCSVField(f *testing.F) {
	for _, s := range []string{"", "a", "a,b", `"`, "x\ny", " lead", "\r\n", `\.`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, '\r') || !utf8.ValidString(s) {
			// encoding/csv turns \r\n inside quotes into \n, and stored
			// keys are valid UTF-8 (CleanKey).
			t.Skip()
		}
		line := append(AppendCSVField([]byte("x,"), s), ",y\n"...)
		rec, err := csv.NewReader(strings.NewReader(string(line))).Read()
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if len(rec) != 3 || rec[1] != s {
			t.Fatalf("field %q read back as %q from %q", s, rec, line)
		}
	})
}

func TestCleanKey(t *testing.T) {
	for in, want := range map[string]string{
		"plain":          "plain",
		"ünï":            "ünï",
		"bad\xffbyte":    `bad\xffbyte`,
		"nul\x00here":    `nul\x00here`,
		"\xc3":           `\xc3`,
		"ok\x1b[0m":      "ok\x1b[0m",
		"\xe2\x82":       `\xe2\x82`,
		"mixed\xfeü\x00": `mixed\xfeü\x00`,
		// A backslash is doubled, so that a name holding the four
		// characters \xff stays apart from one holding the byte 0xff
		// (else the history would merge them).
		`lit\xffname`:  `lit\\xffname`,
		"real\xffname": `real\xffname`,
		`C:\dir`:       `C:\\dir`,
		"both\\\xff":   `both\\\xff`,
	} {
		if got := CleanKey(in); got != want {
			t.Errorf("CleanKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzCleanKey(f *testing.F) {
	for _, s := range []string{"", "a", "\xff", "\x00", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := CleanKey(s)
		if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 {
			t.Fatalf("CleanKey(%q) = %q: not storable", s, got)
		}
		if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 && strings.IndexByte(s, '\\') < 0 && got != s {
			t.Fatalf("CleanKey changed storable %q to %q", s, got)
		}
		// Reversible, hence two names never share a key.
		if back, ok := UncleanKey(got); !ok || back != s {
			t.Fatalf("UncleanKey(CleanKey(%q) = %q) = %q, %v", s, got, back, ok)
		}
	})
}

func TestMigrationStatements(t *testing.T) {
	for _, d := range []Dialect{SQLite, PostgreSQL} {
		ms := Migrations(d)
		for i, m := range ms {
			if m.Version != i+1 {
				t.Errorf("dialect %d: migration %d has version %d", d, i, m.Version)
			}
			if len(m.Statements()) == 0 {
				t.Errorf("dialect %d: migration %d has no statements", d, m.Version)
			}
		}
		if ms[len(ms)-1].Version != LatestVersion(d) {
			t.Errorf("dialect %d: last migration is %d, LatestVersion %d", d, ms[len(ms)-1].Version, LatestVersion(d))
		}
	}
}
