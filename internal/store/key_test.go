package store

import (
	"testing"
	"unicode/utf8"
)

// Attacks tabled in docs/safe.md: history keys.

// TestKeyRoundTrip: every name comes back from its key, and two
// names never share one (names with NUL, invalid bytes, backslashes,
// the characters of an escape). HELD.
func TestKeyRoundTrip(t *testing.T) {
	names := []string{"", "a", `\`, `\\`, `\x`, `\xff`, "\xff", `\\xff`, "\\\xff", "\x00", `\x00`, "é", "\xc3", `\xc3\xa9`,
		"a\x00b\\c\xfe", `\x4`, `\xFF`, "\x1b[2J", `\x1b[2J`, "x\\", "\\\\\\"}
	seen := map[string]string{}
	for _, n := range names {
		k := CleanKey(n)
		if !utf8.ValidString(k) {
			t.Errorf("CleanKey(%q) = %q, not UTF-8", n, k)
		}
		if got, ok := UncleanKey(k); !ok || got != n {
			t.Errorf("UncleanKey(CleanKey(%q)) = %q, %v", n, got, ok)
		}
		if other, dup := seen[k]; dup {
			t.Errorf("%q and %q share the key %q", n, other, k)
		}
		seen[k] = n
	}
}

// TestOldKeys: a key an older memwho wrote holds a name as it
// was, backslashes single. Read as an escape, a process that named
// itself `\x73shd` (any user can) showed in leaks and diff --since of an
// old history as "sshd", and `\x1b` as an ESC byte handed to the
// renderers. BROKE before the fix: UncleanKey takes only what CleanKey
// writes (its own output again), and KeyName shows any other key as it
// is.
func TestOldKeys(t *testing.T) {
	for key, want := range map[string]string{
		`\x73shd`:    `\x73shd`,
		`\x1b[2J`:    `\x1b[2J`,
		`\xc3\xa9`:   `\xc3\xa9`, // é, which CleanKey keeps as it is
		`a\b`:        `a\b`,
		`\xff`:       "\xff", // CleanKey's own escape
		`a\\b`:       `a\b`,  // ambiguous: read as CleanKey's (docs/history.md)
		`\x00`:       "\x00",
		"plain name": "plain name",
	} {
		if got := KeyName(key); got != want {
			t.Errorf("KeyName(%q) = %q, want %q", key, got, want)
		}
	}
}
