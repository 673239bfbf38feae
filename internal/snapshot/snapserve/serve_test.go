package snapserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/agent"
	"github.com/memwho/memwho/internal/privilege/privtest"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
)

func procs(n int) *sample.Snapshot {
	s := &sample.Snapshot{Time: time.Unix(1795000000, 0), MeminfoOK: true}
	for i := range n {
		s.Procs = append(s.Procs, sample.Process{PID: i + 1, Name: fmt.Sprintf("prog%d", i%50),
			Cgroup: fmt.Sprintf("/system.slice/some-long-service-name-%d.service", i), RAM: uint64(i) << 12})
	}
	return s
}

// latestOf serves what *cur holds, under mu.
type holder struct {
	mu    sync.Mutex
	snap  *sample.Snapshot
	taken time.Time
}

func (h *holder) latest() (*sample.Snapshot, time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.snap, h.taken, h.snap != nil
}

func (h *holder) set(s *sample.Snapshot, taken time.Time) {
	h.mu.Lock()
	h.snap, h.taken = s, taken
	h.mu.Unlock()
}

// start serves srv on a socket in a new directory until the test ends
// and returns the socket's path and a function that stops the server
// and returns Serve's result.
func start(t *testing.T, srv *Server) (string, func() error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "memwho.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	var result error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(10 * time.Second):
				result = errors.New("Serve did not return 10 s after its context ended")
			}
		})
		return result
	}
	t.Cleanup(func() { stop() })
	return path, stop
}

func TestServe(t *testing.T) {
	h := &holder{}
	srv := &Server{Latest: h.latest}
	path, stop := start(t, srv)

	var s sample.Snapshot
	if _, err := snapshot.Fetch(path, 30*time.Second, &s); !errors.Is(err, snapshot.ErrUnavailable) {
		t.Errorf("before the first snapshot: %v, want ErrUnavailable", err)
	}

	first, taken := procs(3000), time.Unix(1795000000, 5)
	h.set(first, taken)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			var s sample.Snapshot
			got, err := snapshot.Fetch(path, 30*time.Second, &s)
			if err != nil {
				t.Error(err)
				return
			}
			if !got.Equal(taken) || len(s.Procs) != 3000 || s.Procs[2999] != first.Procs[2999] {
				t.Errorf("taken %v, %d processes", got, len(s.Procs))
			}
		})
	}
	wg.Wait()
	body := srv.body

	// Encoded once per snapshot, not per client.
	if _, err := snapshot.Fetch(path, 30*time.Second, &s); err != nil {
		t.Fatal(err)
	}
	if &srv.body[0] != &body[0] {
		t.Error("the same snapshot was encoded again")
	}
	// A new snapshot, in a new place or the same place refilled (the
	// agent's double buffer: refilled while the other is served, and
	// no client came meanwhile), or a new taken time: encoded again.
	a, b := procs(10), procs(20)
	for i, change := range []func(){
		func() { h.set(a, taken) },
		func() {
			h.set(b, taken)
			a.Time, a.Procs = a.Time.Add(time.Second), a.Procs[:5]
			h.set(a, taken)
		},
		func() { h.set(a, taken.Add(time.Second)) },
	} {
		change()
		got, err := snapshot.Fetch(path, 30*time.Second, &s)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(h.taken) || len(s.Procs) != len(h.snap.Procs) || !s.Time.Equal(h.snap.Time) {
			t.Errorf("change %d: got %d processes at %v taken %v, want %d at %v taken %v",
				i, len(s.Procs), s.Time, got, len(h.snap.Procs), h.snap.Time, h.taken)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket after Serve returned: %v", err)
	}
}

// TestPublish: without Latest, what Publish was given, encoded at once so
// that the caller may refill the snapshot.
func TestPublish(t *testing.T) {
	srv := &Server{}
	path, _ := start(t, srv)
	var s sample.Snapshot
	if _, err := snapshot.Fetch(path, 30*time.Second, &s); !errors.Is(err, snapshot.ErrUnavailable) {
		t.Errorf("before Publish: %v, want ErrUnavailable", err)
	}
	buf, taken := procs(100), time.Unix(1795000000, 9)
	srv.Publish(buf, taken)
	want := procs(100)
	buf.Procs = buf.Procs[:1] // refilled by the next walk
	got, err := snapshot.Fetch(path, 30*time.Second, &s)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(taken) || len(s.Procs) != 100 || s.Procs[99] != want.Procs[99] {
		t.Errorf("taken %v, %d processes", got, len(s.Procs))
	}
	srv.Publish(nil, time.Time{})
	if _, err := snapshot.Fetch(path, 30*time.Second, &s); !errors.Is(err, snapshot.ErrUnavailable) {
		t.Errorf("after Publish(nil): %v, want ErrUnavailable", err)
	}
}

// TestRequestVersion0: a request for no version this server writes gets
// an empty answer.
func TestRequestVersion0(t *testing.T) {
	h := &holder{}
	h.set(procs(3), time.Now())
	path, _ := start(t, &Server{Latest: h.latest})
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte{0})
	if b, err := io.ReadAll(c); err != nil || len(b) != 0 {
		t.Errorf("answer %d bytes, %v; want none", len(b), err)
	}
}

