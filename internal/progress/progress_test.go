package progress

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLine(t *testing.T) {
	for _, tc := range []struct {
		name        string
		done, total int64
		elapsed     time.Duration
		want        string
	}{
		{"nothing yet", 0, 24000000, time.Second, "export: 0 of 24,000,000 rows (0%)"},
		{"half", 12000000, 24000000, 30 * time.Second, "export: 12,000,000 of 24,000,000 rows (50%), 400,000 rows/s, 0:30 left"},
		{"no total", 1234567, 0, 2 * time.Second, "export: 1,234,567 rows, 617,283 rows/s"},
		{"hours left", 1000, 10000000, time.Second, "export: 1,000 of 10,000,000 rows (0%), 1,000 rows/s, 2:46:39 left"},
		{"past the total", 30, 20, time.Second, "export: 30 of 20 rows (100%), 30 rows/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line("export", "rows", tc.done, tc.total, tc.elapsed); got != tc.want {
				t.Errorf("Line = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSilent: no terminal or --quiet, no meter, and a nil meter takes
// every call.
func TestSilent(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	for _, c := range []struct {
		name  string
		show  bool
		quiet bool
	}{{"file", Show(f, false), false}, {"buffer", Show(&buf, false), false}, {"quiet", Show(os.Stderr, true), true}} {
		if c.show {
			t.Errorf("%s: Show = true, want false", c.name)
		}
	}
	var m *Meter = Start(&buf, false, "x", "rows", 10)
	m.Add(3)
	m.Set(4)
	m.SetTotal(5)
	m.Done()
	if buf.Len() != 0 {
		t.Errorf("wrote %q", buf.String())
	}
}

// TestDraw: a shown meter rewrites its line in place and erases it at
// the end.
func TestDraw(t *testing.T) {
	var buf syncBuffer
	m := Start(&buf, true, "leaks", "samples", 100)
	m.Add(40)
	time.Sleep(Interval + Interval/2)
	m.Done()
	out := buf.String()
	if !strings.HasPrefix(out, "\r\x1b[Kleaks: 40 of 100 samples (40%)") {
		t.Errorf("first line %q", out)
	}
	if !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("line not erased at the end: %q", out)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
