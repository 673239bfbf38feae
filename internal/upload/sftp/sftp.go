//go:build !nosftp

// Package sftp uploads a stream to an SFTP server (pkg/sftp over
// golang.org/x/crypto/ssh) so that the file appears under its final name
// complete or not at all.
//
// # What it guarantees
//
//   - The server's host key is checked against known_hosts; an unknown or
//     changed key is an error, never ignored, and nothing is written.
//   - Authentication is by key only: a private key file or ssh-agent.
//   - The data goes to NAME.tmp-XXXXXXXX in the same directory and is
//     renamed to NAME only after the whole stream was written and the file
//     closed (and fsynced when the server supports fsync@openssh.com).
//     With posix-rename@openssh.com the rename replaces NAME atomically.
//   - When the connection drops, the upload starts again from scratch on a
//     new connection, after a backoff, a bounded number of times; the
//     producer is called again, so it must produce the same bytes.
//   - On failure the temporary file is removed (best effort: if the
//     connection is gone, by the next connection).
//
// The package does not create directories on the server and does not read
// files itself: the caller passes the known_hosts callback and the keys.
package sftp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	pkgsftp "github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// Target is where to upload: a parsed sftp:// URL.
type Target struct {
	// User is the login name.
	User string
	// Host is a host name or IP address (without brackets).
	Host string
	// Port is the TCP port (22 by default).
	Port int
	// Path is the file's path on the server: absolute, or relative to the
	// login directory.
	Path string
}

// Addr returns host:port for dialing and for known_hosts.
func (t Target) Addr() string { return net.JoinHostPort(t.Host, strconv.Itoa(t.Port)) }

// String returns the target as an sftp:// URL.
func (t Target) String() string {
	p := t.Path
	if !strings.HasPrefix(p, "/") {
		p = "/~/" + p
	}
	host := t.Host
	if t.Port != 22 {
		host = t.Addr()
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	// Through url.URL, which escapes what the path and the host hold:
	// a path with "?" or "#" (from "%3F", "%23"), or an IPv6 zone
	// ("%25eth0"), printed raw, no longer read back. (FuzzParseURL.)
	return (&url.URL{Scheme: "sftp", User: url.User(t.User), Host: host, Path: p}).String()
}

// ParseURL parses sftp://[user@]host[:port]/path. As in curl, the path
// is absolute; a path starting with /~/ is relative to the login
// directory. defaultUser is used when the URL names no user.
func ParseURL(s, defaultUser string) (Target, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Target{}, err
	}
	if u.Scheme != "sftp" {
		return Target{}, fmt.Errorf("%q: scheme must be sftp://", s)
	}
	if u.Opaque != "" || u.Host == "" {
		return Target{}, fmt.Errorf("%q: want sftp://user@host[:port]/path", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return Target{}, fmt.Errorf("%q: query and fragment are not supported", s)
	}
	t := Target{User: defaultUser, Host: u.Hostname(), Port: 22, Path: u.Path}
	if t.Host == "" {
		// "sftp://u@:22/x" has a Host (":22") but no host name.
		// (FuzzParseURL.)
		return Target{}, fmt.Errorf("%q: no host name", s)
	}
	if strings.Contains(t.Host, ":") && !strings.HasPrefix(u.Host, "[") {
		// url.Parse checks an address in brackets, but took
		// "sftp://::/0" for host ":" and "sftp://a:b:22/x" for host
		// "a:b", port 22. (FuzzParseURL.)
		return Target{}, fmt.Errorf("%q: an IPv6 address goes in brackets", s)
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			return Target{}, fmt.Errorf("%q: passwords are not supported: use a key (--identity or ssh-agent)", s)
		}
		t.User = u.User.Username()
	}
	if t.User == "" {
		return Target{}, fmt.Errorf("%q: no user name", s)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Target{}, fmt.Errorf("%q: bad port %q", s, p)
		}
		t.Port = n
	}
	switch {
	case strings.HasPrefix(t.Path, "/~/"):
		t.Path = t.Path[len("/~/"):]
	case t.Path == "" || t.Path == "/":
		return Target{}, fmt.Errorf("%q: no file name", s)
	}
	if t.Path == "" || strings.HasSuffix(t.Path, "/") {
		return Target{}, fmt.Errorf("%q: the path must name a file, not a directory", s)
	}
	return t, nil
}

