// Package term is the little of a terminal that memwho's live view
// needs, on golang.org/x/sys/unix alone: raw mode, the size, the
// alternate screen, key presses and pastes decoded from the input, and
// frames drawn by changed lines. It replaced bubbletea, lipgloss and
// x/ansi (about 20 packages, 0.55 ms of package initialisers at every
// start of the binary and 1.4 MiB of peak RSS) in a binary that may run
// with capabilities; docs/watch.md has the figures.
//
// It speaks the VT100/xterm subset every terminal in use understands and
// asks the terminal nothing, so there is no reply to wait for or parse.
package term

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// errStuck is Restore's error when the terminal took no output.
var errStuck = errors.New("the terminal takes no output: its screen was not restored")

// Terminal is a terminal taken over for a full-screen view: its input in
// raw mode (keys arrive as typed, nothing echoed, ctrl+c a key), the
// alternate screen, the cursor hidden, bracketed paste on and a window
// title. Restore puts all of it back.
type Terminal struct {
	in, out  *os.File
	ownIn    bool // in was opened here (/dev/tty) and is closed by Restore
	raw      bool // the input's settings were changed
	entered  bool // enter was written (in part, perhaps)
	saved    unix.Termios
	wake     [2]int // a pipe whose write end stops Read
	restored sync.Once
	err      error
	stopOnce sync.Once
	writing  atomic.Int32 // writes under way
	// suspended says Suspend gave the terminal back (leave written,
	// the input's settings restored) and Continue has not taken it
	// again.
	suspended atomic.Bool
}

// enter and leave are what Open writes and what Restore writes to undo
// it: the alternate screen (1049, which also saves the cursor), the
// cursor hidden (25), automatic wrap off (7), bracketed paste (2004),
// the window title pushed on xterm's title stack (22;2t, popped by
// 23;2t) and set (OSC 2). Leave ends any style first, so that the
// shell's screen is not drawn bold.
//
// Wrap is off because widths are measured, not known: a name of
// grapheme clusters that the view counts as 2 cells each and a terminal
// draws code point by code point (60 leading jamo U+1100 in an
// executable's name: 2 cells measured, 120 drawn) would wrap onto the
// lines below and, from the last row, scroll the screen under the line
// renderer. Without wrap a terminal clips such a line at its edge.
const (
	enter = "\x1b[?1049h\x1b[?25l\x1b[?7l\x1b[?2004h\x1b[22;2t\x1b]2;memwho watch\x07"
	leave = "\x1b[23;2t\x1b[?2004l\x1b[m\x1b[?7h\x1b[?25h\x1b[?1049l"
	// reenter is what Continue writes after a stop Suspend did not
	// see (SIGSTOP): the modes again, but not a second title push,
	// which Restore's one pop would leave on the stack.
	reenter = "\x1b[?1049h\x1b[?25l\x1b[?7l\x1b[?2004h"
)

// Open takes over the terminal that out writes to. Keys are read from
// in when it is that terminal, else from /dev/tty (standard input
// redirected). It fails, changing nothing, when out is not a terminal.
func Open(in, out *os.File) (_ *Terminal, err error) {
	if _, err := unix.IoctlGetTermios(int(out.Fd()), unix.TCGETS); err != nil {
		return nil, errors.New("standard output is not a terminal")
	}
	t := &Terminal{in: in, out: out, wake: [2]int{-1, -1}}
	saved, err := unix.IoctlGetTermios(int(in.Fd()), unix.TCGETS)
	if err != nil {
		// A fixed path, the process's own controlling terminal (os
		// opens it close-on-exec); O_NOCTTY in case there is none.
		f, err := os.OpenFile("/dev/tty", os.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			return nil, fmt.Errorf("standard input is not a terminal to read keys from, and %w", err)
		}
		if saved, err = unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
			f.Close()
			return nil, fmt.Errorf("/dev/tty: %w", err)
		}
		t.in, t.ownIn = f, true
	}
	t.saved = *saved
	defer func() {
		if err != nil {
			t.Restore()
			t.Close()
		}
	}()
	if err := unix.Pipe2(t.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, err
	}
	raw := t.saved
	makeRaw(&raw)
	if err := unix.IoctlSetTermios(int(t.in.Fd()), unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	t.raw, t.entered = true, true
	current.Store(t)
	if _, err := io.WriteString(t.out, enter); err != nil {
		return nil, err
	}
	return t, nil
}

// current is the terminal Open took and Restore has not given back.
var current atomic.Pointer[Terminal]

// RestoreModes gives the terminal taken by Open its input's settings
// back, and writes nothing: for a process about to be ended while a
// write to that terminal blocks (cli.StopWithin). The screen stays as
// the view left it; the shell's line editing works again.
func RestoreModes() {
	if t := current.Load(); t != nil && t.raw {
		unix.IoctlSetTermios(int(t.in.Fd()), unix.TCSETS, &t.saved)
	}
}

