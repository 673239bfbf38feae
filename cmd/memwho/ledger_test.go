package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"golang.org/x/tools/txtar"

	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/memwho/memwho/internal/testload"
)

// ledgerReport is what TestLedgerAddsUp reads of --system --json.
type ledgerReport struct {
	System struct {
		MemTotal   int64 `json:"mem_total_bytes"`
		SwapTotal  int64 `json:"swap_total_bytes"`
		ProcessRAM int64 `json:"process_ram_bytes"`
		Ledger     []struct {
			Name   string `json:"name"`
			Source string `json:"source"`
			Bytes  int64  `json:"bytes"`
		} `json:"ledger"`
		Tmpfs []struct {
			Mount string `json:"mount"`
			Used  int64  `json:"used_bytes"`
		} `json:"tmpfs"`
		SwapLedger []struct {
			Name  string `json:"name"`
			Bytes int64  `json:"bytes"`
		} `json:"swap_ledger"`
		ScanMovement *struct {
			Seconds float64 `json:"seconds"`
			Before  int64   `json:"not_accounted_before_bytes"`
			Lines   []struct {
				Name   string `json:"name"`
				Before int64  `json:"before_bytes"`
				Bytes  int64  `json:"bytes"`
			} `json:"lines"`
		} `json:"scan_movement"`
	} `json:"system"`
}

func runLedger(t *testing.T, args ...string) ledgerReport {
	t.Helper()
	var out, errb bytes.Buffer
	if rc := run(context.Background(), append([]string{"--system", "--json", "--fresh"}, args...), &out, &errb); rc != 0 {
		t.Fatalf("memwho %v: exit %d: %s", args, rc, errb.String())
	}
	var r ledgerReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	var ram, swap, procs int64
	for _, l := range r.System.Ledger {
		ram += l.Bytes
		if strings.HasPrefix(l.Name, "processes:") {
			procs += l.Bytes
		}
	}
	for _, l := range r.System.SwapLedger {
		swap += l.Bytes
	}
	if r.System.MemTotal == 0 || ram != r.System.MemTotal {
		t.Errorf("ledger sums to %d, MemTotal %d", ram, r.System.MemTotal)
	}
	if swap != r.System.SwapTotal {
		t.Errorf("swap ledger sums to %d, SwapTotal %d", swap, r.System.SwapTotal)
	}
	if procs != r.System.ProcessRAM {
		t.Errorf("processes: lines sum to %d, process_ram_bytes %d", procs, r.System.ProcessRAM)
	}
	return r
}