// Config says how to connect and how hard to try.
type Config struct {
	Target Target
	// HostKeyCallback checks the server's host key; see KnownHosts. It
	// is required.
	HostKeyCallback ssh.HostKeyCallback
	// HostKeyAlgorithms, when set, are the host key algorithms to accept,
	// in order of preference (see KnownHosts).
	HostKeyAlgorithms []string
	// Auth lists the authentication methods to try (see Identity and
	// Agent).
	Auth []ssh.AuthMethod
	// Retries is how many times a failed upload is started again after a
	// dropped connection; 0 means never.
	Retries int
	// Backoff is the wait before the first retry; it doubles with each
	// retry, up to a minute. 0 means one second.
	Backoff time.Duration
	// Timeout bounds connecting and the SSH handshake; 0 means 30
	// seconds. A connection that stops answering keepalives for this
	// long during the transfer is considered dropped.
	Timeout time.Duration
	// Logf, when set, is told about each failed attempt.
	Logf func(format string, args ...any)
}

// Result describes a finished upload.
type Result struct {
	// Bytes is the size of the uploaded file in bytes.
	Bytes int64
	// Attempts is how many connections it took (1 without retries).
	Attempts int
}

// Producer writes the file's content to w. It is called once per attempt
// and must write the same bytes each time. It must return when a write to
// w fails.
type Producer func(ctx context.Context, w io.Writer) error

// Error is a failed upload. Transient errors (the connection dropped) have
// been retried Config.Retries times; others are not retried.
type Error struct {
	Op        string // what failed: "connect", "create", "write", ...
	Transient bool   // the connection dropped or could not be made
	Err       error
}

