package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// checkTempNameAttacks is the attacks on the temporary
// names of the files memwho creates (now from math/rand/v2): another
// user fills a shared sticky directory (a /tmp) with names of the form
// Create uses, symlinks to a root-owned file, dangling symlinks and
// files, and the user writes a snapshot and pages there with
// capabilities permitted.
func (e *privEnv) checkTempNameAttacks(t *testing.T) {
	t.Run("tempnames: temporary names planted in a shared sticky directory", func(t *testing.T) {
		shared := mustMkdir(t, filepath.Join(e.dir, "tempnames-shared"))
		if err := os.Chmod(shared, 0o1777); err != nil {
			t.Fatal(err)
		}
		victim := filepath.Join(e.closedDir(t, "tempnames-victim"), "victim")
		if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
			t.Fatal(err)
		}
		var planted []string
		for _, target := range []string{"snap", "p.html", "p.svg"} {
			for i := range 3000 {
				var r [8]byte
				rand.Read(r[:])
				p := filepath.Join(shared, "."+target+".tmp-"+hex.EncodeToString(r[:]))
				var err error
				switch i % 3 {
				case 0:
					err = os.Symlink(victim, p)
				case 1:
					err = os.Symlink(filepath.Join(shared, "made-through-a-link"), p)
				default:
					err = os.WriteFile(p, []byte("theirs"), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
				planted = append(planted, p)
			}
		}
		snap := filepath.Join(shared, "snap")
		if _, stderr, code := e.run(t, "snapshot", "-o", snap); code != 0 {
			t.Fatalf("snapshot: exit %d: %s", code, stderr)
		}
		page, img := filepath.Join(shared, "p.html"), filepath.Join(shared, "p.svg")
		if _, stderr, code := e.run(t, "--by", "pid", "-p", strconv.Itoa(e.target), "--html", page, "--svg", img); code != 0 {
			t.Fatalf("--html: exit %d: %s", code, stderr)
		}
		for _, p := range []string{snap, page, img} {
			fi, err := os.Lstat(p)
			if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
				t.Errorf("%s: %v %v", p, fi, err)
			}
		}
		if b, _ := os.ReadFile(victim); string(b) != "precious" {
			t.Errorf("victim = %q", b)
		}
		if _, err := os.Lstat(filepath.Join(shared, "made-through-a-link")); err == nil {
			t.Error("a file was made through a planted dangling link")
		}
		for _, p := range planted {
			if _, err := os.Lstat(p); err != nil {
				t.Fatalf("planted %s: %v", p, err)
			}
		}
		ents, _ := os.ReadDir(shared)
		if len(ents) != len(planted)+3 {
			t.Errorf("%d entries in the shared directory, want the %d planted and 3 written (a temporary file left?)", len(ents), len(planted))
		}
	})
}
