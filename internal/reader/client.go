package reader

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/sample"
)

// Client is the parent's end of a reader: it starts the reader, and
// gives its snapshots as a sampler (watch.Sampler: Scan, and Details for
// the figures held back). It holds no capability: the reader gained its
// own from its exec.
type Client struct {
	ctx context.Context
	opt Options
	// pid is the reader's process: ours to signal until waited is set
	// (its exit seen, not yet reaped, so the pid cannot be anybody
	// else's), under pmu.
	pid    int
	pmu    sync.Mutex
	waited bool
	pipe   *os.File
	// options is the write end of the reader's standard input, which
	// takes its options once (Begin) and is then closed.
	options *os.File
	begun   bool
	frames  chan frame
	// free holds payload buffers decoded and given back, for the next
	// frames: a watch reads one snapshot a tick, of the same size.
	free chan []byte
	// done ends the goroutine that started the reader; once closed the
	// reader is killed.
	done      chan struct{}
	closeOnce sync.Once

	mu    sync.Mutex
	notes []string
	// exited is closed once the reader has been reaped; status is how
	// it ended.
	exited chan struct{}
	status syscall.WaitStatus

	pending  error // an error that came after the snapshot Scan gave
	deferred []Deferred
	details  []engine.Detail
}

// frame is what the pipe's reading goroutine hands on: a snapshot's
// payload, the ready frame, or the end (err: the reader's error frame,
// or why the stream ended).
type frame struct {
	kind    byte
	payload []byte
	stamp   int64
	err     error
}

// ErrStopped is returned by Scan when its context ended while it waited.
var ErrStopped = errors.New("stopped while waiting for the reader")

// exe is the binary the reader runs: this one, by the kernel's link to
// the very file this process executes (an upgrade that renamed another
// binary into place does not change it, nor does a path the user
// controls).
var exe = "/proc/self/exe"

// Start starts a reader doing opt (its Parent is set here) and waits
// until it is ready: Prestart and Begin.
func Start(ctx context.Context, opt Options) (*Client, error) {
	c, err := Prestart()
	if err != nil {
		return nil, err
	}
	if err := c.Begin(ctx, opt); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Prestart starts a reader that waits for its options: its exec and the
// Go runtime's start-up then run while memwho parses its flags, instead
// of after. Begin gives it its options; Close without Begin ends it
// (it reads an end of input and exits without a word).
func Prestart() (*Client, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("reader: %w", err)
	}
	optR, optW, err := os.Pipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("reader: %w", err)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		for _, f := range []*os.File{r, w, optR, optW} {
			f.Close()
		}
		return nil, fmt.Errorf("reader: %w", err)
	}
	c := &Client{pipe: r, options: optW, frames: make(chan frame, 1), free: make(chan []byte, 2), done: make(chan struct{})}
	type started struct {
		pid int
		err error
	}
	startc := make(chan started, 1)
	go func() {
		// The parent-death signal follows the thread that started the
		// reader, not the process: this thread stays until Close
		// (a thread ends when a goroutine locked to it returns).
		runtime.LockOSThread()
		// syscall.ForkExec, not os.StartProcess: the os package's
		// first start of a process probes whether pidfds work with a
		// clone of its own (a child that exits at once), and that
		// probe was on the way to every watch's first frame. The
		// reader is waited for by its pid (wait).
		pid, err := syscall.ForkExec(exe, []string{Argv0, Command, "--parent=" + strconv.Itoa(os.Getpid())}, &syscall.ProcAttr{
			Dir:   "/",
			Env:   []string{},
			Files: []uintptr{optR.Fd(), w.Fd(), null.Fd()},
			// Cleared by the exec that gains the capabilities; the
			// reader asks for it again itself (withParent).
			Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
		})
		startc <- started{pid, err}
		if err != nil {
			runtime.UnlockOSThread()
			return
		}
		<-c.done
		runtime.UnlockOSThread()
	}()
	s := <-startc
	w.Close()
	optR.Close()
	null.Close()
	if s.err != nil {
		r.Close()
		optW.Close()
		return nil, fmt.Errorf("start the reader: %w", s.err)
	}
	c.pid = s.pid
	c.exited = make(chan struct{})
	go c.wait()
	go c.read()
	return c, nil
}

