package snapshot

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

var (
	// ErrUnavailable is wrapped by Fetch's errors when there is no
	// snapshot to be had and nothing to report: no socket at the path,
	// nobody listening, connecting not permitted (not in the socket's
	// group), or an agent that has none yet. The caller walks /proc
	// itself without a word.
	ErrUnavailable = errors.New("no agent snapshot")
	// ErrTimeout is wrapped by Fetch's errors when the agent accepted
	// but did not answer within the timeout: worth a warning, since
	// every run pays that wait.
	ErrTimeout = errors.New("agent did not answer in time")
)

// initialBuf is the first read buffer, in bytes: about 2000 processes'
// worth, so that most answers take one buffer.
const initialBuf = 64 << 10

// Fetch asks the agent listening on the unix socket at path for its
// latest snapshot, decodes it into s (as Decode) and returns when its
// figures were taken: the agent's Meta.Taken, or s.Time when the agent
// gave none. The whole exchange (connect, request, answer) takes at most
// timeout.
//
// Its errors wrap ErrUnavailable (fall back silently), ErrTimeout,
// ErrMalformed or ErrVersion (the answer, reported), or, for anything
// else, the system call's errno.
//
// The protocol (docs/snapshot.md): the client connects and writes one
// byte, the highest format version it reads (Version); the agent answers
// with one message in a version no higher, or with nothing when it has
// no snapshot, and closes the connection.
//
// Fetch uses package syscall rather than net so that the command it is
// linked into stays small and starts quickly.
func Fetch(path string, timeout time.Duration, s *sample.Snapshot) (time.Time, error) {
	b, err := fetch(path, time.Now().Add(timeout))
	if err != nil {
		return time.Time{}, fmt.Errorf("agent socket %s: %w", path, err)
	}
	m, err := DecodeMeta(b, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("agent socket %s: %w", path, err)
	}
	if m.Taken.IsZero() {
		return s.Time, nil
	}
	return m.Taken, nil
}

// fetch returns the agent's whole answer.
func fetch(path string, deadline time.Time) ([]byte, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	defer syscall.Close(fd)

	for {
		// connect(2) on a unix socket waits under SO_SNDTIMEO.
		if err := setTimeout(fd, syscall.SO_SNDTIMEO, deadline); err != nil {
			return nil, fmt.Errorf("%w: connect", err)
		}
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err != syscall.EINTR {
			break
		}
	}
	switch err {
	case nil, syscall.EISCONN: // EISCONN: an interrupted connect went through
	case syscall.ENOENT, syscall.ENOTDIR, syscall.ECONNREFUSED, syscall.EACCES, syscall.EPERM,
		syscall.ELOOP, syscall.ENAMETOOLONG, syscall.EINVAL: // EINVAL: a path too long for sockaddr_un
		return nil, fmt.Errorf("%w: connect: %w", ErrUnavailable, err)
	case syscall.EAGAIN: // the listen backlog stayed full
		return nil, fmt.Errorf("%w: connect", ErrTimeout)
	default:
		return nil, fmt.Errorf("connect: %w", err)
	}

	req := [1]byte{Version}
	for {
		if err := setTimeout(fd, syscall.SO_SNDTIMEO, deadline); err != nil {
			return nil, fmt.Errorf("%w: sending the request", err)
		}
		// MSG_NOSIGNAL: an agent that hung up gives EPIPE, not SIGPIPE.
		err = syscall.Sendto(fd, req[:], syscall.MSG_NOSIGNAL, nil)
		if err != syscall.EINTR {
			break
		}
	}
	switch err {
	case nil:
	case syscall.EPIPE, syscall.ECONNRESET:
		return nil, fmt.Errorf("%w: the agent hung up: %w", ErrUnavailable, err)
	case syscall.EAGAIN:
		return nil, fmt.Errorf("%w: sending the request", ErrTimeout)
	default:
		return nil, fmt.Errorf("send: %w", err)
	}

	buf := make([]byte, 0, initialBuf)
	want := -1 // the message's length, once its header has come
	for {
		if len(buf) == cap(buf) {
			// Grow with what has come, not with what the header
			// claims: a small answer cannot make a large buffer.
			// One byte past the message catches trailing bytes.
			limit := MaxSize + 1
			if want >= 0 {
				limit = want + 1
			}
			nb := make([]byte, len(buf), min(2*cap(buf), limit))
			copy(nb, buf)
			buf = nb
		}
		if err := setTimeout(fd, syscall.SO_RCVTIMEO, deadline); err != nil {
			return nil, fmt.Errorf("%w: %d bytes received", err, len(buf))
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch err {
		case nil:
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return nil, fmt.Errorf("%w: %d bytes received", ErrTimeout, len(buf))
		case syscall.ECONNRESET:
			if len(buf) == 0 {
				return nil, fmt.Errorf("%w: the agent hung up: %w", ErrUnavailable, err)
			}
			return nil, fmt.Errorf("%w: cut short after %d bytes: %w", ErrMalformed, len(buf), err)
		default:
			return nil, fmt.Errorf("read: %w", err)
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
		if want < 0 && len(buf) >= headerLen {
			// Refuse what is no snapshot (or too large) now rather
			// than after reading all of it.
			n, err := checkHeader(buf)
			if err != nil {
				return nil, err
			}
			want = headerLen + n
		}
		if want >= 0 && len(buf) > want {
			return nil, malformed("bytes after the end of the snapshot")
		}
	}
	if len(buf) == 0 {
		return nil, fmt.Errorf("%w: the agent has none yet", ErrUnavailable)
	}
	return buf, nil
}

// setTimeout bounds the next blocking call on fd by what is left until
// deadline; opt is SO_SNDTIMEO or SO_RCVTIMEO.
func setTimeout(fd, opt int, deadline time.Time) error {
	left := time.Until(deadline)
	if left <= 0 {
		return ErrTimeout
	}
	// A zero timeval means no timeout at all.
	tv := syscall.NsecToTimeval(max(left.Nanoseconds(), int64(time.Microsecond)))
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, opt, &tv); err != nil {
		return fmt.Errorf("setsockopt: %w", err)
	}
	return nil
}
