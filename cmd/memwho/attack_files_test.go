package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func (e *privEnv) checkFileAttacks(t *testing.T) {
	rootFile := filepath.Join(e.dir, "root-owned-file")
	if err := os.WriteFile(rootFile, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kept := func(t *testing.T) {
		t.Helper()
		if b, _ := os.ReadFile(rootFile); string(b) != "keep\n" {
			t.Errorf("the root-owned file was changed: %q", b)
		}
	}
	closed := e.closedDir(t, "files-closed")
	rootOnly := filepath.Join(closed, "secret")
	if err := os.WriteFile(rootOnly, []byte(secretText+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("files: --html and --svg at a link planted to a root-owned file", func(t *testing.T) {
		mine := e.ownDir(t, "files-pages")
		for _, flag := range []string{"--html", "--svg"} {
			page := filepath.Join(mine, "p"+flag[2:])
			os.Remove(page)
			if err := os.Symlink(rootFile, page); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := e.run(t, flag, page, "-p", strconv.Itoa(e.target))
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", flag, code, stderr)
			}
			kept(t)
			fi, err := os.Lstat(page)
			if err != nil || !fi.Mode().IsRegular() || int(fi.Sys().(*syscall.Stat_t).Uid) != e.user.UID {
				t.Errorf("%s: %s is not the user's new file: %v %v", flag, page, fi, err)
			}
		}
	})

	t.Run("files: --html in /proc and beside a root-only file", func(t *testing.T) {
		for _, p := range []string{"/proc/sys/vm/drop_caches", "/proc/self/fd/1", "/proc/1/environ", rootOnly, filepath.Join(closed, "new.html")} {
			for _, args := range [][]string{{"--html", p}, {"--svg", p}, {"leaks", "--html", p, "--db", filepath.Join(e.dir, "none.db")}} {
				if args[0] != "leaks" {
					args = append(args, "-p", strconv.Itoa(e.target))
				}
				_, stderr, code := e.run(t, args...)
				t.Logf("memwho %q: exit %d: %s", args, code, strings.TrimSpace(stderr))
				if code == 0 {
					t.Errorf("memwho %q: exit 0, want a refusal", args)
				}
				if strings.Contains(stderr, secretText) {
					t.Errorf("memwho %q printed the root-only file", args)
				}
			}
		}
		if b, _ := os.ReadFile(rootOnly); string(b) != secretText+"\n" {
			t.Errorf("the root-only file was changed: %q", b)
		}
		if ents, _ := os.ReadDir(closed); len(ents) != 1 {
			t.Errorf("the root-only directory holds %d entries, want 1", len(ents))
		}
	})

	t.Run("files: diff of root-only snapshot files and history", func(t *testing.T) {
		link := filepath.Join(e.ownDir(t, "files-diff"), "link")
		os.Symlink(rootOnly, link)
		for _, args := range [][]string{
			{"diff", rootOnly, rootOnly},
			{"diff", link, link},
			{"--from", rootOnly},
			{"--from", link},
			{"diff", "--since", "1h", "--db", rootOnly},
			{"diff", "--since", "1h", "--db", link},
			{"diff", "--since=1h", "--", "--db=" + rootOnly},
			{"diff", rootOnly, rootOnly, "--since", "1h"},
		} {
			out, stderr, code := e.run(t, args...)
			t.Logf("memwho %q: exit %d: %s", args, code, strings.TrimSpace(stderr))
			if code == 0 {
				t.Errorf("memwho %q: exit 0, want a refusal", args)
			}
			if strings.Contains(out+stderr, secretText) {
				t.Errorf("memwho %q printed the root-only file", args)
			}
		}
	})
}