// wait reaps the reader once it has ended. Its exit is first seen
// without reaping it, and signal stops sending from then on, so that
// a signal never reaches another process given the same pid.
func (c *Client) wait() {
	var info unix.Siginfo
	for {
		if err := unix.Waitid(unix.P_PID, c.pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != syscall.EINTR {
			break
		}
	}
	c.pmu.Lock()
	c.waited = true
	c.pmu.Unlock()
	for {
		if _, err := syscall.Wait4(c.pid, &c.status, 0, nil); err != syscall.EINTR {
			break
		}
	}
	close(c.exited)
}

// signal sends sig to the reader, unless it has ended.
func (c *Client) signal(sig syscall.Signal) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.pid > 0 && !c.waited {
		kill(c.pid, sig)
	}
}

// kill is syscall.Kill (tests count what is sent).
var kill = syscall.Kill

// describe says how a process ended, as os.ProcessState does.
func describe(ws syscall.WaitStatus) string {
	switch {
	case ws.Exited():
		return "exit status " + strconv.Itoa(ws.ExitStatus())
	case ws.Signaled():
		if ws.CoreDump() {
			return "signal: " + ws.Signal().String() + " (core dumped)"
		}
		return "signal: " + ws.Signal().String()
	}
	return fmt.Sprintf("wait status %#x", uint32(ws))
}

// Begin gives the reader its options, once (opt.Parent is this process),
// and waits until it is ready: it has settled its capabilities, and its
// notes (a hidepid= notice) are in Notes. ctx's end stops the wait, and
// any later Scan's.
func (c *Client) Begin(ctx context.Context, opt Options) error {
	if c.begun {
		return errors.New("reader: options given twice")
	}
	c.begun = true
	opt.Parent = os.Getpid()
	c.ctx, c.opt = ctx, opt
	// A reader that ended refuses the write: its own word says why.
	_, werr := c.options.Write([]byte(strings.Join(opt.Flags(), "\n")))
	c.options.Close()
	select {
	case f := <-c.frames:
		if f.err != nil {
			return f.err
		}
		if werr != nil {
			return fmt.Errorf("reader: its options: %w", werr)
		}
		if f.kind != frameReady {
			return errors.New("reader: no ready frame first")
		}
	case <-ctx.Done():
		return ErrStopped
	}
	return nil
}

// read reads frames from the pipe until it ends: notes are kept for
// Notes, the rest handed on one at a time (a snapshot not yet taken
// holds the next back, and the reader then waits in its write).
func (c *Client) read() {
	var hdr [frameHeader]byte
	send := func(f frame) bool {
		select {
		case c.frames <- f:
			return true
		case <-c.done:
			return false
		}
	}
	for {
		if _, err := io.ReadFull(c.pipe, hdr[:]); err != nil {
			send(frame{err: c.ended(err)})
			return
		}
		kind, n := hdr[0], binary.BigEndian.Uint32(hdr[1:])
		limit := uint32(maxFrame)
		if kind != frameSnapshot {
			limit = maxText
		}
		if n > limit {
			send(frame{err: fmt.Errorf("reader: a frame of %d bytes", n)})
			return
		}
		var buf []byte
		select {
		case buf = <-c.free:
		default:
		}
		p, err := readN(c.pipe, int(n), buf)
		if err != nil {
			send(frame{err: c.ended(err)})
			return
		}
		switch kind {
		case frameNote:
			c.mu.Lock()
			c.notes = append(c.notes, string(p))
			c.mu.Unlock()
			continue
		case frameError:
			send(frame{err: errors.New(string(p))})
			return
		case frameReady:
		case frameSnapshot:
			stamp, ok := frameStamp(p)
			if !ok {
				send(frame{err: errors.New("reader: snapshot frame cut short")})
				return
			}
			if !send(frame{kind: kind, payload: p, stamp: stamp}) {
				return
			}
			continue
		default:
			send(frame{err: fmt.Errorf("reader: unknown frame %q", kind)})
			return
		}
		if !send(frame{kind: kind}) {
			return
		}
	}
}

