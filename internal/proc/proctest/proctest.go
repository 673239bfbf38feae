// Package proctest unpacks fake /proc trees, captured from real kernels and
// stored as txtar archives, for tests of the /proc parsers.
//
// Each archive file is one file of the tree, named by its slash path relative
// to the fake /proc root ("1234/status", "meminfo"). txtar is line-based text,
// while procfs files hold bytes that text cannot: NULs, no final newline,
// symlinks, unreadable files. So the archive uses these conventions, which
// Encode produces and Unpack reverses exactly:
//
//   - NULLBYTE in a file's content stands for one NUL byte (cmdline and
//     environ separate their strings with NULs). No real file captured so far
//     holds the literal text, and Encode refuses one that does.
//   - NOEOL followed by the file's final newline, at the very end of its
//     content, means the real file ends there, without that newline. txtar
//     gives every non-empty file a final newline, so without this marker a
//     truncated file ("Pss:   12") could not be told from a whole line. An
//     empty file stays empty.
//   - A file whose name ends in .symlink becomes a symlink named without the
//     suffix, pointing at the (decoded) content less one trailing newline:
//     "1234/exe.symlink" holding "/usr/bin/foo (deleted)\n" becomes
//     1234/exe -> "/usr/bin/foo (deleted)". A link that could not be read
//     (kernel threads, zombies) is simply absent.
//   - A top-level file named .denied lists paths (one per line, slash
//     separated, relative to the root; blank lines and lines starting with #
//     are ignored) that are chmod 0000 after unpacking, for permission-denied
//     tests. Root ignores file modes, so tests that rely on the denial must
//     skip when os.Geteuid() == 0; see Denied.
//
// All other bytes, including control characters and invalid UTF-8, are stored
// as they are: txtar is byte-transparent apart from its "-- name --" marker
// lines, which Encode refuses to produce inside content. Empty directories
// cannot be represented.
package proctest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// The spellings of the conventions described in the package doc.
const (
	NullToken     = "NULLBYTE"
	NoEOLToken    = "NOEOL"
	SymlinkSuffix = ".symlink"
	DeniedFile    = ".denied"
)

// Root unpacks the txtar archive file into a fresh t.TempDir and returns that
// directory, the fake /proc root. Any error fails the test at once.
func Root(t testing.TB, file string) string {
	t.Helper()
	a, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatalf("proctest: %v", err)
	}
	dir := t.TempDir()
	// Registered after TempDir's own cleanup, so it runs first (cleanups are
	// LIFO): a non-root test process could not remove a 0000 directory.
	t.Cleanup(func() { restoreModes(dir) })
	if err := Unpack(a, dir); err != nil {
		t.Fatalf("proctest: unpacking %s: %v", file, err)
	}
	return dir
}

// Denied reports whether permission-denied fixtures really deny access in this
// process, i.e. whether it is not running as root. Tests that need the denial
// should t.Skip when it returns false.
func Denied() bool { return os.Geteuid() != 0 }

// Unpack writes the tree described by a into dir, which must exist, applying
// the conventions in the package doc.
func Unpack(a *txtar.Archive, dir string) error {
	var denied []string
	for _, f := range a.Files {
		name := path.Clean(f.Name)
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("%q: outside the root", f.Name)
		}
		data := Decode(f.Data)
		if name == DeniedFile {
			denied = parseDenied(data)
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if link, ok := strings.CutSuffix(dst, SymlinkSuffix); ok {
			target := strings.TrimSuffix(string(data), "\n")
			if err := os.Symlink(target, link); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
	}
	// Deepest paths first: once a directory is 0000, a non-root process
	// could no longer reach what is inside it.
	sort.Sort(sort.Reverse(sort.StringSlice(denied)))
	for _, p := range denied {
		if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(path.Clean(p))), 0); err != nil {
			return fmt.Errorf("%s: %w", DeniedFile, err)
		}
	}
	return nil
}

func parseDenied(data []byte) []string {
	var paths []string
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		paths = append(paths, line)
	}
	return paths
}

// restoreModes makes every directory under dir accessible again so that it
// can be removed. Errors are ignored: this is best-effort cleanup.
func restoreModes(dir string) {
	// WalkDir visits a directory before reading it, so the chmod comes in
	// time for the walk to go on inside.
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.Type()&fs.ModeSymlink == 0 {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
}

// Decode turns archive content back into the real file's bytes: a trailing
// "NOEOL\n" is dropped, then every NULLBYTE becomes a NUL.
func Decode(data []byte) []byte {
	// txtar.Parse gives the last file a final newline even when the archive
	// lacks one, so "NOEOL\n" is the only spelling to look for.
	data, _ = bytes.CutSuffix(data, []byte(NoEOLToken+"\n"))
	return bytes.ReplaceAll(data, []byte(NullToken), []byte{0})
}

// Encode turns a real file's bytes into archive content, the exact inverse of
// Decode. It fails for the few contents the conventions cannot carry: the
// literal text NULLBYTE, a final line ending in NOEOL, or a line that txtar
// would take for a file marker.
func Encode(raw []byte) ([]byte, error) {
	if bytes.Contains(raw, []byte(NullToken)) {
		return nil, fmt.Errorf("content holds the literal %s", NullToken)
	}
	if bytes.HasSuffix(raw, []byte(NoEOLToken+"\n")) {
		return nil, fmt.Errorf("content ends in the literal %s", NoEOLToken)
	}
	data := bytes.ReplaceAll(raw, []byte{0}, []byte(NullToken))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, NoEOLToken+"\n"...)
	}
	if txtar.NeedsQuote(data) {
		return nil, errors.New("content holds a line that looks like a txtar file marker")
	}
	return data, nil
}

// AddFile appends the file name (slash separated, relative to the root) with
// the real content raw to a, encoded.
func AddFile(a *txtar.Archive, name string, raw []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	return add(a, name, raw)
}

func add(a *txtar.Archive, name string, raw []byte) error {
	data, err := Encode(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	a.Files = append(a.Files, txtar.File{Name: name, Data: data})
	return nil
}

// AddSymlink appends a symlink name -> target to a, stored as name.symlink.
func AddSymlink(a *txtar.Archive, name, target string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return add(a, name+SymlinkSuffix, []byte(target+"\n"))
}

func checkName(name string) error {
	// txtar trims spaces around names and ends them at a newline.
	if name == "" || strings.TrimSpace(name) != name || strings.ContainsAny(name, "\n\r") {
		return fmt.Errorf("%q: a txtar file name cannot carry this", name)
	}
	if strings.HasSuffix(name, SymlinkSuffix) || path.Base(name) == DeniedFile {
		return fmt.Errorf("%q: name reserved by proctest's conventions", name)
	}
	return nil
}

// Pack reads the tree under dir (regular files and symlinks; directories only
// through what they hold) into a new archive with the given comment, files in
// lexical order. It is the inverse of Unpack for trees without denied paths.
func Pack(dir, comment string) (*txtar.Archive, error) {
	a := &txtar.Archive{Comment: []byte(comment)}
	if comment != "" && !strings.HasSuffix(comment, "\n") {
		a.Comment = append(a.Comment, '\n')
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return AddSymlink(a, name, target)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return AddFile(a, name, data)
		default:
			return fmt.Errorf("%s: not a regular file or symlink", name)
		}
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}
