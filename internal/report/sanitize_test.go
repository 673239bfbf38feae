package report

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// unescape undoes Sanitize. It is strict: it fails on any escape Sanitize
// does not produce, so a round trip also checks the escape syntax.
func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			return "", errors.New("trailing backslash")
		}
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'x':
			if i+2 >= len(s) {
				return "", errors.New("short \\x escape")
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil || strings.ToLower(s[i+1:i+3]) != s[i+1:i+3] {
				return "", errors.New("bad \\x escape")
			}
			b.WriteByte(byte(v))
			i += 2
		case 'u':
			if i+4 >= len(s) {
				return "", errors.New("short \\u escape")
			}
			v, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil || strings.ToLower(s[i+1:i+5]) != s[i+1:i+5] {
				return "", errors.New("bad \\u escape")
			}
			b.WriteRune(rune(v))
			i += 4
		case 'U':
			if i+8 >= len(s) {
				return "", errors.New("short \\U escape")
			}
			v, err := strconv.ParseUint(s[i+1:i+9], 16, 32)
			if err != nil || strings.ToLower(s[i+1:i+9]) != s[i+1:i+9] || v <= 0xffff {
				return "", errors.New("bad \\U escape")
			}
			b.WriteRune(rune(v))
			i += 8
		default:
			return "", errors.New("unknown escape \\" + string(s[i]))
		}
	}
	return b.String(), nil
}

func TestSanitize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"plain", "sshd", "sshd"},
		{"spaces and parens", "(sd-pam) x", "(sd-pam) x"},
		{"utf8", "café 日本", "café 日本"},
		{"backslash", `a\b`, `a\\b`},
		{"systemd escape", `dev-disk-by\x2duuid`, `dev-disk-by\\x2duuid`},
		{"newline", "a\nb", `a\nb`},
		{"tab cr", "a\tb\rc", `a\tb\rc`},
		{"ansi", "\x1b[31mred", `\x1b[31mred`},
		{"nul and bel", "\x00\x07", `\x00\x07`},
		{"del", "a\x7f", `a\x7f`},
		{"c1 utf8", "a\u0085b\u009b", `a\u0085b\u009b`},
		{"raw c1 byte", "a\x9bb", `a\x9bb`},
		{"invalid", "bad\xff", `bad\xff`},
		{"truncated rune", "\xe6\x97", `\xe6\x97`},
		{"surrogate", "\xed\xa0\x80", `\xed\xa0\x80`},
		{"bidi override", "abc\u202etxt.exe", `abc\u202etxt.exe`},
		{"bidi isolates", "\u2066x\u2069", `\u2066x\u2069`},
		{"bidi marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`},
		{"line separator", "a\u2028b\u2029", `a\u2028b\u2029`},
		{"replacement char kept", "\ufffd", "\ufffd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(Sanitize(nil, tt.in))
			if got != tt.want {
				t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
			}
			back, err := unescape(got)
			if err != nil || back != tt.in {
				t.Errorf("unescape(%q) = %q, %v, want %q", got, back, err, tt.in)
			}
		})
	}
}

func TestSanitizeAppends(t *testing.T) {
	got := string(Sanitize([]byte("pre:"), "x\ny"))
	if want := `pre:x\ny`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSanitizeNoAlloc(t *testing.T) {
	dst := make([]byte, 0, 256)
	inputs := []string{"plain-name", "evil\x1b[31m\n\xff\u202e\\"}
	for _, in := range inputs {
		allocs := testing.AllocsPerRun(100, func() {
			dst = Sanitize(dst[:0], in)
		})
		if allocs != 0 {
			t.Errorf("Sanitize(%q) with capacity: got %v allocs, want 0", in, allocs)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"", "sshd", "a\nb", "\x1b[31m", "\xff", "\u0085", "\u202e", `\x41`, `\\`,
		"\xc2\x85", "\xc2", "\xe2\x80\xae", "\x7f", "tab\there", "\u2028",
		"zero\u200bwidth", "\ufeffbom", "tag\U000e0041", "\u00adsoft",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Sanitize(nil, s)
		if !utf8.Valid(out) {
			t.Fatalf("Sanitize(%q) = %q: not valid UTF-8", s, out)
		}
		for _, r := range string(out) {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
				t.Fatalf("Sanitize(%q) = %q: control character %U", s, out, r)
			}
			if unsafeRune(r) {
				t.Fatalf("Sanitize(%q) = %q: unsafe rune %U", s, out, r)
			}
		}
		back, err := unescape(string(out))
		if err != nil {
			t.Fatalf("unescape(Sanitize(%q) = %q): %v", s, out, err)
		}
		if back != s {
			t.Fatalf("unescape(Sanitize(%q)) = %q, want the input", s, back)
		}
		// Appending must not touch what is already in dst.
		pre := []byte("prefix")
		if got := Sanitize(pre, s); string(got) != "prefix"+string(out) {
			t.Fatalf("Sanitize(%q, %q) = %q, want prefix kept", pre, s, got)
		}
	})
}

// TestInvisibleFormatCharacters: bidi controls and the other invisible
// format characters (category Cf) are escaped for the terminal and in
// JSON, and JSON still decodes to the exact name.
func TestInvisibleFormatCharacters(t *testing.T) {
	for _, tc := range []struct {
		name, sanitized, json string
	}{
		{"evil\u202etxt.exe", `evil\u202etxt.exe`, `"evil\u202etxt.exe"`},
		{"a\u2066b\u2069", `a\u2066b\u2069`, `"a\u2066b\u2069"`},
		{"\u200eltr\u061c", `\u200eltr\u061c`, `"\u200eltr\u061c"`},
		{"ssh\u200bd", `ssh\u200bd`, `"ssh\u200bd"`},
		{"\ufeffx\u00ad", `\ufeffx\u00ad`, `"\ufeffx\u00ad"`},
		{"tag\U000e0041", `tag\U000e0041`, `"tag\udb40\udc41"`},
		{"caf\u00e9 \u65e5\u672c", "caf\u00e9 \u65e5\u672c", "\"caf\u00e9 \u65e5\u672c\""},
	} {
		if got := string(Sanitize(nil, tc.name)); got != tc.sanitized {
			t.Errorf("Sanitize(%+q) = %s, want %s", tc.name, got, tc.sanitized)
		}
		got := AppendJSONString(nil, tc.name)
		if string(got) != tc.json {
			t.Errorf("AppendJSONString(%+q) = %s, want %s", tc.name, got, tc.json)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != tc.name {
			t.Errorf("JSON %s decodes to %+q, %v; want %+q", got, back, err, tc.name)
		}
	}
	// encoding/json through String uses the same escapes.
	b, err := json.Marshal(struct {
		K String `json:"k"`
	}{"a\u202eb\x1b"})
	if err != nil || string(b) != `{"k":"a\u202eb\u001b"}` {
		t.Errorf("json.Marshal(String) = %s, %v", b, err)
	}
}
