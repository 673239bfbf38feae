package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/record"
)

// TestRecordFullEvery: record's forced walk was fixed at 60
// samples, so a figure could stay an hour stale at the default interval
// with no way to tune it. --full-every K reaches the
// engine; K < 1 is a usage error.
func TestRecordFullEvery(t *testing.T) {
	saved := newRecordScanner
	t.Cleanup(func() { newRecordScanner = saved })
	var got int
	stop := errors.New("stop here")
	newRecordScanner = func(opt engine.Options) (record.Scanner, error) {
		got = opt.FullEvery
		return nil, stop
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, engine.DefaultFullEvery},
		{[]string{"--full-every", "1"}, 1},
		{[]string{"--full-every", "7"}, 7},
	} {
		got = -1
		db := filepath.Join(t.TempDir(), "h.db")
		var stdout, stderr bytes.Buffer
		run(context.Background(), append([]string{"record", "--db", db, "--once"}, c.args...), &stdout, &stderr)
		if got != c.want {
			t.Errorf("record %v: the engine got FullEvery %d, want %d (%s)", c.args, got, c.want, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"record", "--db", filepath.Join(t.TempDir(), "h.db"), "--once", "--full-every", "0"}, &stdout, &stderr); code != cli.ExitUsage {
		t.Errorf("--full-every 0: exit %d, want %d: %s", code, cli.ExitUsage, stderr.String())
	}
}

// TestRecordFileRemoved: a SQLite history removed while record
// runs must not take every later sample into an unlinked file with exit
// 0: the next sample finds it gone and record fails, naming it.
func TestRecordFileRemoved(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gone.db")
	done := make(chan int, 1)
	var stdout, stderr bytes.Buffer
	go func() {
		done <- run(context.Background(), []string{"record", "--db", db, "--interval", "200ms", "--count", "50", "--groups", "none", "-p", strconv.Itoa(os.Getpid())}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(db); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(db + suffix)
	}
	select {
	case code := <-done:
		if code != cli.ExitFailure || !strings.Contains(stderr.String(), "the history "+db+" was removed or replaced while recording") {
			t.Errorf("record after its file was removed: exit %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("record ran on after its history file was removed")
	}
}

// TestExportInterrupted: an export stopped by a signal said only
// "context canceled"; it says what was left.
func TestExportInterrupted(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"record", "--db", db, "--once", "--groups", "none", "-p", strconv.Itoa(os.Getpid())}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("record: exit %d: %s", code, stderr.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(dir, "x.csv")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", out}, "interrupted (SIGINT, SIGTERM or SIGHUP): " + out + " left as it was"},
		{nil, "interrupted (SIGINT, SIGTERM or SIGHUP): the output is cut short"},
	} {
		stdout.Reset()
		stderr.Reset()
		code := run(ctx, append([]string{"export", "--db", db}, c.args...), &stdout, &stderr)
		if code != cli.ExitFailure || !strings.Contains(stderr.String(), c.want) || strings.Contains(stderr.String(), "context canceled") {
			t.Errorf("export %v interrupted: exit %d: %s", c.args, code, stderr.String())
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an interrupted export left %s: %v", out, err)
	}
}