// makeRaw is cfmakeraw(3): bytes in and out as they are, no echo, no
// line editing, no signals from keys, no flow control.
func makeRaw(t *unix.Termios) {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
}

// Size is the terminal's width and height in cells.
func (t *Terminal) Size() (width, height int, err error) {
	ws, err := unix.IoctlGetWinsize(int(t.out.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0, err
	}
	return int(ws.Col), int(ws.Row), nil
}

// Write writes p (a whole frame) to the terminal. It blocks while the
// terminal takes no output; see Restore.
func (t *Terminal) Write(p []byte) (int, error) {
	t.writing.Add(1)
	defer t.writing.Add(-1)
	return t.out.Write(p)
}

// writeString writes s as Write does, counted as a write under way.
func (t *Terminal) writeString(s string) error {
	t.writing.Add(1)
	defer t.writing.Add(-1)
	_, err := io.WriteString(t.out, s)
	return err
}

// Read reads what the keyboard sent, waiting for it, until Stop: then it
// returns io.EOF. It may return 0 bytes and no error.
func (t *Terminal) Read(p []byte) (int, error) {
	fds := []unix.PollFd{
		{Fd: int32(t.in.Fd()), Events: unix.POLLIN},
		{Fd: int32(t.wake[0]), Events: unix.POLLIN},
	}
	for {
		_, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue // a signal (SIGWINCH) interrupted the wait
		}
		if err != nil {
			return 0, err
		}
		if fds[1].Revents != 0 {
			return 0, io.EOF
		}
		if fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) == 0 {
			continue
		}
		// (POLLNVAL, a descriptor closed under the reader: the read
		// fails with EBADF rather than poll returning it for ever.)
		n, err := unix.Read(int(t.in.Fd()), p)
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			return 0, nil
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF // hung up
		}
		return n, nil
	}
}

// Stop makes Read return io.EOF, now or at its next call.
func (t *Terminal) Stop() {
	t.stopOnce.Do(func() {
		if t.wake[1] >= 0 {
			unix.Write(t.wake[1], []byte{0})
		}
	})
}

// Restore gives the terminal back as Open found it: the modes set
// undone, the shell's screen back, the input's settings restored. Only
// the first call does it; later ones return its error. Stop the reader
// (Stop) before, so that it reads nothing meant for the shell.
//
// While a Write is blocked (a terminal that takes no output: a stalled
// connection, a master side nobody reads) what Restore would write is
// left out, since it would block behind it: the input's settings are
// still restored, and the error says so.
func (t *Terminal) Restore() error {
	t.restored.Do(func() {
		var werr, serr error
		switch {
		case t.suspended.Load():
			// Suspend wrote leave already.
		case t.entered && t.writing.Load() > 0:
			werr = errStuck
		case t.entered:
			_, werr = io.WriteString(t.out, leave)
		}
		if t.raw {
			serr = unix.IoctlSetTermios(int(t.in.Fd()), unix.TCSETS, &t.saved)
		}
		current.CompareAndSwap(t, nil)
		t.err = errors.Join(werr, serr)
		if t.ownIn {
			t.in.Close()
		}
	})
	return t.err
}

// Suspend gives the terminal back as Restore does, for a stop that job
// control asks for (SIGTSTP: the shell takes the terminal meanwhile);
// Continue takes it again. It is for the goroutine that writes frames,
// between them.
func (t *Terminal) Suspend() error {
	if t.suspended.Load() {
		return nil
	}
	werr := t.writeString(leave)
	serr := unix.IoctlSetTermios(int(t.in.Fd()), unix.TCSETS, &t.saved)
	t.suspended.Store(true)
	return errors.Join(werr, serr)
}

// Continue takes the terminal again after a stop (SIGCONT). After
// Suspend it does what Open did; after a stop nobody saw coming
// (SIGSTOP), it sets the input's raw mode and the screen's modes again,
// since a shell that had the terminal meanwhile put its own back. The
// caller then draws a whole frame.
func (t *Terminal) Continue() error {
	raw := t.saved
	makeRaw(&raw)
	serr := unix.IoctlSetTermios(int(t.in.Fd()), unix.TCSETS, &raw)
	s := reenter
	if t.suspended.Swap(false) {
		s = enter
	}
	werr := t.writeString(s)
	return errors.Join(serr, werr)
}

// Close releases the wake-up pipe, after Restore and after the reader
// has returned.
func (t *Terminal) Close() {
	for i, fd := range t.wake {
		if fd >= 0 {
			unix.Close(fd)
			t.wake[i] = -1
		}
	}
}