func (e *Error) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Upload runs produce and writes its output to cfg.Target. The file
// appears under its final name only when complete.
func Upload(ctx context.Context, cfg Config, produce Producer) (Result, error) {
	if cfg.HostKeyCallback == nil {
		return Result{}, errors.New("sftp upload: no host key callback: host keys must be checked")
	}
	if len(cfg.Auth) == 0 {
		return Result{}, errors.New("sftp upload: no authentication method")
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	u := &uploader{cfg: cfg}
	var res Result
	wait := cfg.Backoff
	for attempt := 1; ; attempt++ {
		res.Attempts = attempt
		n, err := u.attempt(ctx, produce)
		if err == nil {
			res.Bytes = n
			return res, nil
		}
		var ue *Error
		retry := errors.As(err, &ue) && ue.Transient && attempt <= cfg.Retries && ctx.Err() == nil
		if !retry {
			u.removeStale(ctx)
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, err
		}
		if cfg.Logf != nil {
			cfg.Logf("upload attempt %d of %d failed: %v; retrying in %v", attempt, cfg.Retries+1, err, wait)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			u.removeStale(ctx)
			return res, ctx.Err()
		}
		wait = min(2*wait, time.Minute)
	}
}

type uploader struct {
	cfg Config
	// stale lists temporary files of failed attempts that could not be
	// removed because their connection was gone.
	stale []string
}

// session is one SSH connection with an SFTP client on it.
type session struct {
	conn *ssh.Client
	c    *pkgsftp.Client
	dead chan struct{} // closed when the SSH connection has ended
	stop func()
}

func (s *session) alive() bool {
	select {
	case <-s.dead:
		return false
	default:
		return true
	}
}

func (s *session) close() { s.stop() }

// dial connects, checks the host key, logs in and starts SFTP.
func (u *uploader) dial(ctx context.Context) (*session, error) {
	var hostKeyErr error
	cfg := &ssh.ClientConfig{
		User: u.cfg.Target.User,
		Auth: u.cfg.Auth,
		HostKeyCallback: func(host string, remote net.Addr, key ssh.PublicKey) error {
			hostKeyErr = u.cfg.HostKeyCallback(host, remote, key)
			return hostKeyErr
		},
		HostKeyAlgorithms: u.cfg.HostKeyAlgorithms,
		Timeout:           u.cfg.Timeout,
	}
	addr := u.cfg.Target.Addr()
	d := net.Dialer{Timeout: u.cfg.Timeout, KeepAlive: 15 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &Error{Op: "connect", Transient: true, Err: err}
	}
	// The handshake has no context: bound it with a deadline.
	nc.SetDeadline(time.Now().Add(u.cfg.Timeout))
	cc, chans, reqs, err := ssh.NewClientConn(nc, addr, cfg)
	if err != nil {
		nc.Close()
		switch {
		case hostKeyErr != nil:
			return nil, &Error{Op: "check host key", Err: hostKeyErr}
		case strings.Contains(err.Error(), "unable to authenticate"):
			return nil, &Error{Op: "log in as " + u.cfg.Target.User, Err: err}
		}
		return nil, &Error{Op: "ssh handshake", Transient: transient(err), Err: err}
	}
	nc.SetDeadline(time.Time{})
	conn := ssh.NewClient(cc, chans, reqs)
	s := &session{conn: conn, dead: make(chan struct{})}
	go func() {
		conn.Wait()
		close(s.dead)
	}()
	var once sync.Once
	quit := make(chan struct{})
	s.stop = func() {
		once.Do(func() {
			close(quit)
			if s.c != nil {
				s.c.Close()
			}
			conn.Close()
		})
	}
	// Close the connection when the context ends, and when keepalives go
	// unanswered (a network that drops packets gives no error otherwise).
	go func() {
		tick := time.NewTicker(u.cfg.Timeout / 2)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				conn.Close()
				return
			case <-quit:
				return
			case <-s.dead:
				return
			case <-tick.C:
				if !keepalive(conn, u.cfg.Timeout) {
					conn.Close()
					return
				}
			}
		}
	}()
	s.c, err = pkgsftp.NewClient(conn, pkgsftp.UseConcurrentWrites(true))
	if err != nil {
		s.stop()
		return nil, &Error{Op: "start sftp", Transient: !s.alive() || transient(err), Err: err}
	}
	return s, nil
}

// keepalive sends an OpenSSH keepalive request and waits up to timeout
// for the answer.
func keepalive(conn *ssh.Client, timeout time.Duration) bool {
	done := make(chan error, 1)
	go func() {
		_, _, err := conn.SendRequest("keepalive@openssh.com", true, nil)
		done <- err
	}()
	select {
	case err := <-done:
		return err == nil
	case <-time.After(timeout):
		return false
	}
}

