package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
)

// Options says what to watch and how to show it.
type Options struct {
	// Interval is the time between the starts of two scans. A scan that
	// takes longer delays the next one; scans never overlap.
	Interval time.Duration
	// By is the grouping shown first.
	By sample.By
	// Sort is the column rows are sorted by; the live view puts the
	// largest first, the plain output last (as the report does).
	Sort SortKey
	// Filter keeps the groups whose key matches; nil keeps all.
	Filter *regexp.Regexp
	// Count stops after that many refreshes; 0 runs until the context is
	// cancelled (or q is pressed).
	Count int
	// Fast says the sampler reads only /proc/PID/status; the plain
	// table's legend gives it as the reason for estimates.
	Fast bool
	// Conns shows each group's ESTABLISHED TCP connections in the live
	// view (the sampler must count them: snapshots with ConnsOK).
	Conns bool
	// Color allows colour and emphasis in the live view. The plain output
	// never uses colour: it is meant for logs.
	Color bool
	// Config tunes the history and the leak rule.
	Config Config
	// Source, when set, says where the figures come from other than a
	// walk of /proc by this process (for example "from memwho-agent");
	// the title line and the plain header show it.
	Source string
	// Containers names containers (ByContainer); nil shows short ids
	// (see sample.Namer).
	Containers interface {
		Key(cgroupPath string) string
	}
	// Hangup, closed when the terminal hangs up (SIGHUP), ends the
	// watch: the live view gives nothing back to a terminal that is
	// gone, the plain output stops as when ctx ends. Closed before the
	// watch starts, it ends it before anything is drawn. nil: never.
	Hangup <-chan struct{}
}

// RunPlain is the watch for logs and pipes: every opt.Interval it scans
// with s and writes one snapshot to w: a line with the time (RFC 3339),
// the grouping and the interval, the report table (report.Table, groups
// in ascending order of opt.Sort, the largest last), then one line per
// leak suspect. Snapshots are separated by a blank line. It returns after
// opt.Count snapshots, or nil when ctx is cancelled or opt.Hangup closed.
//
// warn, when not nil, is called with the first snapshot once it is
// written, and the groups its table showed (the filter's), for the
// caller's warnings about estimates among them, and with every later
// one that skipped a different, non-zero number of processes.
func RunPlain(ctx context.Context, w io.Writer, s Sampler, opt Options, warn func(*sample.Snapshot, []sample.Group)) error {
	t := NewTracker(opt.Config, opt.By)
	t.SetContainers(opt.Containers)
	var (
		snap   sample.Snapshot
		buf    []byte
		start  time.Time
		broken int
	)
	for i := 0; opt.Count <= 0 || i < opt.Count; i++ {
		if i > 0 {
			// The next scan starts one interval after the last one
			// started, or at once if that one overran.
			if d := time.Until(start.Add(opt.Interval)); d > 0 {
				timer := time.NewTimer(d)
				select {
				case <-ctx.Done():
					timer.Stop()
					return nil
				case <-opt.Hangup:
					timer.Stop()
					return nil
				case <-timer.C:
				}
			}
		}
		if ctx.Err() != nil || closed(opt.Hangup) {
			return nil
		}
		start = time.Now()
		if err := s.Scan(&snap); err != nil {
			if ctx.Err() != nil || closed(opt.Hangup) {
				// The scan was given up on: the watch was stopped.
				return nil
			}
			return fmt.Errorf("scan: %w", err)
		}
		t.AddSampled(&snap, readTimes(s, &snap))
		var shown []sample.Group
		buf, shown = plainSnapshot(buf[:0], t, &snap, opt, i > 0)
		if stopped, err := writeOut(ctx, opt.Hangup, w, buf); stopped {
			return nil
		} else if err != nil {
			if writeHungUp(opt.Hangup, err) {
				return nil
			}
			return fmt.Errorf("write output: %w", err)
		}
		if warn != nil && (i == 0 || snap.Broken > 0 && snap.Broken != broken) {
			// After the table, as the report does; again whenever a
			// snapshot leaves out a different number of processes,
			// whose memory its totals then miss.
			warn(&snap, shown)
		}
		broken = snap.Broken
	}
	return nil
}

