package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/proc/proctest"
)

// TestMaxConnectionsEnv: MEMWHO_MAX_CONNECTIONS out of range, or
// not a number, is refused (exit 2) before any socket exists; a good one
// is the limit the socket keeps, and the command line wins over it.
func TestMaxConnectionsEnv(t *testing.T) {
	root := proctest.Root(t, "../../internal/proc/testdata/basic.txtar")
	sock := filepath.Join(t.TempDir(), "run", "m.sock")
	for _, tc := range []struct{ env, want string }{
		{"0", "--max-connections: 0 is not from 1 to 4096"},
		{"-1", "--max-connections: -1 is not from 1 to 4096"},
		{"4097", "--max-connections: 4097 is not from 1 to 4096"},
		{"lots", `MEMWHO_MAX_CONNECTIONS="lots": `},
		{"1e3", `MEMWHO_MAX_CONNECTIONS="1e3": `},
		{" 64", `MEMWHO_MAX_CONNECTIONS=" 64": `},
		{"99999999999999999999", `MEMWHO_MAX_CONNECTIONS="99999999999999999999": `},
	} {
		t.Setenv("MEMWHO_MAX_CONNECTIONS", tc.env)
		var stderr syncBuffer
		code := run(context.Background(), []string{"serve", "--proc", root, "--conns=false", "--socket", sock}, io.Discard, &stderr)
		if code != cli.ExitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("MEMWHO_MAX_CONNECTIONS=%q: exit %d, %q; want %d, %q", tc.env, code, stderr.String(), cli.ExitUsage, tc.want)
		}
		if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("MEMWHO_MAX_CONNECTIONS=%q: the socket exists (%v)", tc.env, err)
		}
	}

	t.Setenv("MEMWHO_MAX_CONNECTIONS", "2")
	for _, tc := range []struct {
		args []string
		want int
	}{{nil, 2}, {[]string{"--max-connections", "3"}, 3}} {
		if held := heldBy(t, root, sock, tc.args); held != tc.want {
			t.Errorf("MEMWHO_MAX_CONNECTIONS=2 %v: %d connections held, want %d", tc.args, held, tc.want)
		}
	}
}

// heldBy runs serve on the socket with args, opens six connections that
// each ask once and stay, and returns how many the agent kept open.
func heldBy(t *testing.T, root, sock string, args []string) int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--proc", root, "--conns=false", "--socket", sock, "--snapshot-socket", ""}, args...), io.Discard, &stderr)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not stop")
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "serving metrics on unix socket"); {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// ask dials and asks once. Between the server's last write of an
	// answer and its marking that connection idle, the connection still
	// counts as served: a newcomer of the same user arriving then, with
	// every slot served, is closed at once (blocksOthers), as a client
	// holding every slot is meant to be. This client dials right after
	// reading an answer, so it can land in that window (once in a CI
	// run, under the whole suite's load): it asks again, as Prometheus
	// does when a connection is closed under it.
	ask := func() (net.Conn, error) {
		c, err := net.Dial("unix", sock)
		if err != nil {
			return nil, err
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			c.Close()
			return nil, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return c, nil
	}
	var conns []net.Conn
	for range 6 {
		c, err := ask()
		for try := 0; err != nil && try < 5; try++ {
			time.Sleep(10 * time.Millisecond)
			c, err = ask()
		}
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	held := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			held++
		}
	}
	return held
}
