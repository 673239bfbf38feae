// Package progress says how far a long run is, on a terminal: one status
// line on standard error, rewritten in place twice a second, with what is
// done (rows, samples), the rate, and the time left when the total is
// known:
//
//	export: 12,345,678 of 24,012,000 rows (51%), 412,301 rows/s, 0:28 left
//
// It stays silent when standard error is not a terminal (a pipe, a file,
// a systemd journal) or the user asked for quiet, as pg_dump and rsync
// do, and it erases its line when the run ends, so that what the command
// prints afterwards starts on a clean line.
//
// A Meter is safe for concurrent use; a nil *Meter does nothing, so
// callers pass one around without checking whether progress is shown.
package progress

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Interval is how often the line is rewritten.
const Interval = 500 * time.Millisecond

// Show reports whether progress belongs on w: a terminal, and not quiet.
func Show(w io.Writer, quiet bool) bool {
	if quiet {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Meter counts work done and shows it.
type Meter struct {
	w     io.Writer
	label string
	unit  string
	start time.Time
	done  atomic.Int64
	total atomic.Int64
	stop  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex // serialises writes to w
	drawn bool
}

// Start returns a Meter that draws on w every Interval until Done, or nil
// when show is false. label names the run ("export"), unit what is counted
// ("rows"); total is the amount expected, 0 when unknown (no percentage
// and no time left then).
func Start(w io.Writer, show bool, label, unit string, total int64) *Meter {
	if !show {
		return nil
	}
	m := &Meter{w: w, label: label, unit: unit, start: time.Now(), stop: make(chan struct{})}
	m.total.Store(total)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(Interval)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				m.draw(time.Now())
			}
		}
	}()
	return m
}

// Add counts n more units done.
func (m *Meter) Add(n int64) {
	if m != nil {
		m.done.Add(n)
	}
}

// Set sets the units done.
func (m *Meter) Set(n int64) {
	if m != nil {
		m.done.Store(n)
	}
}

// SetTotal sets the units expected (0: unknown).
func (m *Meter) SetTotal(n int64) {
	if m != nil {
		m.total.Store(n)
	}
}

// Done stops drawing and erases the line.
func (m *Meter) Done() {
	if m == nil {
		return
	}
	close(m.stop)
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.drawn {
		io.WriteString(m.w, "\r\x1b[K")
	}
}

func (m *Meter) draw(now time.Time) {
	line := Line(m.label, m.unit, m.done.Load(), m.total.Load(), now.Sub(m.start))
	m.mu.Lock()
	defer m.mu.Unlock()
	io.WriteString(m.w, "\r\x1b[K"+line)
	m.drawn = true
}

// Line formats one status line: done of total units, the mean rate since
// the start and the time left at that rate (the latter two only once
// something is done).
func Line(label, unit string, done, total int64, elapsed time.Duration) string {
	b := []byte(label + ": ")
	b = appendCount(b, done)
	if total > 0 {
		b = append(b, " of "...)
		b = appendCount(b, total)
	}
	b = append(b, ' ')
	b = append(b, unit...)
	if total > 0 {
		pct := min(done*100/max(total, 1), 100)
		b = append(b, " ("...)
		b = strconv.AppendInt(b, pct, 10)
		b = append(b, "%)"...)
	}
	if s := elapsed.Seconds(); done > 0 && s > 0 {
		rate := float64(done) / s
		b = append(b, ", "...)
		b = appendCount(b, int64(rate))
		b = append(b, ' ')
		b = append(b, unit...)
		b = append(b, "/s"...)
		if total > done {
			left := time.Duration(float64(total-done) / rate * float64(time.Second))
			b = append(b, ", "...)
			b = append(b, Clock(left)...)
			b = append(b, " left"...)
		}
	}
	return string(b)
}

// Clock formats d as H:MM:SS, or M:SS under an hour.
func Clock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s < 3600 {
		return fmt.Sprintf("%d:%02d", s/60, s%60)
	}
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}

// appendCount appends n with thousands separators.
func appendCount(b []byte, n int64) []byte {
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	s := strconv.FormatInt(n, 10)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return b
}
