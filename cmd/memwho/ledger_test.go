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

// TestLedgerLive: the ledger of this machine's /proc adds up.
func TestLedgerLive(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo")
	}
	runLedger(t)
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
