package proctest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"
)

// tree reads dir into a map from slash path to "file:CONTENT" or
// "link:TARGET", to compare two trees with cmp.Diff.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			m[rel] = "link:" + target
			return err
		}
		data, err := os.ReadFile(p)
		m[rel] = "file:" + string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRoundTrip(t *testing.T) {
	var ctl []byte
	for b := 0x01; b <= 0x1f; b++ {
		ctl = append(ctl, byte(b))
	}
	ctl = append(ctl, 0xff, 0xfe, '\n')
	files := map[string]string{
		"1/cmdline":      "/usr/bin/foo\x00--bar\x00a b\x00",
		"1/comm":         "x)y (z\n",
		"1/smaps_rollup": "Rss:   100 kB\nPss:   12", // truncated mid-line
		"1/ctl":          string(ctl),
		"1/ctl-noeol":    string(ctl[:len(ctl)-1]),
		"1/empty":        "",
		"1/nul-only":     "\x00",
		"1/newline-only": "\n",
		"1/crlf":         "a\r\nb\r\n",
		"1/looks-noeol":  "xNOEOL", // the token itself, but not followed by the final newline
		"1/marker-ish":   "-- not a marker\n",
		"meminfo":        "MemTotal:       1000 kB\n",
	}
	src := t.TempDir()
	for name, content := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{
		"1/exe":   "/usr/bin/foo (deleted)",
		"1/cwd":   "/tmp/dir\nwith newline\n",
		"2/exe":   "relative/target",
		"1/fd/0":  "pipe:[1234]",
		"1/fd/10": "/dev/null",
	} {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}

	a, err := Pack(src, "round trip")
	if err != nil {
		t.Fatal(err)
	}
	text := txtar.Format(a)
	if bytes.IndexByte(text, 0) >= 0 {
		t.Errorf("archive holds a NUL byte")
	}
	dst := t.TempDir()
	if err := Unpack(txtar.Parse(text), dst); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tree(t, src), tree(t, dst)); diff != "" {
		t.Errorf("tree changed in a round trip (-want +got):\n%s\narchive:\n%s", diff, text)
	}
}

func TestEncodeRefuses(t *testing.T) {
	for _, raw := range []string{
		"a NULLBYTE b\n",
		"last line NOEOL\n",
		"x\n-- a/b --\ny\n",
		"-- a/b --\r\n",
	} {
		if data, err := Encode([]byte(raw)); err == nil {
			t.Errorf("Encode(%q) = %q, want an error", raw, data)
		}
	}
	var a txtar.Archive
	for _, name := range []string{"1/exe.symlink", ".denied", " 1/stat", "a\nb", ""} {
		if err := AddFile(&a, name, []byte("x\n")); err == nil {
			t.Errorf("AddFile(%q) succeeded, want an error", name)
		}
	}
}

func TestDenied(t *testing.T) {
	file := filepath.Join(t.TempDir(), "denied.txtar")
	archive := `-- .denied --
# comment
1/smaps_rollup

2
-- 1/smaps_rollup --
Rss: 1 kB
-- 1/stat --
1 (x) S
-- 2/status --
Name:	y
`
	if err := os.WriteFile(file, []byte(archive), 0o644); err != nil {
		t.Fatal(err)
	}
	root := Root(t, file)
	for _, p := range []string{"1/smaps_rollup", "2"} {
		fi, err := os.Lstat(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0 {
			t.Errorf("%s: mode %v, want 0000", p, fi.Mode())
		}
	}
	if _, err := os.Lstat(filepath.Join(root, DeniedFile)); err == nil {
		t.Errorf("%s was written into the tree", DeniedFile)
	}
	if !Denied() {
		t.Skip("running as root: file modes do not deny access")
	}
	if _, err := os.ReadFile(filepath.Join(root, "1/smaps_rollup")); !os.IsPermission(err) {
		t.Errorf("reading a denied file: err = %v, want permission denied", err)
	}
}

var pidDir = regexp.MustCompile(`^[0-9]+$`)

// TestFixtures checks that every captured fixture unpacks into a plausible
// /proc tree.
func TestFixtures(t *testing.T) {
	files, err := filepath.Glob("../testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no fixtures found")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(a.Comment, []byte("Kernel: ")) {
				t.Errorf("comment does not say which kernel the capture came from")
			}
			root := Root(t, file)

			entries, err := os.ReadDir(root)
			if err != nil {
				t.Fatal(err)
			}
			pids := 0
			for _, e := range entries {
				if !pidDir.MatchString(e.Name()) {
					continue
				}
				pids++
				for _, f := range []string{"stat", "status"} {
					fi, err := os.Lstat(filepath.Join(root, e.Name(), f))
					if err != nil || !fi.Mode().IsRegular() {
						t.Errorf("%s/%s: missing or not a regular file (%v)", e.Name(), f, err)
					}
				}
				// stat starts with the PID of its directory (unless the
				// fixture truncated it on purpose).
				stat, err := os.ReadFile(filepath.Join(root, e.Name(), "stat"))
				if err == nil && !bytes.HasPrefix(stat, []byte(e.Name()+" (")) {
					t.Errorf("%s/stat does not start with its PID: %.40q", e.Name(), stat)
				}
			}
			if pids == 0 {
				t.Errorf("no PID directories")
			}
			if _, err := os.Stat(filepath.Join(root, "meminfo")); err != nil {
				t.Errorf("meminfo: %v", err)
			}

			for _, f := range a.Files {
				p := filepath.Join(root, filepath.FromSlash(f.Name))
				if link, ok := strings.CutSuffix(p, SymlinkSuffix); ok {
					if _, err := os.Lstat(p); err == nil {
						t.Errorf("%s: written as a file, want only a symlink", f.Name)
					}
					fi, err := os.Lstat(link)
					if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
						t.Errorf("%s: did not become a symlink (%v)", f.Name, err)
						continue
					}
					target, _ := os.Readlink(link)
					if target == "" || strings.HasSuffix(target, "\n") {
						t.Errorf("%s: target %q", f.Name, target)
					}
					continue
				}
				if f.Name == DeniedFile {
					continue
				}
				data, err := os.ReadFile(p)
				if err != nil {
					t.Errorf("%s: %v", f.Name, err)
					continue
				}
				if bytes.Contains(data, []byte(NullToken)) || bytes.HasSuffix(data, []byte(NoEOLToken+"\n")) {
					t.Errorf("%s: a token survived unpacking", f.Name)
				}
				if want := bytes.Count(f.Data, []byte(NullToken)); bytes.Count(data, []byte{0}) != want {
					t.Errorf("%s: %d NULs, want %d", f.Name, bytes.Count(data, []byte{0}), want)
				}
				if bytes.HasSuffix(f.Data, []byte(NoEOLToken+"\n")) && bytes.HasSuffix(data, []byte("\n")) {
					t.Errorf("%s: marked NOEOL but ends in a newline", f.Name)
				}
				// Hand-edited fixtures must still be what Encode would write,
				// or a recapture would not reproduce them byte for byte.
				if enc, err := Encode(data); err != nil || !bytes.Equal(enc, f.Data) {
					t.Errorf("%s: not in canonical encoding (err %v)", f.Name, err)
				}
			}
		})
	}
}
