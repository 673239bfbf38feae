//go:build !notui

package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/memwho/memwho/internal/term"
)

// RunTUI runs the live view on the terminal until q, ctrl+c, ctx's end,
// a hang-up or opt.Count refreshes. The terminal is restored when it
// returns, whether on an error or a panic.
func RunTUI(ctx context.Context, s Sampler, opt Options) error {
	m := NewModel(s, opt)
	t, err := term.Open(os.Stdin, os.Stdout)
	if err != nil {
		// No terminal to read keys from (stdin redirected, no
		// controlling terminal: setsid, a service): say how to get
		// the snapshots without keys.
		return fmt.Errorf("%w (--plain prints snapshots without reading keys)", err)
	}
	return run(ctx, t, m)
}

// AbandonTerminal gives the live view's terminal its input settings
// back without writing to it: for a watch about to be ended while a
// frame's write blocks (cli.InterruptibleView's cleanup).
func AbandonTerminal() { term.RestoreModes() }

// screenIO is what the loop needs of the terminal (a *term.Terminal).
type screenIO interface {
	Size() (width, height int, err error)
	Read(p []byte) (int, error)
	Write(p []byte) (int, error)
	Stop()
	Restore() error
	Suspend() error
	Continue() error
	Close()
}

// stuckAfter is how long a frame's write may still take when the view
// ends before the terminal is taken for one that accepts no output: well
// within cli.StopWithin, after which the process is ended whatever it
// waits for.
const stuckAfter = 300 * time.Millisecond

