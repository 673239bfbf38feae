package term

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memwho/memwho/internal/term/termtest"
)

// readN reads n bytes from the terminal's master side. (No deadline:
// Fd put the file in blocking mode; go test -timeout ends a hang.)
func readN(t *testing.T, f *os.File, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(f, b); err != nil {
		t.Fatalf("reading %d bytes of what was written: %v (got %q)", n, err, b)
	}
	return string(b)
}

func TestTerminal(t *testing.T) {
	master, slave := termtest.OpenPTY(t, 100, 24)
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := Open(slave, slave)
	if err != nil {
		t.Fatal(err)
	}
	if got := readN(t, master, len(enter)); got != enter {
		t.Errorf("Open wrote %q, want %q", got, enter)
	}
	raw, _ := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if raw.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 || raw.Iflag&(unix.ICRNL|unix.IXON) != 0 || raw.Oflag&unix.OPOST != 0 {
		t.Errorf("not raw: lflag %#x iflag %#x oflag %#x", raw.Lflag, raw.Iflag, raw.Oflag)
	}
	if w, h, err := tm.Size(); w != 100 || h != 24 || err != nil {
		t.Errorf("Size() = %d×%d, %v; want 100×24", w, h, err)
	}

	// Keys arrive as typed: ctrl+c is a byte, not a signal; CR stays CR.
	if _, err := master.Write([]byte("q\x03\r")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	var got []byte
	for len(got) < 3 {
		n, err := tm.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != "q\x03\r" {
		t.Errorf("read %q, want q, ctrl+c, CR", got)
	}

	if _, err := tm.Write([]byte("frame")); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, master, 5); got != "frame" {
		t.Errorf("frame arrived as %q", got)
	}

	// Stop ends a Read that waits.
	done := make(chan error)
	go func() {
		_, err := tm.Read(buf)
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	tm.Stop()
	select {
	case err := <-done:
		if err != io.EOF {
			t.Errorf("Read after Stop: %v, want EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not end Read")
	}

	if err := tm.Restore(); err != nil {
		t.Fatal(err)
	}
	tm.Close()
	if got := readN(t, master, len(leave)); got != leave {
		t.Errorf("Restore wrote %q, want %q", got, leave)
	}
	after, _ := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if *after != *before {
		t.Errorf("termios after Restore %+v, want as before %+v", after, before)
	}
	// A second Restore writes nothing more: the next byte is ours.
	if err := tm.Restore(); err != nil {
		t.Error(err)
	}
	slave.Write([]byte("."))
	if got := readN(t, master, 1); got != "." {
		t.Errorf("second Restore wrote %q…", got)
	}
}

func TestOpenNotTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := Open(os.Stdin, w); err == nil {
		t.Fatal("Open on a pipe succeeded")
	}
	w.Close()
	if b, _ := io.ReadAll(r); len(b) != 0 {
		t.Errorf("Open on a pipe wrote %q", b)
	}
}

// A terminal whose master side nobody reads. A Write blocks;
// Restore must not block behind it (it leaves out its own write) and
// still puts the input's settings back.
func TestRestoreWhileWriteBlocked(t *testing.T) {
	_, slave := termtest.OpenPTY(t, 100, 24)
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := Open(slave, slave)
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := tm.Write(make([]byte, 1<<20)) // far more than a pty holds
		wrote <- err
	}()
	for tm.writing.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // into the kernel's wait
	restored := make(chan error, 1)
	go func() { restored <- tm.Restore() }()
	select {
	case err := <-restored:
		if !errors.Is(err, errStuck) {
			t.Errorf("Restore: %v, want %v", err, errStuck)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Restore blocked behind the stuck write")
	}
	tm.Close()
	after, _ := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if *after != *before {
		t.Errorf("termios after Restore %+v, want as before %+v", after, before)
	}
	select {
	case err := <-wrote:
		t.Fatalf("the 1 MiB write returned (%v): nothing was stuck", err)
	default:
	}
	// The cleanup's close of the master (the connection gone) ends
	// the write with EIO.
}

// Job control. Suspend gives the terminal back as Restore does;
// Continue takes it again: after Suspend as Open did, after a stop it
// did not see (SIGSTOP, a shell restoring its own settings) the raw
// mode and the modes again, without a second title push.
func TestSuspendContinue(t *testing.T) {
	master, slave := termtest.OpenPTY(t, 100, 24)
	before, _ := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	tm, err := Open(slave, slave)
	if err != nil {
		t.Fatal(err)
	}
	readN(t, master, len(enter))
	isRaw := func() bool {
		tt, _ := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		return tt.Lflag&(unix.ICANON|unix.ECHO) == 0
	}
	if err := tm.Suspend(); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, master, len(leave)); got != leave || isRaw() {
		t.Errorf("Suspend wrote %q, raw %v; want %q and the settings back", got, isRaw(), leave)
	}
	if err := tm.Continue(); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, master, len(enter)); got != enter || !isRaw() {
		t.Errorf("Continue after Suspend wrote %q, raw %v; want %q, raw", got, isRaw(), enter)
	}
	unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, before) // a shell, meanwhile
	if err := tm.Continue(); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, master, len(reenter)); got != reenter || !isRaw() {
		t.Errorf("Continue after a stop wrote %q, raw %v; want %q, raw", got, isRaw(), reenter)
	}
	// Suspended, then ended (SIGTERM while stopped): Restore writes
	// nothing more, the settings are back.
	tm.Suspend()
	readN(t, master, len(leave))
	tm.Restore()
	tm.Close()
	slave.Write([]byte("."))
	if got := readN(t, master, 1); got != "." {
		t.Errorf("Restore after Suspend wrote %q…", got)
	}
	if after, _ := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS); *after != *before {
		t.Error("settings not restored")
	}
}

// The input's descriptor closed under the reader (poll then
// answers POLLNVAL at once, for ever): Read fails, it does not spin.
func TestReadClosedInput(t *testing.T) {
	_, slave := termtest.OpenPTY(t, 100, 24)
	fd, err := unix.Dup(int(slave.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	in := os.NewFile(uintptr(fd), "in")
	tm, err := Open(in, slave)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	unix.Close(fd)
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 16)
		for {
			if _, err := tm.Read(buf); err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err != unix.EBADF {
			t.Errorf("Read: %v, want EBADF", err)
		}
	case <-time.After(10 * time.Second):
		tm.Stop()
		t.Fatal("Read neither failed nor returned")
	}
}

// Suspend's own write blocked (the terminal stopped taking
// output just then): Restore must not block behind it either.
func TestRestoreWhileSuspendBlocked(t *testing.T) {
	_, slave := termtest.OpenPTY(t, 100, 24)
	tm, err := Open(slave, slave)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	// Another writer fills the terminal (master not read).
	go unix.Write(int(slave.Fd()), make([]byte, 1<<20))
	time.Sleep(50 * time.Millisecond)
	go tm.Suspend()
	for tm.writing.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	restored := make(chan error, 1)
	go func() { restored <- tm.Restore() }()
	select {
	case err := <-restored:
		if !errors.Is(err, errStuck) {
			t.Errorf("Restore: %v, want %v", err, errStuck)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Restore blocked behind Suspend's write")
	}
}
