package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
			checkZram(t, runLedger(t, "--proc", procDir))
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
