package proc

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/testload"
)

// What a paced read of a process costs must follow the pages the process
// holds, not the address space it spans: any user can reserve a hundred
// terabytes for nothing, and root's agent reads every large process.

// startShaped starts one child of spec (its own text) and returns its PID.
func startShaped(t *testing.T, spec testload.Spec) int {
	t.Helper()
	spec.OwnText = true
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := testload.Start(ctx, 1, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop() })
	return g.PIDs[0]
}

// pacedOnce reads pid page by page with pc and returns the figures.
func pacedOnce(t *testing.T, fs *FS, pid int, pc *Pacer) (Rollup, error) {
	t.Helper()
	r := fs.NewReader()
	defer r.Close()
	r.Select(pid)
	st, err := r.Statm()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.HoldPagemap(); err != nil {
		t.Fatal(err)
	}
	var ru Rollup
	err = r.Paced(&ru, pc, st)
	return ru, err
}

// TestPacedCostFollowsPages reads processes whose address space is far
// larger than their pages, shaped to be read entry by entry: their
// figures are smaps_rollup's, and the entries read stay within what
// comparePaced allows for their resident pages.
func TestPacedCostFollowsPages(t *testing.T) {
	fs := openLive(t)
	var kp *KPages
	if os.Geteuid() == 0 {
		var err error
		if kp, err = fs.OpenKPages(); err != nil {
			t.Fatalf("OpenKPages as root: %v", err)
		}
	}
	for _, c := range []struct {
		name string
		spec testload.Spec
	}{
		// A page in a mapping without access sends the read through
		// those mappings too; a 256 GiB reservation was 64 Mi entries
		// (a 32 TiB one took a report 75 s).
		{"reservation without access holding a page", testload.Spec{Private: 80 << 20, ReservedHeld: 256 << 30}},
		// Mostly holes, in mappings each under a GiB: they were read
		// entry by entry (4096 of them took a report 10 s).
		{"sparse in many mappings", testload.Spec{Private: 80 << 20, Mappings: 256}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pid := startShaped(t, c.spec)
			if kp != nil {
				comparePaced(t, fs, pid, kp, true)
			}
			comparePaced(t, fs, pid, nil, false)
		})
	}
}

// TestPacedWithoutScanRefusesHoles: before Linux 6.7 (no PAGEMAP_SCAN)
// the holes of those shapes cannot be skipped, so they are never read
// entry by entry: the read gives up (ErrSparse: the process is read the
// usual way), or, for the reservation, leaves it unread when the other
// mappings hold every resident page as far as statm tells. A reservation
// within the process's budget is read, its page with it.
func TestPacedWithoutScanRefusesHoles(t *testing.T) {
	fs := openLive(t)
	for _, c := range []struct {
		name  string
		spec  testload.Spec
		errs  []error
		exact bool
	}{
		{"large reservation holding a page", testload.Spec{Private: 80 << 20, ReservedHeld: 256 << 30}, []error{nil, ErrSparse}, false},
		{"sparse in many mappings", testload.Spec{Private: 80 << 20, Mappings: 256}, []error{ErrSparse}, false},
		// Its budget, 4 × 512 MiB + 1 GiB, holds the reservation and
		// those of the C library's arenas.
		{"small reservation holding a page", testload.Spec{Private: 512 << 20, ReservedHeld: 64 << 20}, []error{nil}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			pid := startShaped(t, c.spec)
			pc := &Pacer{NoLookups: true, noScan: true}
			ru, err := pacedOnce(t, fs, pid, pc)
			if !slices.Contains(c.errs, err) {
				t.Fatalf("without PAGEMAP_SCAN: err %v, want one of %v (%d entries read)", err, c.errs, pc.Entries)
			}
			if pc.Entries > 4<<30/pageSize {
				t.Errorf("%d entries read", pc.Entries)
			}
			if c.exact {
				var want Rollup
				r := fs.NewReader()
				defer r.Close()
				r.Select(pid)
				if err := r.SmapsRollup(&want); err != nil {
					t.Fatal(err)
				}
				if got, w := ru.PrivateClean+ru.PrivateDirty, want.PrivateClean+want.PrivateDirty; got != w {
					t.Errorf("Private %d, smaps_rollup %d", got, w)
				}
			}
		})
	}
}

// TestPacedScanWalksBoundedRanges: one PAGEMAP_SCAN walks its whole range
// under the process's mmap_lock until it finds pages, and empty page
// tables cost it time (a 256 GiB mapping of a truncated file, page
// tables left, stalled its process 167 to 255 ms per read). So each
// call covers at most scanWalk of address space: a terabyte with a page
// per GiB takes at least a call per scanWalk.
func TestPacedScanWalksBoundedRanges(t *testing.T) {
	fs := openLive(t)
	pid := startShaped(t, testload.Spec{Private: 80 << 20, Sparse: 1 << 40})
	pc := &Pacer{NoLookups: true}
	if _, err := pacedOnce(t, fs, pid, pc); err != nil {
		if err == ErrSparse {
			t.Skip("no PAGEMAP_SCAN (Linux 6.7+)")
		}
		t.Fatal(err)
	}
	if want := (1 << 40) / (512 << 20); pc.Scans < want {
		t.Errorf("%d PAGEMAP_SCAN calls for a terabyte, want at least %d (one per 512 MiB)", pc.Scans, want)
	}
}

