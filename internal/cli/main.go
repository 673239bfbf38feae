package cli

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// Main starts the runtime's poller (StartPoller), then runs a command's
// dispatch and exits with its code. SIGINT and SIGTERM keep their
// default action, ending the process at once, as they end ps or smem,
// until the command asks for them (Interruptible).
func Main(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	if err := StartPoller(); err != nil {
		fmt.Fprintf(os.Stderr, "memwho: error: %s\n", OneLine(err.Error()))
		os.Exit(ExitFailure)
	}
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// Interruptible returns a copy of ctx that SIGINT, SIGTERM and SIGHUP cancel
// instead of ending the process, and the function that gives them back
// their default action. A command that has something to undo or finish
// when stopped (a terminal to restore, a file to remove or publish, a
// database or socket to close) asks for it before it starts; one that
// reads and prints does not. os/signal starts two threads of its own
// (one locked to the signal mask, one waiting for signals): 0.3 ms of a
// 2 ms start-up, measured with perf stat on memwho --version.
//
// SIGHUP (the terminal closed) stops it cleanly too: its default action
// would kill a snapshot -o or a report --html and leave its temporary
// file. SIGINT and SIGHUP that memwho was started with
// ignored stay ignored (nohup, a background job of a script: sh runs
// those with SIGINT ignored): os/signal would install a handler for
// them, and a Ctrl-C meant for a script's foreground command would stop
// the record it had started with "&", a snapshot under nohup end at the
// terminal's hang-up. SIGTERM is not looked at:
// the Go runtime never leaves it ignored.
//
// A command that has not returned StopWithin after the first signal is
// ended by it all the same (forceStop), whatever it waits for: a write
// to a pipe nobody reads, a stalled terminal, a server. Until the
// returned function is called; a command calls it once it has returned.
func Interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	sigs := interruptSignals(true)
	c := make(chan os.Signal, 1)
	signal.Notify(c, sigs...)
	ctx, cancel := context.WithCancel(ctx)
	w := newWatchdog(sigs, nil)
	go func() {
		select {
		case s := <-c:
			w.arm(s)
			cancel()
		case <-w.done:
		}
	}()
	return ctx, func() {
		w.disarm()
		signal.Stop(c)
		cancel()
	}
}

// StopWithin is how long a command that catches SIGINT, SIGTERM or
// SIGHUP (Interruptible, InterruptibleView, InterruptibleOnce) has, from
// the first of them, to finish what it undoes and end: then it is ended
// by that signal. With the time the kernel takes to end it, every
// command ends within a second of the signal.
const StopWithin = 700 * time.Millisecond

// watchdog ends the process StopWithin after the first signal unless
// disarmed first.
type watchdog struct {
	sigs    []os.Signal
	cleanup func()
	done    chan struct{}
	mu      sync.Mutex
	timer   *time.Timer
	off     bool
}

func newWatchdog(sigs []os.Signal, cleanup func()) *watchdog {
	return &watchdog{sigs: sigs, cleanup: cleanup, done: make(chan struct{})}
}

// arm starts the countdown at the first signal s; later ones change
// nothing.
func (w *watchdog) arm(s os.Signal) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.off || w.timer != nil {
		return
	}
	w.timer = time.AfterFunc(StopWithin, func() {
		w.mu.Lock()
		off := w.off
		w.mu.Unlock()
		if !off {
			forceStop(s.(syscall.Signal), w.sigs, w.cleanup)
		}
	})
}

// disarm stops the countdown for good.
func (w *watchdog) disarm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.off {
		return
	}
	w.off = true
	close(w.done)
	if w.timer != nil {
		w.timer.Stop()
	}
}

// forceStop ends the process by sig, after cleanup (the temporary files
// to remove, the terminal's modes to give back), as a shell reports a
// signal's death.
func forceStop(sig syscall.Signal, sigs []os.Signal, cleanup func()) {
	if cleanup != nil {
		// Bounded too: a cleanup that waits (a temporary file's
		// directory on a file system that does not answer) must not
		// keep the process from ending.
		done := make(chan struct{})
		go func() {
			cleanup()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(100 * time.Millisecond):
		}
	}
	signal.Reset(sigs...)
	syscall.Kill(syscall.Getpid(), sig)
	// In case the kill did not arrive (a signal blocked on this thread).
	time.Sleep(100 * time.Millisecond)
	os.Exit(128 + int(sig))
}

