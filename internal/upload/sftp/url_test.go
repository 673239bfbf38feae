//go:build !nosftp

package sftp

import (
	"net/url"
	"testing"
)

// TestParseURLHostile: URLs that might dial a host other than the one a
// user reads in them, or write a path other than the one shown. Each
// accepted URL must give the host and path the user reads, print (String)
// as a URL that reads back the same, and never carry a host with a
// colon out of brackets.
func TestParseURLHostile(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Target // zero: refused
	}{
		// The last @ ends the user: the host is after it.
		{"sftp://evil.com@good.com/x", Target{"evil.com", "good.com", 22, "/x"}},
		{"sftp://u%40evil.com@good.com/x", Target{"u@evil.com", "good.com", 22, "/x"}},
		{"sftp://u@evil.com%2F@good.com/x", Target{"u@evil.com/", "good.com", 22, "/x"}},
		// Percent escapes in the host: ASCII ones are refused by
		// url.Parse, so no "/", "@", ":" or NUL can hide in it.
		{"sftp://u@good.com%2Fevil.com/x", Target{}},
		{"sftp://u@good.com%40evil.com/x", Target{}},
		{"sftp://u@good.com%3A2222/x", Target{}},
		{"sftp://u@good.com%00.evil.com/x", Target{}},
		{"sftp://u@good.com%20/x", Target{}},
		// Colons out of brackets, and brackets around a name.
		{"sftp://u@a:b:22/x", Target{}},
		{"sftp://u@::1/x", Target{}},
		{"sftp://u@[::1]:2222/x", Target{"u", "::1", 2222, "/x"}},
		{"sftp://u@[::ffff:10.0.0.1]/x", Target{"u", "::ffff:10.0.0.1", 22, "/x"}},
		{"sftp://u@[good.com]:22/x", Target{}},
		// url.Parse lets a "]" into a name: the name dialled is the
		// one shown, which resolves nowhere.
		{"sftp://u@good.com]:22/x", Target{"u", "good.com]", 22, "/x"}},
		{"sftp://u@[::1]evil.com/x", Target{}},
		// Ports: one, decimal, in range.
		{"sftp://u@good.com:22:23/x", Target{}},
		{"sftp://u@good.com:0x16/x", Target{}},
		{"sftp://u@good.com:+22/x", Target{}},
		{"sftp://u@good.com:65558/x", Target{}},
		{"sftp://u@good.com:0022/x", Target{"u", "good.com", 22, "/x"}},
		// Paths: the decoded path is written, as shown.
		{"sftp://u@h/a%2F..%2Fb", Target{"u", "h", 22, "/a/../b"}},
		// ".." names a directory: the rename onto it fails on the
		// server; the path written is the one shown.
		{"sftp://u@h/~/..", Target{"u", "h", 22, ".."}},
		{"sftp://u@h/~/x/", Target{}},
		{"sftp://u@h/%7E/x", Target{"u", "h", 22, "x"}}, // %7E is ~: the same
		{"sftp://u@h/x%0Ay", Target{"u", "h", 22, "/x\ny"}},
		{"sftp://u@h/x?", Target{"u", "h", 22, "/x"}}, // an empty query
		{"sftp://u@h/x#", Target{"u", "h", 22, "/x"}},
		{"sftp://u@h/x%3F", Target{"u", "h", 22, "/x?"}},
		{"sftp://u@h\\evil.com/x", Target{}},
		{"sftp:///x", Target{}},
		{"sftp://u@/x", Target{}},
		{"SFTP://u@h/x", Target{"u", "h", 22, "/x"}},
	} {
		got, err := ParseURL(tc.in, "me")
		if tc.want == (Target{}) {
			if err == nil {
				t.Errorf("ParseURL(%q) = %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		s := got.String()
		back, err := ParseURL(s, "nobody")
		if err != nil || back != got {
			t.Errorf("ParseURL(%q).String() = %q reads as %+v, %v", tc.in, s, back, err)
		}
		u, err := url.Parse(s)
		if err != nil || u.Hostname() != got.Host {
			t.Errorf("%q: String %q names host %q", tc.in, s, u.Hostname())
		}
	}
}