// attempt makes one upload on a new connection.
func (u *uploader) attempt(ctx context.Context, produce Producer) (int64, error) {
	s, err := u.dial(ctx)
	if err != nil {
		return 0, err
	}
	defer s.close()
	u.removeStaleOn(s)

	final := u.cfg.Target.Path
	tmp, err := tempName(final)
	if err != nil {
		return 0, err
	}
	fail := func(op string, err error) error {
		// Best effort: the error we report is the one that matters. When
		// the connection is gone the removal fails (the SFTP client may
		// see that before the SSH connection is marked dead): the next
		// connection removes the file.
		if rerr := s.c.Remove(tmp); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			u.stale = append(u.stale, tmp)
		}
		return &Error{Op: op, Transient: !s.alive() || transient(err), Err: err}
	}

	f, err := s.c.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return 0, &Error{Op: "create " + tmp, Transient: !s.alive() || transient(err), Err: err}
	}
	// An export names every process of every user: 0600, as -o makes
	// it. SFTP's open takes the server's default mode (0644 after a
	// usual umask), so the mode is set before any byte is written.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return 0, fail("chmod "+tmp, err)
	}

	// The producer writes into a pipe that the SFTP client reads with
	// many writes in flight (UseConcurrentWrites): memory stays bounded
	// by the pipe (no buffer) and the client's window of requests.
	pr, pw := io.Pipe()
	out := &pipeWriter{pw: pw}
	perr := make(chan error, 1)
	go func() {
		err := produce(ctx, out)
		pw.CloseWithError(err) // nil: EOF for the reader
		perr <- err
	}()
	n, werr := f.ReadFromWithConcurrency(pr, 0)
	// Unblock the producer if the upload stopped first.
	pr.CloseWithError(errUploadStopped(werr))
	prodErr := <-perr

	if prodErr != nil && out.err == nil {
		// The producer failed on its own (database, context), not
		// because the upload did: report its error.
		f.Close()
		return 0, fail("produce", prodErr)
	}
	if werr != nil {
		f.Close()
		return 0, fail("write "+tmp, werr)
	}
	if _, ok := s.c.HasExtension("fsync@openssh.com"); ok {
		if err := f.Sync(); err != nil {
			f.Close()
			return 0, fail("fsync "+tmp, err)
		}
	}
	if err := f.Close(); err != nil {
		return 0, fail("close "+tmp, err)
	}
	if err := rename(s.c, tmp, final); err != nil {
		return 0, fail("rename "+tmp, err)
	}
	return n, nil
}

// pipeWriter remembers whether a write failed: then the upload side
// stopped first, and the producer's error is only a consequence.
type pipeWriter struct {
	pw  *io.PipeWriter
	err error
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	n, err := w.pw.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

// errUploadStopped is what the producer's writes return after the upload
// side stopped.
func errUploadStopped(err error) error {
	if err == nil {
		return io.ErrClosedPipe
	}
	return err
}

// rename moves tmp to final, replacing final. posix-rename@openssh.com
// does it atomically; plain SFTP rename fails when final exists, so
// without the extension final is removed first (a short window without
// the old file, never a partial new one).
func rename(c *pkgsftp.Client, tmp, final string) error {
	if _, ok := c.HasExtension("posix-rename@openssh.com"); ok {
		return c.PosixRename(tmp, final)
	}
	if err := c.Rename(tmp, final); err == nil {
		return nil
	}
	if err := c.Remove(final); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return c.Rename(tmp, final)
}

// tempName returns final's directory/base.tmp-XXXXXXXX with random hex.
func tempName(final string) (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	dir, base := path.Split(final)
	return dir + base + ".tmp-" + hex.EncodeToString(b[:]), nil
}

// removeStaleOn removes the temporary files of earlier attempts; those it
// cannot remove stay on the list for the next connection.
func (u *uploader) removeStaleOn(s *session) {
	kept := u.stale[:0]
	for _, p := range u.stale {
		if err := s.c.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			kept = append(kept, p)
		}
	}
	u.stale = kept
}

// removeStale makes one last connection, if needed, to remove the
// temporary files of failed attempts. It runs even when ctx was canceled
// (an interrupted upload should not leave its temporary file), for at
// most staleTimeout. It gives up quietly: the upload has already failed
// and that error is the one to report.
func (u *uploader) removeStale(ctx context.Context) {
	if len(u.stale) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(u.cfg.Timeout, staleTimeout))
	defer cancel()
	s, err := u.dial(ctx)
	if err != nil {
		return
	}
	defer s.close()
	u.removeStaleOn(s)
}

// staleTimeout bounds the clean-up connection after a failed upload.
const staleTimeout = 10 * time.Second

// transient reports whether err means the connection dropped or could not
// be made, so that a new connection may succeed.
func transient(err error) bool {
	var se *pkgsftp.StatusError
	if errors.As(err, &se) {
		return false
	}
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, pkgsftp.ErrSSHFxConnectionLost), errors.Is(err, pkgsftp.ErrSSHFxNoConnection),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH):
		return true
	case errors.As(err, &ne):
		return true
	}
	return false
}
