// Package sshtest starts a real OpenSSH server for tests: Debian's
// /usr/sbin/sshd (package openssh-server) on 127.0.0.1 at a free port,
// with a generated host key, one authorized user key, its own
// configuration and the in-process SFTP server ("Subsystem sftp
// internal-sftp"), all under t.TempDir(). It is stopped in t.Cleanup.
//
// As root, sshd switches to the logged-in user and uses the /run/sshd
// privilege-separation directory. As a normal user it runs unprivileged,
// as OpenSSH's own regression tests run it: only that user can log in,
// which is the only user the tests log in as. Start skips the test with
// the reason when /usr/sbin/sshd is missing.
//
// [Proxy] sits between a client and the server and can cut a connection
// after a number of bytes, to test what happens when a connection drops in
// the middle of a transfer.
//
// It is a test helper: nothing in the memwho binary imports it.
package sshtest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHD is the OpenSSH server binary. sshd re-executes itself for each
// connection, so it must be an absolute path.
const SSHD = "/usr/sbin/sshd"

// Server is a running sshd.
type Server struct {
	// Addr is the listening address, 127.0.0.1:Port.
	Addr string
	// Port is the TCP port.
	Port int
	// User is the account clients log in as: the user running the test.
	User string
	// Dir is an empty directory that User may write to, for uploads.
	Dir string
	// IdentityFile is an unencrypted OpenSSH private key authorized to
	// log in as User.
	IdentityFile string
	// Signer is IdentityFile's key.
	Signer ssh.Signer
	// HostKey is the server's ed25519 host key: the one OpenSSH's own
	// client prefers and records in known_hosts.
	HostKey ssh.PublicKey
	// HostKeyECDSA is the server's second host key (ECDSA P-256), which
	// golang.org/x/crypto/ssh prefers by default: a client that does not
	// ask for the algorithms known_hosts lists gets this one and fails.
	HostKeyECDSA ssh.PublicKey
	// KnownHostsFile names HostKey (only) for Addr, in known_hosts
	// format, as `ssh` would have recorded it.
	KnownHostsFile string

	t   testing.TB
	dir string
	cmd *exec.Cmd
	log *lockedBuffer
	// deny: the SFTP requests the server refuses (StartDenying).
	deny string
}

// Start starts sshd and waits until it accepts connections. It skips the
// test when sshd cannot be run here.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartDenying(t, "")
}

// StartDenying is Start with an SFTP server that refuses the requests
// named (internal-sftp -P, a comma-separated list such as
// "fsetstat,setstat"), as a locked-down server may.
func StartDenying(t testing.TB, denied string) *Server {
	t.Helper()
	if _, err := os.Stat(SSHD); err != nil {
		t.Skipf("sshtest: %s not found (install openssh-server): %v", SSHD, err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatalf("sshtest: current user: %v", err)
	}
	// The privilege-separation directory: root-owned, not writable by
	// others. Debian's init script creates it at boot; a container may
	// not have it. Unprivileged, sshd does not use it.
	if os.Geteuid() == 0 {
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Skipf("sshtest: cannot create /run/sshd: %v", err)
		}
	}

	dir := t.TempDir()
	s := &Server{
		User: u.Username,
		Dir:  filepath.Join(dir, "upload"),
		t:    t,
		dir:  dir,
		log:  &lockedBuffer{},
		deny: denied,
	}
	if err := os.Mkdir(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hostSigner, hostFile := writeKey(t, dir, "host_ed25519", newEd25519)
	s.HostKey = hostSigner.PublicKey()
	ecdsaSigner, ecdsaFile := writeKey(t, dir, "host_ecdsa", newECDSA)
	s.HostKeyECDSA = ecdsaSigner.PublicKey()
	s.Signer, s.IdentityFile = writeKey(t, dir, "id_ed25519", newEd25519)
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, ssh.MarshalAuthorizedKey(s.Signer.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}

	// A free port can be taken between our probe and sshd's bind; try a
	// few.
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatalf("sshtest: %v", err)
		}
		s.Port = port
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		cfg := filepath.Join(dir, "sshd_config")
		if err := os.WriteFile(cfg, []byte(s.config([]string{hostFile, ecdsaFile}, authorized)), 0o600); err != nil {
			t.Fatal(err)
		}
		if lastErr = s.start(cfg); lastErr == nil {
			break
		}
		if !strings.Contains(s.log.String(), "Address already in use") {
			break
		}
	}
	if lastErr != nil {
		if strings.Contains(s.log.String(), "Privilege separation user") {
			t.Skipf("sshtest: sshd cannot run here: %v\n%s", lastErr, s.log.String())
		}
		t.Fatalf("sshtest: %v\nsshd log:\n%s", lastErr, s.log.String())
	}
	s.KnownHostsFile = s.WriteKnownHosts(t, s.Addr, s.HostKey)
	return s
}

func (s *Server) config(hostKeys []string, authorized string) string {
	return strings.Join([]string{
		"ListenAddress " + s.Addr,
		"HostKey " + hostKeys[0],
		"HostKey " + hostKeys[1],
		"PidFile " + filepath.Join(s.dir, "sshd.pid"),
		"AuthorizedKeysFile " + authorized,
		"AllowUsers " + s.User,
		"PermitRootLogin prohibit-password",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"StrictModes no",
		"UsePAM no",
		"UseDNS no",
		"PrintMotd no",
		"MaxStartups 100",
		"LogLevel VERBOSE",
		"Subsystem sftp internal-sftp" + s.denyFlag(),
		"",
	}, "\n")
}

func (s *Server) denyFlag() string {
	if s.deny == "" {
		return ""
	}
	return " -P " + s.deny
}

// start runs sshd and waits until it greets a client.
func (s *Server) start(cfg string) error {
	cmd := exec.Command(SSHD, "-D", "-e", "-f", cfg)
	cmd.Stdout = s.log
	cmd.Stderr = s.log
	// Its own process group, so that cleanup also ends the per-connection
	// children it forks.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", SSHD, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s.cmd = cmd
	s.t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if s.t.Failed() {
			s.t.Logf("sshd log:\n%s", s.log.String())
		}
	})

	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			return fmt.Errorf("sshd exited: %v", err)
		default:
		}
		if banner(s.Addr) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("sshd did not accept connections within 15s")
}

// banner reports whether an SSH server answers at addr.
func banner(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	b := make([]byte, 4)
	n, _ := c.Read(b)
	return string(b[:n]) == "SSH-"
}

// Log returns what sshd has logged so far.
func (s *Server) Log() string { return s.log.String() }

// WriteKnownHosts writes a known_hosts file under the test's temporary
// directory that names key for addr ("host:port"), and returns its path.
// Use it to name the server at a Proxy's address, or with another key to
// test a host key mismatch.
func (s *Server) WriteKnownHosts(t testing.TB, addr string, key ssh.PublicKey) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "known_hosts")
	if err != nil {
		t.Fatal(err)
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, key)
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// NewKey returns a fresh ed25519 key, for a wrong host key or an
// unauthorized client.
func NewKey(t testing.TB) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newEd25519() (crypto.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	return priv, err
}

func newECDSA() (crypto.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// writeKey writes a new private key in OpenSSH format to dir/name (mode
// 0600, as sshd and ssh require).
func writeKey(t testing.TB, dir, name string, gen func() (crypto.PrivateKey, error)) (ssh.Signer, string) {
	t.Helper()
	priv, err := gen()
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "memwho-test")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return signer, path
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer collects sshd's log from its output goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
