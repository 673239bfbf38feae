// Package pgtest starts a real PostgreSQL server for tests: Debian's
// postgresql package (/usr/lib/postgresql/VERSION/bin/initdb and
// postgres), a fresh cluster in a temporary directory, listening on
// 127.0.0.1 on a free port, with trust authentication for the user
// "memwho". The server is stopped and its directory removed when the test
// ends.
//
// PostgreSQL refuses to run as root. When the test runs as root, the
// cluster belongs to the unprivileged "postgres" system user that the
// package creates, and initdb and postgres run with its identity
// (SysProcAttr.Credential). Tests skip, with the reason, when the binaries
// are missing or no unprivileged identity is available.
//
// It does not mock anything: the point is to test against the server the
// fleet runs. Its own behaviour (start, stop, restart on the same port
// and data) is exercised by the store/postgres tests and cmd/memwho's
// TestRecordPostgresOutage rather than by a test of its own, which would
// cost another cluster start.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running (or stopped) PostgreSQL cluster.
type Server struct {
	// Port is the TCP port on 127.0.0.1; it stays the same across
	// Stop and Start.
	Port int

	t       testing.TB
	bin     string
	dir     string // owned by the server's user
	data    string
	cred    *syscall.Credential
	cmd     *exec.Cmd
	exited  chan struct{}
	logFile string
}

// Binaries returns the directory of the newest installed PostgreSQL's
// programs, or an error saying why there is none.
func Binaries() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// Newest major version first: "9.6" < "15" numerically.
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(a)), 64)
		vb, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(b)), 64)
		switch {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return 0
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				return d, nil
			}
		}
	}
	return "", errors.New("PostgreSQL server not installed (/usr/lib/postgresql/*/bin/postgres; Debian package postgresql)")
}

// credential returns the identity to run the server with: nil (this
// process's) unless we are root, the "postgres" user's otherwise.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root and no unprivileged \"postgres\" user to run the server as: %v", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil || uid == 0 {
		return nil, fmt.Errorf("unusable \"postgres\" user (uid %s, gid %s)", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

var clusters atomic.Int64

// Start initialises a cluster and starts its server, or skips the test
// saying why it cannot. The server is stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binaries()
	if err != nil {
		t.Skip(err)
	}
	cred, err := credential()
	if err != nil {
		t.Skip(err)
	}
	// Not t.TempDir: its parents are private to this user, and the
	// server runs as another.
	dir, err := os.MkdirTemp("", fmt.Sprintf("memwho-pgtest-%d-", clusters.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Skipf("cannot give the cluster directory to the postgres user: %v", err)
		}
	}
	s := &Server{t: t, bin: bin, dir: dir, data: filepath.Join(dir, "data"), cred: cred, logFile: filepath.Join(dir, "server.log")}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", s.data, "-U", "memwho", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	t.Cleanup(s.kill)
	for attempt := 0; ; attempt++ {
		if s.Port, err = freePort(); err != nil {
			t.Fatal(err)
		}
		err = s.start()
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatalf("start postgres: %v\n%s", err, s.Log())
		}
	}
	return s
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs postgres and waits until it accepts connections.
func (s *Server) start() error {
	log, err := os.OpenFile(s.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	// fsync=off: tests need speed, not durability against power loss.
	// The socket directory is the cluster's; TCP is what clients use.
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.data, "-p", strconv.Itoa(s.Port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+s.dir,
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=50")
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func() { cmd.Wait(); close(s.exited) }()

	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		select {
		case <-s.exited:
			s.cmd = nil
			return fmt.Errorf("postgres exited during start-up: %v", cmd.ProcessState)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("postgres not ready after 60s: %v", err)
		}
	}
}

// URL returns a connection URL for database db on this server.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://memwho@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

var databases atomic.Int64

// CreateDB creates a new, empty database and returns its URL.
func (s *Server) CreateDB(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test%d", databases.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatalf("connect to postgres: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	return s.URL(name)
}

// Stop shuts the server down (fast shutdown: connections are cut) and
// waits for it; Start brings it back on the same port and data.
func (s *Server) Stop() {
	s.t.Helper()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.kill()
	}
	s.cmd = nil
}

// Start restarts a stopped server.
func (s *Server) Start() {
	s.t.Helper()
	if s.cmd != nil {
		return
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("restart postgres: %v\n%s", err, s.Log())
	}
}

// kill stops the server at once, with every backend (its process group).
func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGQUIT)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	s.cmd = nil
}

// Log returns the server's log so far (for failure messages).
func (s *Server) Log() []byte {
	b, _ := os.ReadFile(s.logFile)
	if len(b) > 8<<10 {
		b = append([]byte("...\n"), b[len(b)-8<<10:]...)
	}
	return bytes.TrimSpace(b)
}
