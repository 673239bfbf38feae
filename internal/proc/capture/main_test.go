package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestCapture captures from a fake tree and checks that the archive holds
// the same bytes, less what was dropped or could not be read.
func TestCapture(t *testing.T) {
	in := txtar.Parse([]byte(`-- 7/stat --
7 (x)y (z) S 1
-- 7/status --
Name:	x)y (z
-- 7/cmdline --
/bin/xNULLBYTE-aNULLBYTENOEOL
-- 7/comm --
x)y (z
-- 7/smaps_rollup --
Pss:   12NOEOL
-- 7/smaps --
ignored
-- 7/exe.symlink --
/tmp/x y (deleted)
-- 8/stat --
8 (kthreadd) S 0
-- 8/smaps_rollup --
-- meminfo --
MemTotal: 1 kB
`))
	dir := t.TempDir()
	if err := proctest.Unpack(in, dir); err != nil {
		t.Fatal(err)
	}
	got, err := capture(dir, []int{7, 8}, map[string]bool{"smaps": true}, "header\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, f := range in.Files {
		if f.Name != "7/smaps" {
			want[f.Name] = string(f.Data)
		}
	}
	have := map[string]string{}
	for _, f := range got.Files {
		have[f.Name] = string(f.Data)
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("captured files differ (-want +got):\n%s", diff)
	}
	if _, err := capture(dir, []int{9}, nil, ""); err == nil {
		t.Errorf("capturing a missing PID succeeded")
	}
}