// readN reads n bytes into buf (or a new buffer), growing it with what
// comes rather than with what the header claimed.
func readN(r io.Reader, n int, buf []byte) ([]byte, error) {
	if cap(buf) >= n {
		buf = buf[:n]
	} else {
		buf = make([]byte, min(n, max(cap(buf), 64<<10)))
	}
	got := 0
	for got < n {
		if got == len(buf) {
			nb := make([]byte, min(2*len(buf), n))
			copy(nb, buf)
			buf = nb
		}
		m, err := r.Read(buf[got:])
		got += m
		if err != nil && got < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// ended says why the pipe ended: the reader exited (with its status when
// it has gone), or was closed.
func (c *Client) ended(err error) error {
	select {
	case <-c.done:
		return errors.New("reader closed")
	default:
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		// Say how, when it has gone by now (killed by a signal).
		select {
		case <-c.exited:
			return fmt.Errorf("the reader ended without a word (%s)", describe(c.status))
		case <-time.After(100 * time.Millisecond):
		}
		return errors.New("the reader ended without a word")
	}
	return fmt.Errorf("reader: %w", err)
}

// Notes returns the notes the reader sent since the last call (notices
// and warnings for standard error), each one line as the reader wrote
// it.
func (c *Client) Notes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.notes
	c.notes = nil
	return n
}

// Scan fills snap with the reader's next snapshot: the newest it has
// sent, as long as that walk started at most half an interval before
// this call (older ones, left in the pipe while nobody asked, as when
// the live view was paused, are skipped), else the next one it sends.
func (c *Client) Scan(snap *sample.Snapshot) error {
	if c.pending != nil {
		return c.pending
	}
	since := monotonic() - int64(c.opt.Interval/2)
	var got *frame
	for {
		var f frame
		if got == nil {
			select {
			case f = <-c.frames:
			case <-c.ctx.Done():
				return ErrStopped
			}
		} else {
			select {
			case f = <-c.frames:
			default:
				return c.decode(got, snap)
			}
		}
		if f.err != nil {
			if got != nil {
				c.pending = f.err
				return c.decode(got, snap)
			}
			c.pending = f.err
			return f.err
		}
		if f.kind != frameSnapshot {
			c.pending = fmt.Errorf("reader: unexpected frame %q", f.kind)
			return c.pending
		}
		if !c.opt.Once && f.stamp < since {
			continue
		}
		got = &f
	}
}

// decode decodes the snapshot frame f into snap.
func (c *Client) decode(f *frame, snap *sample.Snapshot) error {
	var err error
	c.deferred, err = parseSnapshot(f.payload, snap, c.deferred)
	// The decoded snapshot holds nothing of the payload (its strings
	// are copies): the buffer serves the next frame.
	select {
	case c.free <- f.payload[:0]:
	default:
	}
	if err != nil {
		c.pending = fmt.Errorf("reader: %w", err)
		return c.pending
	}
	c.details = c.details[:0]
	if len(c.deferred) > 0 {
		c.details = append(c.details, make([]engine.Detail, len(snap.Procs))...)
		for i := range snap.Procs {
			c.details[i] = engine.Detail{PID: snap.Procs[i].PID}
		}
		for _, d := range c.deferred {
			c.details[d.Index].Deferred, c.details[d.Index].SampledAt = true, d.At
		}
	}
	return nil
}

// Details says which processes of the last snapshot had figures held
// back, and when those were read (watch's read times); empty when none.
func (c *Client) Details() []engine.Detail { return c.details }

// Close kills the reader and gives up on its pipe. It waits a moment for
// the reader to be reaped, no longer: one in an uninterruptible read is
// reaped by init once memwho has ended.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		if c.options != nil {
			c.options.Close()
		}
		if c.pid == 0 {
			return
		}
		c.signal(syscall.SIGKILL)
		c.pipe.Close()
		select {
		case <-c.exited:
		case <-time.After(200 * time.Millisecond):
		}
	})
	return nil
}
