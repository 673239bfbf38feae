package sshtest

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func dial(t *testing.T, s *Server, addr, knownHosts string) (*ssh.Client, error) {
	t.Helper()
	cb, err := knownhosts.New(knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	return ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User:            s.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(s.Signer)},
		HostKeyCallback: cb,
		// known_hosts lists the ed25519 key only; see TestHostKeyAlgorithms.
		HostKeyAlgorithms: []string{ssh.KeyAlgoED25519},
	})
}

// TestServer: the key logs in, the host key matches known_hosts, and the
// session runs commands as the test's user.
func TestServer(t *testing.T) {
	s := Start(t)
	c, err := dial(t, s, s.Addr, s.KnownHostsFile)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	// sftp-server is what the "Subsystem sftp" line starts; a request for
	// it is the same one an SFTP client sends.
	if err := sess.RequestSubsystem("sftp"); err != nil {
		t.Fatalf("sftp subsystem: %v", err)
	}

	t.Run("wrong host key", func(t *testing.T) {
		kh := s.WriteKnownHosts(t, s.Addr, NewKey(t).PublicKey())
		_, err := dial(t, s, s.Addr, kh)
		var ke *knownhosts.KeyError
		if !errors.As(err, &ke) || len(ke.Want) == 0 {
			t.Errorf("dial with a wrong known host key: err = %v, want a knownhosts.KeyError with Want", err)
		}
	})
	t.Run("unknown key", func(t *testing.T) {
		cfg := &ssh.ClientConfig{
			User:            s.User,
			Auth:            []ssh.AuthMethod{ssh.PublicKeys(NewKey(t))},
			HostKeyCallback: ssh.FixedHostKey(s.HostKey),
		}
		if c, err := ssh.Dial("tcp", s.Addr, cfg); err == nil {
			c.Close()
			t.Error("an unauthorized key logged in")
		}
	})
}

// TestHostKeyAlgorithms: the server has two host keys; x/crypto/ssh asks
// for ECDSA first, so a client that does not restrict the algorithms to
// those known_hosts lists fails against a known host. (upload/sftp's
// KnownHosts returns the list.)
func TestHostKeyAlgorithms(t *testing.T) {
	s := Start(t)
	cb, err := knownhosts.New(s.KnownHostsFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ClientConfig{User: s.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(s.Signer)}, HostKeyCallback: cb}
	c, err := ssh.Dial("tcp", s.Addr, cfg)
	if err == nil {
		c.Close()
		t.Fatal("the default algorithms got the ed25519 key: the server's ECDSA key is not in use")
	}
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) || len(ke.Want) == 0 {
		t.Errorf("dial with default algorithms: %v, want a knownhosts mismatch", err)
	}
	cfg.HostKeyCallback = ssh.FixedHostKey(s.HostKeyECDSA)
	if c, err := ssh.Dial("tcp", s.Addr, cfg); err != nil {
		t.Errorf("dial expecting the ECDSA key: %v", err)
	} else {
		c.Close()
	}
}

// TestProxyCut: a connection through the proxy is cut after the given
// number of bytes; the next one is not.
func TestProxyCut(t *testing.T) {
	s := Start(t)
	p := NewProxy(t, s.Addr, func(n int) int64 {
		if n == 0 {
			return 64 << 10
		}
		return 0
	})
	kh := s.WriteKnownHosts(t, p.Addr, s.HostKey)

	c, err := dial(t, s, p.Addr, kh)
	if err != nil {
		t.Fatalf("dial through proxy: %v", err)
	}
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	in, err := sess.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(s.Dir, "cat")
	if err := sess.Start("cat > " + out); err != nil {
		t.Fatal(err)
	}
	// 1 MiB cannot pass a 64 KiB cut.
	buf := make([]byte, 1<<20)
	_, werr := in.Write(buf)
	in.Close()
	if werr == nil {
		werr = sess.Wait()
	}
	if werr == nil {
		t.Error("1 MiB went through a connection cut after 64 KiB")
	}
	c.Close()

	c2, err := dial(t, s, p.Addr, kh)
	if err != nil {
		t.Fatalf("second dial: %v", err)
	}
	defer c2.Close()
	sess2, err := c2.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(s.Dir, "cat2")
	sess2.Stdin = io.LimitReader(zeroReader{}, 1<<20)
	if err := sess2.Run("cat > " + out2); err != nil {
		t.Fatalf("second session: %v", err)
	}
	if st, err := os.Stat(out2); err != nil || st.Size() != 1<<20 {
		t.Errorf("second upload: %v, size %v; want 1 MiB", err, st)
	}
	if got := p.Conns(); got != 2 {
		t.Errorf("proxy accepted %d connections, want 2", got)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
