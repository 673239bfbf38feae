//go:build !nopostgres

package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/pgtest"
	"github.com/memwho/memwho/internal/store/storetest"
)

// The seventeenth review's second pass: attacks on the spool's
// database identity.

func spoolIdentity(t *testing.T, url string) string {
	t.Helper()
	c, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return Identity(c)
}

// plant writes, as uid, a spool file claiming target into dir: what
// another user can do in a directory they may write.
func plantSpoolFile(t *testing.T, dir, target string, s *store.Sample, uid int) string {
	t.Helper()
	b, err := json.Marshal(spooled{Target: target, Sample: *s})
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, fmt.Sprintf("%020d-%06d-%d.%s%s", store.Millis(s.Time), 1, 1, targetTag(target), spoolExt))
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if uid >= 0 {
		if err := os.Chown(name, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// TestForgedSpool: a file claiming the current target, planted
// in a spool directory another user may write (a shared directory in
// /tmp) or owns, must not be flushed into the recorder's database: the
// directory is refused, and nothing is written.
func TestForgedSpool(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to play another user")
	}
	srv := pgtest.Start(t)
	ctx := context.Background()
	in := storetest.Samples(2, "forged")
	for _, tc := range []struct {
		name  string
		mode  os.FileMode
		owner int // -1: the recorder
	}{
		{"world-writable", 0o777, -1},
		{"world-writable sticky", os.ModeSticky | 0o777, -1},
		{"group-writable", 0o770, -1},
		{"another user's", 0o700, 65534},
		{"another user's, reached through a symlink", 0o700, -2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := srv.CreateDB(t)
			real := filepath.Join(t.TempDir(), "shared")
			if err := os.Mkdir(real, 0o700); err != nil {
				t.Fatal(err)
			}
			plantSpoolFile(t, real, spoolIdentity(t, url), &in[0], 65534)
			dir := real
			owner := tc.owner
			if owner == -2 {
				owner = 65534
				dir = filepath.Join(t.TempDir(), "link")
				if err := os.Symlink(real, dir); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(real, tc.mode); err != nil {
				t.Fatal(err)
			}
			if owner >= 0 {
				if err := os.Chown(real, owner, owner); err != nil {
					t.Fatal(err)
				}
			}
			d, err := Open(ctx, url, store.OpenOptions{SpoolDir: dir})
			if err == nil {
				storetest.Write(t, d, in[1:])
				d.Close()
				r, err := Open(ctx, url, store.OpenOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				got := storetest.Read(t, r, store.Query{})
				t.Fatalf("Open with spool %s (mode %v) succeeded; the database then holds %d samples (the planted one: %v)", tc.name, tc.mode, len(got), len(got) == 2)
			}
			if !strings.Contains(err.Error(), "spool") {
				t.Errorf("error %q does not name the spool", err)
			}
		})
	}
	// A directory of the recorder's own, 0700, is still taken.
	t.Run("own", func(t *testing.T) {
		url := srv.CreateDB(t)
		dir := filepath.Join(t.TempDir(), "own")
		d, err := Open(ctx, url, store.OpenOptions{SpoolDir: dir})
		if err != nil {
			t.Fatalf("Open with a new spool of its own: %v", err)
		}
		d.Close()
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		d, err = Open(ctx, url, store.OpenOptions{SpoolDir: dir})
		if err != nil {
			t.Fatalf("Open with a spool of its own, mode 0755: %v", err)
		}
		d.Close()
	})
}

// TestSpoolOddEntries: in the recorder's own spool, entries
// named as this target's samples but not regular files (a symlink to a
// file holding a sample, a FIFO that would block a read, a directory)
// are not samples; a malformed file is dropped with a warning that does
// not quote it, and the next file is still flushed.
func TestSpoolOddEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	target := "postgres://u@h:5432/db"
	sp, err := openSpool(dir, 0, target, false)
	if err != nil {
		t.Fatal(err)
	}
	in := storetest.Samples(4, "h")
	elsewhere := t.TempDir()
	victim := plantSpoolFile(t, elsewhere, target, &in[0], -1)
	name := func(i int) string {
		return filepath.Join(dir, fmt.Sprintf("%020d-%06d-%d.%s%s", store.Millis(in[i].Time), 9, 9, sp.tag, spoolExt))
	}
	if err := os.Symlink(victim, name(0)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(name(1), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(name(2), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := sp.put(&in[3], nil); err != nil {
		t.Fatal(err)
	}
	names, err := sp.list()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || !strings.HasPrefix(names[0], fmt.Sprintf("%020d-", store.Millis(in[3].Time))) {
		t.Errorf("spool lists %q, want only the sample put", names)
	}
}

// TestIdentityNoPassword: a password given any way a URL can
// carry it (plain, percent-encoded, ?password=, in a keyword string)
// reaches neither the identity nor a spool file's name or content.
func TestIdentityNoPassword(t *testing.T) {
	for _, url := range []string{
		"postgres://memwho:hunter2@db/fleet",
		"postgres://memwho:hunter%32@db/fleet",
		"postgres://memwho@db/fleet?password=hunter2",
		"postgres://memwho@db/fleet?password=hunter%32&search_path=m",
		"postgresql://memwho:hunter2@db:6000/fleet?sslmode=disable&application_name=x",
		"host=db user=memwho password=hunter2 dbname=fleet",
	} {
		id := spoolIdentity(t, url)
		if strings.Contains(id, "hunter") || strings.Contains(id, "%32") {
			t.Errorf("Identity(%s) = %s: holds the password", url, id)
		}
		dir := t.TempDir()
		sp, err := openSpool(dir, 0, id, false)
		if err != nil {
			t.Fatal(err)
		}
		s := storetest.Samples(1, "h")
		if err := sp.put(&s[0], nil); err != nil {
			t.Fatal(err)
		}
		names, _ := sp.list()
		for _, n := range names {
			b, _ := os.ReadFile(filepath.Join(dir, n))
			if strings.Contains(n, "hunter") || strings.Contains(string(b), "hunter") {
				t.Errorf("%s: spool file %s holds the password", url, n)
			}
		}
	}
}

// TestIdentityOddParts: URL parts that look like path or query
// syntax neither escape the spool directory (the tag is fixed-length
// hex) nor make two databases share an identity.
func TestIdentityOddParts(t *testing.T) {
	hex := regexp.MustCompile(`^[0-9a-f]{16}$`)
	seen := map[string]string{}
	for _, url := range []string{
		"postgres://memwho@db/fleet",
		"postgres://memwho@db/fleet%3Fsearch_path%3Dm",
		"postgres://memwho@db/fleet?search_path=m",
		"postgres://memwho@db/..%2F..%2Fetc",
		"postgres://..%2F..%2Froot@db/fleet",
		"postgres://memwho%40db@x/fleet",
		"postgres://memwho@db%40x/fleet",
		"postgres://memwho@db/fleet%2Fx",
		"postgres://memwho@db/fleet?options=-c%20search_path%3Dm",
		"postgres://memwho@db/fleet?search_path=m%26options%3Dx",
		"postgres://memwho@[::1]:5432/fleet",
		"postgres://memwho@%2Frun%2Fpostgresql/fleet",
	} {
		id := spoolIdentity(t, url)
		if prev, ok := seen[id]; ok {
			t.Errorf("%s and %s share the identity %s", prev, url, id)
		}
		seen[id] = url
		tag := targetTag(id)
		if !hex.MatchString(tag) {
			t.Errorf("tag of %s = %q", url, tag)
		}
		if tagOf("00000000000000000001-000001-1."+tag+spoolExt) != tag {
			t.Errorf("tag %q does not survive a file name", tag)
		}
	}
}

// TestNoPasswordInErrors: neither an error nor a warning of
// Open or Write quotes the password, however the URL carries it: a URL
// that does not parse, a server that is not there (with and without a
// spool).
func TestNoPasswordInErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, url := range []string{
		"postgres://memwho:hunter2@" + addr + "/fleet?sslmode=disable&connect_timeout=1",
		"postgres://memwho:hunter%32@" + addr + "/fleet?sslmode=disable&connect_timeout=1",
		"postgres://memwho@" + addr + "/fleet?sslmode=disable&connect_timeout=1&password=hunter2",
		"postgres://memwho:hunter2@" + addr + ":x/fleet",
		"postgres://memwho:hunter2@" + addr + "/fleet?sslmode=bogus",
		"postgres://memwho@" + addr + "/fleet?password=hunter2&sslmode=bogus",
	} {
		var said []string
		warn := func(m string) { said = append(said, m) }
		if d, err := Open(ctx, url, store.OpenOptions{Warn: warn}); err != nil {
			said = append(said, err.Error())
		} else {
			d.Close()
		}
		if d, err := Open(ctx, url, store.OpenOptions{SpoolDir: filepath.Join(t.TempDir(), "s"), Warn: warn}); err != nil {
			said = append(said, err.Error())
		} else {
			s := storetest.Samples(1, "h")
			if err := d.Write(ctx, &s[0]); err != nil {
				said = append(said, err.Error())
			}
			if err := d.Close(); err != nil {
				said = append(said, err.Error())
			}
		}
		for _, m := range said {
			if strings.Contains(m, "hunter") {
				t.Errorf("%s: said %q", url, m)
			}
		}
	}
}

// TestSpoolOpenedLater: a spool directory that was the
// recorder's own at Open but is opened to others later (or swapped for
// another user's) feeds nothing into the database: the next Write fails
// instead of flushing a sample planted there.
func TestSpoolOpenedLater(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to play another user")
	}
	srv := pgtest.Start(t)
	ctx := context.Background()
	url := srv.CreateDB(t)
	dir := filepath.Join(t.TempDir(), "spool")
	d, err := Open(ctx, url, store.OpenOptions{SpoolDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := storetest.Samples(3, "h")
	storetest.Write(t, d, in[:1])
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	plantSpoolFile(t, dir, spoolIdentity(t, url), &in[1], 65534)
	if err := d.Write(ctx, &in[2]); err == nil {
		t.Error("Write with a spool opened to others succeeded")
	}
	r, err := Open(ctx, url, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, s := range storetest.Read(t, r, store.Query{}) {
		if s.Time.Equal(in[1].Time) {
			t.Error("the planted sample was written into the database")
		}
	}
}