// writeOut writes b to w. When ctx ends or the terminal hangs up
// before the write is done, it waits stuckWrite more for it and then
// gives up on it (stopped): a pipe nobody reads kept watch --plain in
// its write after SIGTERM, until SIGKILL (issue 27, finding 3), while a
// write to a file still ends the snapshot under way. A write given up on
// goes on in its goroutine until the process ends; b must not be used
// again then.
func writeOut(ctx context.Context, hangup <-chan struct{}, w io.Writer, b []byte) (stopped bool, err error) {
	done := make(chan error, 1)
	go func() {
		_, err := w.Write(b)
		done <- err
	}()
	select {
	case err := <-done:
		return false, err
	case <-ctx.Done():
	case <-hangup:
	}
	t := time.NewTimer(stuckWrite)
	defer t.Stop()
	select {
	case err := <-done:
		return false, err
	case <-t.C:
		return true, nil
	}
}

// stuckWrite is how long a write under way at SIGTERM, SIGINT or a
// hang-up may still take: within cli.StopWithin.
const stuckWrite = 200 * time.Millisecond

// plainSnapshot renders one snapshot of RunPlain into buf.
func plainSnapshot(buf []byte, t *Tracker, snap *sample.Snapshot, opt Options, sep bool) ([]byte, []sample.Group) {
	if sep {
		buf = append(buf, '\n')
	}
	layout := time.RFC3339
	if opt.Interval < time.Second {
		layout = "2006-01-02T15:04:05.000Z07:00"
	}
	buf = snap.Time.AppendFormat(buf, layout)
	buf = append(buf, "  by "...)
	buf = append(buf, opt.By.String()...)
	buf = append(buf, ", every "...)
	buf = append(buf, opt.Interval.String()...)
	if opt.Source != "" {
		buf = append(buf, ", "...)
		buf = append(buf, opt.Source...)
	}
	buf = append(buf, '\n')

	rows := FilterRows(t.Rows(opt.By), opt.Filter)
	SortRows(rows, opt.Sort, false)
	groups := make([]sample.Group, len(rows))
	for i := range rows {
		groups[i] = rows[i].Group
	}
	var tb byteWriter
	tb.b = buf
	// report.Table only fails when the writer does; byteWriter never does.
	_ = report.Table(&tb, groups, sample.Total(groups), snap, report.Options{
		KeyHeader: report.KeyHeader(opt.By),
		By:        opt.By.String(),
		ShowCount: opt.By != sample.ByPID,
		Fast:      opt.Fast,
	})
	buf = tb.b
	// Leak suspects, largest rate first.
	SortRows(rows, SortRate, true)
	for i := range rows {
		r := &rows[i]
		if !r.Leak {
			continue
		}
		buf = append(buf, "leak suspect: "...)
		buf = report.Sanitize(buf, r.Key)
		buf = append(buf, "  "...)
		buf = appendRate(buf, r.RateMiBPerMin())
		buf = append(buf, " MiB/min over "...)
		buf = strconv.AppendInt(buf, int64(len(r.History)), 10)
		buf = append(buf, " samples, "...)
		buf = appendChange(buf, r.Change)
		buf = append(buf, " since "...)
		buf = r.Since.In(snap.Time.Location()).AppendFormat(buf, time.TimeOnly)
		buf = append(buf, '\n')
	}
	return buf, groups
}

type byteWriter struct{ b []byte }

func (w *byteWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// appendRate appends a rate in MiB/min with a sign and one decimal
// ("+60.0", "-0.3", "0.0").
func appendRate(dst []byte, r float64) []byte {
	if r > -0.05 && r < 0.05 {
		return append(dst, "0.0"...)
	}
	if r > 0 {
		dst = append(dst, '+')
	}
	return strconv.AppendFloat(dst, r, 'f', 1, 64)
}

// appendChange appends a signed byte count in binary units ("+1.5 MiB",
// "-512 B", "0 B").
func appendChange(dst []byte, d int64) []byte {
	switch {
	case d > 0:
		dst = append(dst, '+')
		return report.HumanBytes(dst, uint64(d))
	case d < 0:
		dst = append(dst, '-')
		return report.HumanBytes(dst, uint64(-(d+1))+1)
	}
	return append(dst, "0 B"...)
}

// writeHungUp reports whether a failed write is the hang-up's doing: the
// hang-up came, or comes within a second of an EIO. A write to the
// terminal that hung up fails with EIO, and the kernel fails it before
// it sends SIGHUP: the write after a scan under way at the hang-up
// would end the watch with status 1. An EIO with no
// hang-up (a failing disk) is the error it is.
func writeHungUp(hangup <-chan struct{}, err error) bool {
	if closed(hangup) {
		return true
	}
	if hangup == nil || !errors.Is(err, syscall.EIO) {
		return false
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-hangup:
		return true
	case <-t.C:
		return false
	}
}

// closed reports whether c is closed (never, for nil).
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
