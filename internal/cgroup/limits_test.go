package cgroup

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLimits(t *testing.T) {
	t.Run("v2", func(t *testing.T) {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{
			"cgroup.controllers":          "memory",
			"a/memory.max":                "1000",
			"a/memory.current":            "900",
			"a/b/memory.max":              "500",
			"a/b/memory.current":          "100",
			"a/b/c/memory.max":            "max",
			"a/b/c/memory.current":        "50",
			"free/memory.max":             "max",
			"free/memory.current":         "50",
			"over/memory.max":             "100",
			"over/memory.current":         "150",
			"unreadable/memory.max":       "100",
			"unreadable/memory.current/x": "",
		})
		c := NewLimits(root)
		defer c.Close()
		for path, want := range map[string]Limit{
			"/a":          {Limit: 1000, Free: 100},
			"/a/b":        {Limit: 1000, Free: 100}, // the parent has less room left
			"/a/b/c":      {Limit: 1000, Free: 100},
			"/free":       {},
			"/over":       {Limit: 100, Free: 0},
			"/unreadable": {},
			"/missing/x":  {},
			"/":           {},
			"":            {},
			"relative":    {},
		} {
			if got := c.Of(path); got != want {
				t.Errorf("limit of %q = %+v, want %+v", path, got, want)
			}
		}
	})
	t.Run("v1", func(t *testing.T) {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{
			"memory/memory.limit_in_bytes":          "9223372036854771712",
			"memory/memory.usage_in_bytes":          "123456789",
			"memory/docker/memory.limit_in_bytes":   "9223372036854771712",
			"memory/docker/memory.usage_in_bytes":   "1000",
			"memory/docker/x/memory.limit_in_bytes": "4096",
			"memory/docker/x/memory.usage_in_bytes": "1024",
		})
		c := NewLimits(root)
		defer c.Close()
		if got, want := c.Of("/docker/x"), (Limit{Limit: 4096, Free: 3072}); got != want {
			t.Errorf("v1 limit = %+v, want %+v", got, want)
		}
		if got := c.Of("/docker"); got != (Limit{}) {
			t.Errorf("v1 unlimited = %+v, want none", got)
		}
	})
	t.Run("none", func(t *testing.T) {
		for _, root := range []string{"", filepath.Join(t.TempDir(), "missing")} {
			c := NewLimits(root)
			if got := c.Of("/a"); got != (Limit{}) {
				t.Errorf("root %q: %+v, want none", root, got)
			}
			c.Close()
		}
	})
}

// TestLimitsUntrusted: a tree someone else filled yields no limit
// through a symlink (to a file or a directory, inside or outside the
// root), a file too large to be a number, or a path that climbs out.
func TestLimitsUntrusted(t *testing.T) {
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{
		"memory.max":       "1000",
		"memory.current":   "10",
		"d/memory.max":     "1000",
		"d/memory.current": "10",
	})
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"big/memory.max":      string(make([]byte, 100)) + "1000",
		"big/memory.current":  "10",
		"file/memory.current": "10",
	})
	for link, target := range map[string]string{
		"file/memory.max": filepath.Join(outside, "memory.max"),
		"dir":             filepath.Join(outside, "d"),
		"inner":           filepath.Join(root, "file"),
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	c := NewLimits(root)
	defer c.Close()
	for _, path := range []string{"/file", "/dir", "/inner", "/big", "/../" + filepath.Base(outside)} {
		if got := c.Of(path); got != (Limit{}) {
			t.Errorf("limit of %q = %+v, want none", path, got)
		}
	}
}