// TestLedgerAddsUp: on every captured tree that has a meminfo, and with
// a zram device beside one, the ledger's lines add up to MemTotal and
// SwapTotal, and its processes: lines to the processes' total.
func TestLedgerAddsUp(t *testing.T) {
	archives, _ := filepath.Glob("../../internal/proc/testdata/*.txtar")
	n := 0
	for _, file := range archives {
		a, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !hasMeminfo(a) {
			continue
		}
		n++
		t.Run(filepath.Base(file), func(t *testing.T) {
			root := t.TempDir()
			procDir := filepath.Join(root, "proc")
			if err := proctest.Unpack(a, procDir); err != nil {
				t.Fatal(err)
			}
			runLedger(t, "--proc", procDir)
			// /sys beside the tree: its zram line.
			zram := filepath.Join(root, "sys", "block", "zram0")
			if err := os.MkdirAll(zram, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(zram, "mm_stat"), []byte("8192000 2048000 2101248 0 2101248 0 0 0 0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := runLedger(t, "--proc", procDir)
			checkZram(t, r)
			if len(r.System.Tmpfs) != 0 {
				t.Errorf("tmpfs mounts of this host beside a captured tree: %+v", r.System.Tmpfs)
			}
			// A snapshot of the tree carries the zram devices too.
			file := filepath.Join(root, "s.mwsnap")
			var stderr bytes.Buffer
			if rc := run(context.Background(), []string{"snapshot", "--fresh", "--proc", procDir, "-o", file}, &bytes.Buffer{}, &stderr); rc != 0 {
				t.Fatalf("memwho snapshot: exit %d: %s", rc, stderr.String())
			}
			checkZram(t, runLedger(t, "--from", file))
		})
	}
	if n == 0 {
		t.Fatal("no fixture has a meminfo")
	}
}

// TestLedgerLive: the ledger of this machine's /proc adds up, and
// itemises the free pages on per-CPU lists apart from MemFree.
func TestLedgerLive(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo")
	}
	r := runLedger(t)
	names := map[string]bool{}
	for _, l := range r.System.Ledger {
		names[l.Name] = true
	}
	for _, want := range []string{"free", "free on per-CPU lists", "not accounted"} {
		if !names[want] {
			t.Errorf("no ledger line %q", want)
		}
	}
	if r.System.ScanMovement == nil || r.System.ScanMovement.Seconds <= 0 {
		t.Errorf("no scan_movement: meminfo is read before the walk too")
	}
}

// TestLedgerLiveMovement: while children allocate and free 64 MiB each
// in a loop, the ledger says how its host lines moved during the walk
// and what "not accounted" reads with the figures from before it. (With
// such a loop "not accounted" read -554.6 MiB, unexplained.)
func TestLedgerLiveMovement(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no churn")
	}
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo")
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := testload.Churn(ctx, 2, 64<<20)
	defer func() {
		cancel()
		wait()
	}()
	for i := range 20 {
		r := runLedger(t)
		mv := r.System.ScanMovement
		if mv == nil {
			t.Fatal("no scan_movement")
		}
		if len(mv.Lines) == 0 {
			continue
		}
		// Each moved line is a ledger line, with its figure after the
		// walk, and the remainder from before differs by what moved.
		after := map[string]int64{}
		for _, l := range r.System.Ledger {
			after[l.Name] = l.Bytes
		}
		var moved int64
		for _, l := range mv.Lines {
			if b, ok := after[l.Name]; !ok || b != l.Bytes || strings.HasPrefix(l.Name, "processes:") {
				t.Errorf("moved line %+v: the ledger has %d (%v)", l, b, ok)
			}
			moved += l.Bytes - l.Before
		}
		if rest := r.System.Ledger[len(r.System.Ledger)-1].Bytes; mv.Before-rest != moved {
			t.Errorf("not accounted %d, before the walk %d: differ by %d, the lines moved by %d", rest, mv.Before, mv.Before-rest, moved)
		}
		t.Logf("run %d: %d lines moved in %.3f s, not accounted %d before, %d after", i, len(mv.Lines), mv.Seconds, mv.Before, r.System.Ledger[len(r.System.Ledger)-1].Bytes)
		return
	}
	t.Error("nothing moved in 20 walks while children allocated and freed 64 MiB each")
}

func checkZram(t *testing.T, r ledgerReport) {
	t.Helper()
	found := false
	for _, l := range r.System.Ledger {
		if l.Name == "zram devices" {
			found = l.Bytes == 2101248
		}
	}
	if !found {
		t.Errorf("no zram devices line of 2101248 bytes: %+v", r.System.Ledger)
	}
}

func hasMeminfo(a *txtar.Archive) bool {
	for _, f := range a.Files {
		if f.Name == "meminfo" {
			return true
		}
	}
	return false
}

// TestLedgerTmpfs mounts a tmpfs with a hostile name (as root; skipped
// otherwise), puts 1 MiB in it, and finds it under the ledger's
// shmem/tmpfs line: decoded in JSON, sanitised in the table.
func TestLedgerTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "a b\nc\x1b[31m")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("memwho-test", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runLedger(t)
	found := false
	for _, m := range r.System.Tmpfs {
		if m.Mount == dir {
			found = m.Used >= 1<<20 && m.Used <= 2<<20
		}
	}
	if !found {
		t.Errorf("no tmpfs %q holding about 1 MiB: %+v", dir, r.System.Tmpfs)
	}
	var out, errb bytes.Buffer
	if rc := run(context.Background(), []string{"--system", "--fresh"}, &out, &errb); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	if !strings.Contains(out.String(), `a b\nc\x1b[31m`) || strings.ContainsRune(out.String(), 0x1b) {
		t.Errorf("the mount point is not shown sanitised:\n%q", out.String())
	}
}