// TestPacedShuffledPages: a process that moves its memory between two
// mappings while the read goes through its address space (mremap every
// millisecond) showed a paced read 0.25 to 1.3 GiB of its 2 GiB, where
// smaps_rollup, read under the lock, saw them all: any user could hide
// most of a process's memory from root's agent. A read whose resident
// pages disagree with statm before and after it by more than a quarter
// is refused (ErrChanged: the process is read the usual way).
func TestPacedShuffledPages(t *testing.T) {
	fs := openLive(t)
	pid := startShaped(t, testload.Spec{Private: 16 << 20, Shuffle: 256 << 20})
	r := fs.NewReader()
	defer r.Close()
	pc := &Pacer{NoLookups: true}
	refused := 0
	for range 30 {
		r.Select(pid)
		before, err := r.Statm()
		if err != nil {
			t.Fatal(err)
		}
		if err := r.HoldPagemap(); err != nil {
			t.Fatal(err)
		}
		var ru Rollup
		err = r.Paced(&ru, pc, before)
		if err == ErrChanged {
			refused++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		after, err := r.Statm()
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := min(before.Resident, after.Resident)*pageSize, max(before.Resident, after.Resident)*pageSize
		if ru.Rss < lo-lo/4-4<<20 || ru.Rss > hi+hi/4+4<<20 {
			t.Errorf("Rss %d MiB accepted, statm %d to %d MiB", ru.Rss>>20, lo>>20, hi>>20)
		}
	}
	t.Logf("%d of 30 reads refused", refused)
}

// TestPacedHeldAcrossExecAndExit: the pagemap descriptor is bound to the
// address space it was opened on. A process that execs (a setuid program,
// say) or exits between HoldPagemap and Paced is gone for the read, which
// reads maps by path and so would see the new program's mappings: no
// figures of either come out.
func TestPacedHeldAcrossExecAndExit(t *testing.T) {
	fs := openLive(t)
	for _, end := range []string{"exec", "exit", "exit, reaped"} {
		t.Run(end, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", "echo r; read x; exec sleep 600")
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Skip(err)
			}
			reaped := false
			t.Cleanup(func() {
				if !reaped {
					cmd.Process.Kill()
					cmd.Wait()
				}
			})
			bufio.NewReader(out).ReadString('\n')
			pid := cmd.Process.Pid
			r := fs.NewReader()
			defer r.Close()
			r.Select(pid)
			st, err := r.Statm()
			if err != nil {
				t.Fatal(err)
			}
			if err := r.HoldPagemap(); err != nil {
				t.Fatal(err)
			}
			switch end {
			case "exec":
				in.Write([]byte("x\n"))
				waitComm(t, pid, "sleep")
			case "exit":
				cmd.Process.Kill()
				for range 500 {
					if b, _ := os.ReadFile("/proc/" + itoa(pid) + "/stat"); strings.Contains(string(b), ") Z ") {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			default:
				cmd.Process.Kill()
				cmd.Wait()
				reaped = true
			}
			var ru Rollup
			err = r.Paced(&ru, &Pacer{NoLookups: true}, st)
			if err != ErrGone && err != ErrNoMM && err != ErrNotExist {
				t.Fatalf("after %s: err %v, figures %+v; want the process gone", end, err, ru)
			}
			t.Logf("after %s: %v", end, err)
		})
	}
}

// TestPacedHugePagesSharedAfterFork: a process shares huge pages with a
// child that wrote the first 4 KiB of each: the child's are split, the
// parent's stay mapped whole. Linux 6.15 and later mark every entry of a
// huge page mapped whole by the map count of its first page, so the
// parent's pagemap says all 512 pages are its own where 511 are shared
// (a paced read as root showed 98.6 MB private, bound 0, for the 0.27
// MB of smaps_rollup). Root looks such pages up; others read their share
// within the bound, or, on the kernels that mark them so, as their own.
func TestPacedHugePagesSharedAfterFork(t *testing.T) {
	fs := openLive(t)
	if os.Geteuid() != 0 {
		t.Skip("frame lookups need root")
	}
	kp, err := fs.OpenKPages()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := testload.Start(ctx, 1, testload.Spec{THPCOW: 64 << 20, OwnText: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	for _, pid := range g.All() {
		comparePaced(t, fs, pid, kp, true)
	}
}
