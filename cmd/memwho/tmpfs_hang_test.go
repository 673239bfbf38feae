package main

import (
	"testing"
	"time"

	"github.com/memwho/memwho/internal/proc"
)

// TestTmpfsUsageHang is the hanging mount: the statfs of
// one mount point never returns (a FUSE mount that does not answer, met
// while resolving the path). The ledger's tmpfs lines must come back
// within tmpfsTimeout, the silent mount counted with those left out.
func TestTmpfsUsageHang(t *testing.T) {
	fs, err := proc.Open(proc.DefaultRoot)
	if err != nil {
		t.Fatal(err)
	}
	mounts, _, err := proc.TmpfsMounts(fs)
	fs.Close()
	if err != nil || len(mounts) == 0 {
		t.Skipf("no tmpfs mount here (%v)", err)
	}
	hang := make(chan struct{})
	defer close(hang)
	tmpfsUsed = func(path string) (uint64, error) {
		if path == mounts[0] {
			<-hang
		}
		return 4096, nil
	}
	defer func() { tmpfsUsed = proc.TmpfsUsed }()
	tmpfsTimeout = 200 * time.Millisecond
	defer func() { tmpfsTimeout = 2 * time.Second }()

	got := make(chan int, 1)
	go func() {
		out, more, err := tmpfsUsage(proc.DefaultRoot)
		if err != nil {
			t.Error(err)
		}
		for _, u := range out {
			if u.Mount == mounts[0] {
				t.Errorf("the hanging mount %q is listed", u.Mount)
			}
		}
		got <- more
	}()
	select {
	case more := <-got:
		if more < 1 {
			t.Errorf("the hanging mount is not counted as left out: %d more", more)
		}
	case <-time.After(time.Minute):
		t.Fatal("tmpfsUsage hangs with its statfs")
	}
}