// run is the event loop: key presses, pastes, resizes, finished scans
// and ticks all arrive in one select, go through Update, and after each
// the screen is drawn again, writing only the lines that changed (and
// nothing when none did). There is no frame clock: an idle view sleeps
// until the next tick.
func run(ctx context.Context, t screenIO, m Model) (err error) {
	// Room for a stop, its continue and a resize while stopped: a
	// signal that finds the channel full is lost.
	sigs := make(chan os.Signal, 4)
	// A hang-up comes through opt.Hangup alone (cli.InterruptibleView,
	// which leaves a SIGHUP ignored at start ignored): were the loop to
	// ask for SIGHUP itself as well, taking back an ignored one would
	// end a view under nohup.
	signal.Notify(sigs, syscall.SIGWINCH, syscall.SIGTSTP, syscall.SIGCONT)
	defer signal.Stop(sigs)

	var (
		readers, scans sync.WaitGroup
		done           = make(chan struct{})
		input          = make(chan []term.Event)
		readErr        = make(chan error, 1)
		hungUp         bool
		// The writer: frames written, and the terminal given back and
		// taken again around a stop, while the loop goes on, so that
		// a terminal that takes no output (a stalled connection, a
		// master nobody reads) blocks the writer alone, and SIGTERM,
		// SIGINT and SIGHUP still end the view. One job at a time.
		writes  = make(chan writeJob)
		wrote   = make(chan error, 1)
		writing bool
	)
	// The writer.
	go func() {
		for j := range writes {
			var err error
			switch j.kind {
			case jobFrame:
				_, err = t.Write(j.frame)
			case jobSuspend:
				err = t.Suspend()
			case jobContinue:
				err = t.Continue()
			}
			wrote <- err
		}
	}()
	// The reader: one read, its events in one batch.
	readers.Go(func() {
		var dec term.Decoder
		buf := make([]byte, 1024)
		for {
			n, err := t.Read(buf)
			if err != nil {
				readErr <- err
				return
			}
			evs := dec.Feed(nil, buf[:n])
			if len(evs) == 0 {
				continue
			}
			select {
			case input <- evs:
			case <-done:
				return
			}
		}
	})
	defer func() {
		close(done)
		if writing {
			// A frame is still being written: give the terminal a
			// moment to take it. One that does not is stuck (Restore
			// then leaves out what it would write, and the caller
			// exits with the writer blocked).
			select {
			case <-wrote:
				writing = false
			case <-time.After(stuckAfter):
				hungUp = true
			}
		}
		if !writing {
			close(writes)
		}
		t.Stop()
		readers.Wait()
		rerr := t.Restore()
		t.Close()
		// The sampler is closed when RunTUI returns: let a scan under
		// way finish first. The terminal is already the shell's.
		scans.Wait()
		if err == nil && !hungUp {
			err = rerr
		}
	}()

	scanned := make(chan snapshotMsg, 1)
	var tick <-chan time.Time
	var timer *time.Timer
	// do carries out a command; it reports whether to quit.
	do := func(c Cmd) bool {
		switch c.kind {
		case cmdQuit:
			return true
		case cmdScan:
			sm := m // the scan reads only the sampler and the snapshot
			scans.Go(func() {
				defer func() {
					// Give the terminal back before the crash report.
					if r := recover(); r != nil {
						t.Stop()
						t.Restore()
						panic(r)
					}
				}()
				scanned <- sm.scan()
			})
		case cmdTick:
			if timer == nil {
				timer = time.NewTimer(c.delay)
			} else {
				timer.Reset(c.delay)
			}
			tick = timer.C
		}
		return false
	}
	update := func(msg Msg) bool {
		var c Cmd
		m, c = m.Update(msg)
		return do(c)
	}
	resize := func() bool {
		w, h, err := t.Size()
		if err != nil || w <= 0 || h <= 0 {
			w, h = 80, 24 // a pseudo-terminal nobody sized
		}
		return update(SizeMsg{Width: w, Height: h})
	}

	var (
		scr term.Screen
		// Two frame buffers: one being written, one being made.
		frames [2][]byte
		next   int
	)
	if closed(m.opt.Hangup) {
		// Hung up before the first frame (the signal came while the
		// command started): nothing to draw, nobody to draw it for.
		hungUp = true
		return nil
	}
	resize()
	if do(m.Init()) {
		return nil
	}
	// Job control: suspend asks for the terminal to be given back and
	// the process stopped (SIGTSTP); away says it was given back;
	// resume asks for it again (SIGCONT).
	var suspend, away, resume bool
	for {
		if !writing {
			// While the writer works the next job waits: a frame
			// drawn then is the latest, measured against what was
			// handed to the writer.
			switch {
			case resume:
				resume, away, writing = false, false, true
				scr = term.Screen{} // the shell may have drawn on it
				writes <- writeJob{kind: jobContinue}
			case suspend:
				suspend, away, writing = false, true, true
				writes <- writeJob{kind: jobSuspend}
			case !away:
				frames[next] = scr.Frame(frames[next][:0], strings.Split(m.View(), "\n"), m.width, m.height)
				if len(frames[next]) > 0 {
					writing = true
					writes <- writeJob{kind: jobFrame, frame: frames[next]}
					next ^= 1
				}
			}
		}
		var stop bool
		select {
		case err := <-wrote:
			writing = false
			if errors.Is(err, syscall.EIO) {
				// The terminal is gone, as a read's EIO says (the
				// hang-up can reach the writer first: seen under
				// load, "the terminal hung up", exit 1).
				hungUp = true
				return nil
			}
			if err != nil {
				return err
			}
			if away && !resume {
				// Given back: stop now (a SIGCONT that came
				// meanwhile ends the stop at once).
				syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			}
		case <-ctx.Done():
			return nil
		case evs := <-input:
			for _, ev := range evs {
				if stop = update(ev); stop {
					break
				}
			}
		case err := <-readErr:
			if err == io.EOF || err == syscall.EIO {
				hungUp = true // the terminal is gone
				return nil
			}
			return err
		case <-m.opt.Hangup:
			hungUp = true
			return nil
		case sig := <-sigs:
			switch sig {
			case syscall.SIGTSTP:
				// kill -TSTP (ctrl-z is a key in raw mode).
				suspend = !away
				continue
			case syscall.SIGCONT:
				// After a stop, ours or a SIGSTOP nobody saw
				// coming: the terminal again, in full.
				suspend, resume = false, true
			}
			stop = resize()
		case msg := <-scanned:
			stop = update(msg)
		case <-tick:
			tick = nil
			stop = update(tickMsg{})
		}
		if stop {
			return nil
		}
	}
}

// writeJob is what the writer does next: write a frame, give the
// terminal back before a stop or take it again after.
type writeJob struct {
	kind  jobKind
	frame []byte
}

type jobKind uint8

const (
	jobFrame jobKind = iota
	jobSuspend
	jobContinue
)
