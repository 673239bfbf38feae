//go:build !notui

package watch

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

// fakeTerm is a terminal for run: keys from a channel, frames into a
// buffer.
type fakeTerm struct {
	keys     chan string
	stop     chan struct{}
	stopOnce sync.Once

	mu        sync.Mutex
	out       bytes.Buffer
	writes    int
	writeErr  error
	restored  int
	continued int
	// stall, when set, makes every write after the first two (the
	// first frames) wait for it: a terminal that takes no output.
	stall chan struct{}
}

func newFakeTerm() *fakeTerm {
	return &fakeTerm{keys: make(chan string, 10), stop: make(chan struct{})}
}

func (f *fakeTerm) Size() (int, int, error) { return 100, 20, nil }

func (f *fakeTerm) Read(p []byte) (int, error) {
	select {
	case k := <-f.keys:
		return copy(p, k), nil
	case <-f.stop:
		return 0, io.EOF
	}
}

func (f *fakeTerm) Write(p []byte) (int, error) {
	f.mu.Lock()
	if f.stall != nil && f.writes >= 2 {
		f.mu.Unlock()
		<-f.stall
		f.mu.Lock()
	}
	defer f.mu.Unlock()
	if f.writeErr != nil {
		return 0, f.writeErr
	}
	f.writes++
	return f.out.Write(p)
}

func (f *fakeTerm) Stop()          { f.stopOnce.Do(func() { close(f.stop) }) }
func (f *fakeTerm) Restore() error { f.mu.Lock(); f.restored++; f.mu.Unlock(); return nil }
func (f *fakeTerm) Close()         {}
func (f *fakeTerm) Suspend() error { return nil }
func (f *fakeTerm) Continue() error {
	f.mu.Lock()
	f.continued++
	f.mu.Unlock()
	return nil
}

func (f *fakeTerm) output() (string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out.String(), f.writes
}

// waitOutput waits until the output holds s.
func waitOutput(t *testing.T, f *fakeTerm, s string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if out, _ := f.output(); strings.Contains(out, s) {
			return
		}
		if time.Now().After(deadline) {
			out, _ := f.output()
			t.Fatalf("output never held %q:\n%q", s, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitRestored waits (10 s at most, else fails with msg) until f has
// been restored once: the terminal given back while run still waits,
// say for a scan.
func waitRestored(t *testing.T, f *fakeTerm, msg string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		f.mu.Lock()
		r := f.restored
		f.mu.Unlock()
		if r == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
	}
}

func runAsync(ctx context.Context, f *fakeTerm, m Model) chan error {
	done := make(chan error, 1)
	go func() { done <- run(ctx, f, m) }()
	return done
}

func wait(t *testing.T, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return")
		return nil
	}
}

func TestRunKeysAndQuit(t *testing.T) {
	f := newFakeTerm()
	done := runAsync(context.Background(), f, NewModel(&fakeSampler{}, Options{Interval: time.Hour}))
	waitOutput(t, f, "RAM used▼")
	before, writes := f.output()
	// A key that changes one line (the status line becomes the filter
	// prompt): one write, of that line alone.
	f.keys <- "/"
	waitOutput(t, f, "filter: █")
	out, w2 := f.output()
	if w2 != writes+1 {
		t.Errorf("%d writes for one key, want 1", w2-writes)
	}
	if got := out[len(before):]; !strings.HasPrefix(got, "\x1b[3;1Hfilter: █") || strings.Count(got, "\x1b[") != 2 {
		t.Errorf("the prompt wrote %q, want its line and an erase", got)
	}
	// A paste types into the prompt; keys that change nothing write
	// nothing (an unknown sequence, an arrow at the prompt).
	f.keys <- "\x1b[200~^post\x1b[201~"
	waitOutput(t, f, "filter: ^post█")
	_, w3 := f.output()
	f.keys <- "\x1b[15~\x1b[A"
	f.keys <- "\r"
	waitOutput(t, f, "filter /^post/")
	if _, w4 := f.output(); w4 != w3+1 {
		t.Errorf("%d writes for F5, up and Enter, want 1", w4-w3)
	}
	f.keys <- "q"
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	if f.restored != 1 {
		t.Errorf("restored %d times, want once", f.restored)
	}
}

func TestRunEnds(t *testing.T) {
	// The context's end (SIGTERM, SIGINT): restored, no error.
	ctx, cancel := context.WithCancel(context.Background())
	f := newFakeTerm()
	done := runAsync(ctx, f, NewModel(&fakeSampler{}, Options{Interval: time.Hour}))
	waitOutput(t, f, "RAM used")
	cancel()
	if err := wait(t, done); err != nil || f.restored != 1 {
		t.Errorf("cancelled: %v, restored %d times", err, f.restored)
	}

	// --count: quits after that many refreshes.
	f = newFakeTerm()
	s := &fakeSampler{}
	if err := wait(t, runAsync(context.Background(), f, NewModel(s, Options{Interval: time.Millisecond, Count: 3}))); err != nil || s.n != 3 || f.restored != 1 {
		t.Errorf("--count 3: %v after %d scans, restored %d times", err, s.n, f.restored)
	}

	// A write error ends the view with that error, restored.
	f = newFakeTerm()
	f.writeErr = errors.New("write /dev/pts/3: input/output error")
	err := wait(t, runAsync(context.Background(), f, NewModel(&fakeSampler{}, Options{Interval: time.Hour})))
	if err == nil || !strings.Contains(err.Error(), "input/output error") || f.restored != 1 {
		t.Errorf("write error: %v, restored %d times", err, f.restored)
	}
}

// A terminal that takes no output (a stalled connection, a
// master side nobody reads) blocked the loop in its write, where neither
// SIGTERM/SIGINT (the context) nor SIGHUP was seen: the view, holding
// CAP_SYS_PTRACE in the privileged install, ran until SIGKILL. The
// write now runs beside the loop.
func TestRunStuckTerminal(t *testing.T) {
	for _, end := range []string{"context", "q"} {
		t.Run(end, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := newFakeTerm()
			f.stall = make(chan struct{})
			defer close(f.stall)
			done := runAsync(ctx, f, NewModel(&fakeSampler{}, Options{Interval: time.Millisecond}))
			waitOutput(t, f, "RAM used")
			// Keys are still read and scans still run while the
			// second frame waits.
			f.keys <- "/"
			f.keys <- "x"
			time.Sleep(20 * time.Millisecond)
			if end == "q" {
				f.keys <- "\r"
				f.keys <- "q"
			} else {
				cancel()
			}
			if err := wait(t, done); err != nil {
				t.Errorf("ended by %s with the terminal stuck: %v, want nil", end, err)
			}
			if f.restored != 1 {
				t.Errorf("restored %d times, want once", f.restored)
			}
		})
	}
}