// InterruptibleView is Interruptible for the live view: SIGHUP is
// caught too, but it does not end the context, because the view takes
// the terminal's hang-up as its own and then gives nothing back to a
// terminal that is gone. When it ended the context as well, the two
// raced, and when the context won, the view wrote to the dead terminal
// and exited 1 (seen under load: TestWatchTerminal, "the
// terminal hung up", 2 of 60 runs). Instead the returned channel is
// closed at the first SIGHUP, whenever it comes: before the view has
// started its own handling too (a hang-up caught here and dropped left
// the view running: TestWatchSignals, "SIGHUP before the first
// frame", 1 run of 4 under load), and in the plain output, which it
// ends as SIGTERM does. SIGHUP stays caught for the whole command: a
// hang-up that arrives after the view has stopped its own handling
// would otherwise end the process by its default action. Under nohup
// (SIGHUP ignored) the channel is never closed.
//
// The first of the three starts the StopWithin countdown (see
// Interruptible); cleanup runs before the process is ended by it (the
// view gives the terminal its modes back).
func InterruptibleView(ctx context.Context, cleanup func()) (context.Context, <-chan struct{}, context.CancelFunc) {
	sigs := interruptSignals(false)
	c := make(chan os.Signal, 1)
	signal.Notify(c, sigs...)
	ctx, cancel := context.WithCancel(ctx)
	hangup := make(chan struct{})
	all := sigs
	hup := make(chan os.Signal, 1) // later hang-ups find it full and are dropped
	if !signal.Ignored(syscall.SIGHUP) {
		signal.Notify(hup, syscall.SIGHUP)
		all = append(all, syscall.SIGHUP)
	}
	w := newWatchdog(all, cleanup)
	go func() {
		select {
		case s := <-c:
			w.arm(s)
			cancel()
		case <-w.done:
		}
	}()
	go func() {
		select {
		case <-hup:
			w.arm(syscall.SIGHUP)
			close(hangup)
		case <-w.done:
		}
	}()
	var once sync.Once
	return ctx, hangup, func() {
		once.Do(func() {
			w.disarm()
			signal.Stop(hup)
			signal.Stop(c)
			cancel()
		})
	}
}

// interruptSignals are the signals Interruptible catches: SIGTERM, and
// SIGINT and (with hangup) SIGHUP unless memwho was started with them
// ignored.
func interruptSignals(hangup bool) []os.Signal {
	sigs := []os.Signal{syscall.SIGTERM}
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGHUP} {
		if !signal.Ignored(s) && (hangup || s != syscall.SIGHUP) {
			sigs = append(sigs, s)
		}
	}
	return sigs
}

// InterruptibleOnce is Interruptible for one signal: the first ends the
// context, the second ends the process, killed by that signal. A report
// or snapshot stopped by the first while its write to a stuck pipe
// blocks (a reader that stopped reading) would otherwise swallow every
// later SIGINT, SIGTERM and SIGHUP until SIGKILL. watch keeps
// Interruptible: a second signal must not end it while it restores the
// terminal.
//
// The second signal calls cleanup (atomicfile.RemoveTemps) before the
// process dies. The signals' default action given back at the first
// would end the run at a second wherever it was, its temporary file
// left behind; and one event often sends
// two, milliseconds apart: systemd's stop with SendSIGHUP=yes (SIGTERM
// then SIGHUP), a terminal that closes (SIGHUP from the kernel to the
// foreground group, then from the shell to its jobs), Ctrl-C pressed
// twice. Signals ignored at the start stay ignored, as in Interruptible.
// Without a second signal, the first ends the process StopWithin after
// it, cleanup first, as Interruptible does.
func InterruptibleOnce(ctx context.Context, cleanup func()) (context.Context, context.CancelFunc) {
	sigs := interruptSignals(true)
	c := make(chan os.Signal, 1)
	signal.Notify(c, sigs...)
	ctx, cancel := context.WithCancel(ctx)
	w := newWatchdog(sigs, cleanup)
	done := make(chan struct{})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			w.disarm()
			signal.Stop(c)
			close(done)
			cancel()
		})
	}
	go func() {
		for n := 0; ; n++ {
			var s os.Signal
			select {
			case s = <-c:
			case <-done:
				return
			}
			if n == 0 {
				w.arm(s)
				cancel()
				continue
			}
			forceStop(s.(syscall.Signal), sigs, cleanup)
		}
	}()
	return ctx, stop
}

// CatchPipe makes a write to a closed pipe on standard output or error
// fail with EPIPE, which the command returns as its error, instead of
// ending the process with SIGPIPE (the Go runtime's default for
// descriptors 1 and 2), until the function it returns is called. A
// command that has a temporary file open asks for it, so that the file
// is removed: "memwho --html page.html | head" killed by SIGPIPE at its
// table would leave .page.html.tmp-… behind. Commands that
// only print keep the quiet default ("memwho watch --plain | head").
func CatchPipe() (stop func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGPIPE)
	return func() { signal.Stop(c) }
}

// ErrInterrupted is what a command returns when Interruptible's context
// ended before it wrote anything: its one error line.
var ErrInterrupted = errors.New("interrupted (SIGINT, SIGTERM or SIGHUP): nothing written")

// Command is one line of a binary's command list ("memwho help").
type Command struct{ Name, Summary string }

// PrintCommands writes the command list under a "Commands:" heading.
func PrintCommands(w io.Writer, list []Command) {
	fmt.Fprintln(w, "\nCommands:")
	width := 0
	for _, c := range list {
		width = max(width, len(c.Name))
	}
	for _, c := range list {
		fmt.Fprintf(w, "  %-*s %s\n", width, c.Name, c.Summary)
	}
}

// UsageText returns usage/NAME.txt of a command's embedded usage texts,
// kept as text files so that they read, and are reviewed, as the user
// sees them. A missing file is a build mistake: it panics.
func UsageText(texts embed.FS, name string) string {
	b, err := texts.ReadFile("usage/" + name + ".txt")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// SplitCommand returns the command a binary's arguments name and the
// arguments left for it: the first argument unless it is a flag, then
// def; --version (or -version) is the command "version".
func SplitCommand(args []string, def string) (name string, rest []string) {
	if len(args) == 0 {
		return def, args
	}
	switch a := args[0]; {
	case a == "--version" || a == "-version":
		return "version", args[1:]
	case len(a) > 0 && a[0] != '-':
		return a, args[1:]
	}
	return def, args
}
