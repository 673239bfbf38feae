// Package fstest opens procfs trees for tests. It is apart from proctest,
// which package proc's own tests import, so that it may import proc.
package fstest

import (
	"testing"

	"github.com/memwho/memwho/internal/proc"
)

// Open opens the procfs tree at root (a real /proc or an unpacked fake
// tree) for a test and closes it when the test ends.
func Open(tb testing.TB, root string) *proc.FS {
	tb.Helper()
	fs, err := proc.Open(root)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { fs.Close() })
	return fs
}