// A slow terminal (each write takes a while) still gets every
// frame's changes: frames made while one is written are not lost, the
// latest is drawn after it.
func TestRunSlowTerminal(t *testing.T) {
	f := newFakeTerm()
	f.stall = make(chan struct{})
	done := runAsync(context.Background(), f, NewModel(&fakeSampler{}, Options{Interval: time.Hour}))
	waitOutput(t, f, "RAM used")
	f.keys <- "/"
	f.keys <- "a"
	f.keys <- "b"
	time.Sleep(20 * time.Millisecond)
	close(f.stall) // the terminal drains
	waitOutput(t, f, "filter: ab█")
	f.keys <- "\r"
	f.keys <- "q"
	if err := wait(t, done); err != nil || f.restored != 1 {
		t.Errorf("quit: %v, restored %d times", err, f.restored)
	}
}

// slowSampler's scans wait for release after the first.
type slowSampler struct {
	fakeSampler
	started chan struct{}
	release chan struct{}
}

func (s *slowSampler) Scan(snap *sample.Snapshot) error {
	if s.n > 0 {
		s.started <- struct{}{}
		<-s.release
	}
	return s.fakeSampler.Scan(snap)
}

// SIGTERM (the context's end) in the middle of a long scan: the
// terminal is given back at once, and run returns only once the scan is
// over (the sampler is closed after it).
// The same for a hang-up.
func TestRunEndsDuringScan(t *testing.T) {
	for _, hangup := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		hup := make(chan struct{})
		f := newFakeTerm()
		s := &slowSampler{started: make(chan struct{}, 1), release: make(chan struct{})}
		done := runAsync(ctx, f, NewModel(s, Options{Interval: time.Millisecond, Hangup: hup}))
		waitOutput(t, f, "RAM used")
		<-s.started
		if hangup {
			close(hup)
		} else {
			cancel()
		}
		waitRestored(t, f, "the terminal was not restored while the scan ran")
		select {
		case <-done:
			t.Fatal("run returned with the scan still running")
		case <-time.After(50 * time.Millisecond):
		}
		close(s.release)
		if err := wait(t, done); err != nil {
			t.Errorf("hang-up %v: %v", hangup, err)
		}
		cancel()
	}
}

// TestRunHangup: a hang-up ends the view with no error, before the
// first frame too (the signal came while the command started: it was
// caught and dropped before the view's own handling, and the view ran
// on; TestWatchSignals, 1 run of 4 under load). The terminal's
// settings are restored either way.
func TestRunHangup(t *testing.T) {
	hangup := make(chan struct{})
	close(hangup)
	f := newFakeTerm()
	err := wait(t, runAsync(context.Background(), f, NewModel(&fakeSampler{}, Options{Interval: time.Hour, Hangup: hangup})))
	if out, writes := f.output(); err != nil || writes != 0 || f.restored != 1 {
		t.Errorf("hung up before the first frame: %v, %d writes (%q), restored %d times; want nil, none, once", err, writes, out, f.restored)
	}

	hangup = make(chan struct{})
	f = newFakeTerm()
	done := runAsync(context.Background(), f, NewModel(&fakeSampler{}, Options{Interval: time.Hour, Hangup: hangup}))
	waitOutput(t, f, "RAM used")
	close(hangup)
	if err := wait(t, done); err != nil || f.restored != 1 {
		t.Errorf("hung up while running: %v, restored %d times", err, f.restored)
	}
}
