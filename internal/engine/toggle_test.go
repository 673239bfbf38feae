package engine

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Toggler children: the error-bound measurement needs processes whose
// sharing changes on command, which testload's children (fixed memory
// for life) do not offer. A toggler is this test binary run again with
// togglerEnv set. It dirties some private memory, maps the shared file
// of its group (fd 3) and reads every page, acknowledges on fd 4, and
// then, on each SIGUSR1, unmaps the file or maps and reads it again, and
// acknowledges again. When the shared file of a group of n is mapped by m
// of its members, each of them has file/m of it in its PSS: a toggle
// moves the PSS of the members that did nothing, which is exactly the
// error a skipped walk makes.

const togglerEnv = "MEMWHO_ENGINE_TOGGLER"

func TestMain(m *testing.M) {
	if spec, ok := os.LookupEnv(togglerEnv); ok {
		os.Exit(runToggler(spec))
	}
	os.Exit(m.Run())
}

// sink keeps the page reads of the shared mapping from being optimised
// away.
var sink byte

func runToggler(spec string) int {
	var private, shared int
	fmt.Sscanf(spec, "%d,%d", &private, &shared)
	unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		// The lifeline: EOF on stdin means the test is gone.
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	if private > 0 {
		b, err := unix.Mmap(-1, 0, private, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return 1
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
	}
	var m []byte
	mapIt := func() bool {
		b, err := unix.Mmap(3, 0, shared, unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return false
		}
		var s byte
		for i := 0; i < len(b); i += 4096 {
			s += b[i]
		}
		sink = s
		m = b
		return true
	}
	if !mapIt() {
		return 1
	}
	ack := []byte{'.'}
	unix.Write(4, ack)
	for range sig {
		if m != nil {
			unix.Munmap(m)
			m = nil
		} else if !mapIt() {
			return 1
		}
		unix.Write(4, ack)
	}
	return 0
}

// togglers is a set of running toggler children.
type togglers struct {
	pids     []int
	procs    []*os.Process
	mapped   []bool
	ack      *os.File
	lifeline *os.File
}

// startTogglers starts groups*size togglers; each group shares one file
// of shared bytes, and each member holds private bytes of its own.
func startTogglers(t testing.TB, groups, size, private, shared int) *togglers {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	tg := &togglers{ack: ackR, lifeline: lifeW}
	t.Cleanup(tg.stop)
	env := append(os.Environ(), togglerEnv+"="+strconv.Itoa(private)+","+strconv.Itoa(shared),
		"GOMAXPROCS=1", "GOGC=off")
	for g := range groups {
		f, err := os.CreateTemp(t.TempDir(), "shared-")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(make([]byte, shared)); err != nil {
			t.Fatal(err)
		}
		for range size {
			p, err := os.StartProcess(exe, []string{exe}, &os.ProcAttr{
				Env:   env,
				Files: []*os.File{lifeR, nil, os.Stderr, f, ackW},
				Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
			})
			if err != nil {
				t.Fatalf("start toggler of group %d: %v", g, err)
			}
			tg.procs = append(tg.procs, p)
			tg.pids = append(tg.pids, p.Pid)
			tg.mapped = append(tg.mapped, true)
		}
		f.Close()
	}
	lifeR.Close()
	ackW.Close()
	tg.wait(t, len(tg.pids))
	return tg
}

// wait reads n acknowledgements.
func (tg *togglers) wait(t testing.TB, n int) {
	t.Helper()
	buf := make([]byte, 4096)
	tg.ack.SetReadDeadline(time.Now().Add(2 * time.Minute))
	for n > 0 {
		k, err := tg.ack.Read(buf[:min(n, len(buf))])
		if err != nil {
			t.Fatalf("togglers: %d acknowledgements missing: %v", n, err)
		}
		n -= k
	}
}

// toggle makes the togglers at idx map or unmap their group's file and
// waits until all of them have.
func (tg *togglers) toggle(t testing.TB, idx []int) {
	t.Helper()
	for _, i := range idx {
		if err := tg.procs[i].Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		tg.mapped[i] = !tg.mapped[i]
	}
	tg.wait(t, len(idx))
}

func (tg *togglers) stop() {
	tg.lifeline.Close()
	for _, p := range tg.procs {
		p.Kill()
	}
	for _, p := range tg.procs {
		p.Wait()
	}
	tg.ack.Close()
}
