//go:build !nosftp

package sftp

import (
	"strings"
	"testing"
)

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"sftp://alice@example.com/srv/drop/x.csv.gz", "sftp://alice@example.com:2222/x.csv",
		"sftp://example.com/~/exports/x.csv", "sftp://bob@[::1]:22/tmp/x", "sftp://b%40corp@host/x",
		"sftp://alice:secret@host/x", "scp://host/x", "sftp://host", "sftp://host/", "sftp://host/dir/",
		"sftp://host/~/", "sftp://host:0/x", "sftp://host:99999/x", "sftp://host/x?y=1", "sftp:host/x",
		"/local/path", "sftp://u@[fe80::1%25eth0]:2222/x", "sftp://u@h/a%3Fb%23c", "sftp://u@:22/x",
	} {
		f.Add(s, "me")
	}
	f.Fuzz(func(t *testing.T, s, defaultUser string) {
		got, err := ParseURL(s, defaultUser)
		if err != nil {
			return
		}
		// What the uploader relies on: a user, a host, a port and a
		// file name.
		if got.User == "" || got.Host == "" || got.Port < 1 || got.Port > 65535 {
			t.Fatalf("ParseURL(%q) = %+v: no user, host or port", s, got)
		}
		if got.Path == "" || strings.HasSuffix(got.Path, "/") {
			t.Fatalf("ParseURL(%q) = %+v: the path names no file", s, got)
		}
		// Round trip: the URL String gives reads as the same target.
		back, err := ParseURL(got.String(), "nobody")
		if err != nil || back != got {
			t.Fatalf("ParseURL(%q) = %+v; its String %q reads as %+v, %v", s, got, got.String(), back, err)
		}
	})
}