// TestSlowClients: a client that sends no request, or does not read the
// answer, holds its slot no longer than Timeout, and shutting down does
// not wait for it.
func TestSlowClients(t *testing.T) {
	h := &holder{}
	// Larger than the socket buffers, so that writing it blocks.
	h.set(procs(40000), time.Now())
	for _, tc := range []struct {
		name string
		slow func(c net.Conn)
	}{
		{"no-request", func(c net.Conn) {}},
		{"does-not-read", func(c net.Conn) { c.Write([]byte{snapshot.Version}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const timeout = 300 * time.Millisecond
			srv := &Server{Latest: h.latest, MaxConns: 1, Timeout: timeout}
			path, stop := start(t, srv)
			// Encoded before the slow client comes (with -race on a
			// busy machine, encoding alone takes seconds).
			if _, err := snapshot.Fetch(path, 30*time.Second, new(sample.Snapshot)); err != nil {
				t.Fatal(err)
			}
			slow, err := net.Dial("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer slow.Close()
			tc.slow(slow)
			time.Sleep(50 * time.Millisecond) // let the server take it

			// The one slot is taken: the next client waits in the
			// backlog until the slow one is dropped.
			begin := time.Now()
			var s sample.Snapshot
			if _, err := snapshot.Fetch(path, 30*time.Second, &s); err != nil {
				t.Fatal(err)
			}
			if len(s.Procs) != 40000 {
				t.Errorf("%d processes", len(s.Procs))
			}
			if took := time.Since(begin); took > 2*timeout+5*time.Second {
				t.Errorf("the second client waited %v with a per-client timeout of %v", took, timeout)
			}
			// The slow client was cut off: what it reads ends.
			slow.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.Copy(io.Discard, slow); err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("slow client: %v, want the connection closed", err)
			}

			// Shutting down with a slow client connected.
			again, err := net.Dial("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			tc.slow(again)
			time.Sleep(50 * time.Millisecond)
			srv.Timeout = time.Hour // would hold a new connection that long; this one has 300 ms
			begin = time.Now()
			if err := stop(); err != nil {
				t.Error(err)
			}
			if took := time.Since(begin); took > 10*time.Second {
				t.Errorf("Serve took %v to return", took)
			}
		})
	}
}

// TestSocketPermission: a user outside the socket's group is refused
// and Fetch says ErrUnavailable (the caller walks /proc itself); a user
// in the group gets the snapshot. The socket is made as the agent makes
// it (agent.ListenUnix, mode 0660).
func TestSocketPermission(t *testing.T) {
	if os.Getenv(fetchEnv) != "" {
		t.Skip("helper process")
	}
	privtest.RequireRoot(t)
	u := privtest.EnsureUser(t)
	dir := privtest.PublicDir(t)
	exe := privtest.CopyExecutable(t, dir, "snapserve.test")
	h := &holder{}
	h.set(procs(3), time.Now())
	const otherGID = 4244 // a group memwho-test is not in
	for _, tc := range []struct {
		name    string
		sockGID int
		want    string
	}{
		{"in-group", u.GID, "ok 3"},
		{"not-in-group", otherGID, "unavailable EACCES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".sock")
			ln, err := agent.ListenUnix(path, agent.SocketOptions{Mode: 0o660, GID: tc.sockGID})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { Serve(ctx, ln, h.latest); close(done) }()
			defer func() { cancel(); <-done }()

			cmd := exec.Command(exe, "-test.run=^TestFetchHelper$")
			cmd.Env = append(os.Environ(), fetchEnv+"="+path)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
				Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{},
			}}
			out, _ := cmd.CombinedOutput()
			got := ""
			for l := range strings.Lines(string(out)) {
				if v, ok := strings.CutPrefix(strings.TrimSpace(l), "fetch: "); ok {
					got = v
				}
			}
			if got != tc.want {
				t.Errorf("user %s (gid %d) fetching from a 0660 socket of group %d: %q, want %q\n%s",
					u.Name, u.GID, tc.sockGID, got, tc.want, out)
			}
		})
	}
}

const fetchEnv = "MEMWHO_TEST_FETCH"

// TestFetchHelper runs in the child of TestSocketPermission, as the
// other user.
func TestFetchHelper(t *testing.T) {
	path := os.Getenv(fetchEnv)
	if path == "" {
		t.Skip("run by TestSocketPermission")
	}
	var s sample.Snapshot
	_, err := snapshot.Fetch(path, 30*time.Second, &s)
	switch {
	case err == nil:
		fmt.Printf("fetch: ok %d\n", len(s.Procs))
	case errors.Is(err, snapshot.ErrUnavailable) && errors.Is(err, syscall.EACCES):
		fmt.Println("fetch: unavailable EACCES")
	default:
		fmt.Printf("fetch: %q\n", err.Error())
	}
}

// BenchmarkFetch3000 is a client's whole exchange with a server in the
// same process: connect, request, receive, decode 3000 processes.
func BenchmarkFetch3000(b *testing.B) {
	h := &holder{}
	h.set(procs(3000), time.Now())
	path := filepath.Join(b.TempDir(), "memwho.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Serve(ctx, ln, h.latest)
	b.ReportAllocs()
	for b.Loop() {
		var s sample.Snapshot
		if _, err := snapshot.Fetch(path, 30*time.Second, &s); err != nil {
			b.Fatal(err)
		}
	}
}
