//go:build !nosftp

package sftp

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyError is a host key that known_hosts does not accept. It says
// which key the server offered so that the user can compare fingerprints.
type HostKeyError struct {
	// Addr is host:port as looked up in known_hosts.
	Addr string
	// Offered is the key the server presented.
	Offered ssh.PublicKey
	// Known lists the keys known_hosts has for Addr; empty means the host
	// is unknown, otherwise the key changed (or someone is in between).
	Known []knownhosts.KnownKey
	// Revoked is set when known_hosts marks the offered key @revoked.
	Revoked bool
	// Files are the known_hosts files consulted.
	Files []string
}

func (e *HostKeyError) Error() string {
	fp := ssh.FingerprintSHA256(e.Offered)
	switch {
	case e.Revoked:
		return fmt.Sprintf("host key %s %s of %s is marked @revoked in %s", e.Offered.Type(), fp, e.Addr, strings.Join(e.Files, ", "))
	case len(e.Known) == 0:
		return fmt.Sprintf("host %s is not in %s (it offered %s %s); nothing was sent",
			e.Addr, strings.Join(e.Files, ", "), e.Offered.Type(), fp)
	}
	k := e.Known[0]
	return fmt.Sprintf("HOST KEY MISMATCH for %s: it offered %s %s but %s:%d has %s %s; someone may be intercepting the connection, or the host key was changed; nothing was sent",
		e.Addr, e.Offered.Type(), fp, k.Filename, k.Line, k.Key.Type(), ssh.FingerprintSHA256(k.Key))
}

// KnownHosts returns a callback that accepts only host keys listed in the
// open known_hosts files, and the host key algorithms to ask addr for:
// those of the keys known for it. Without that list the server may offer,
// say, its RSA key when known_hosts holds only its ed25519 key, and the
// check would fail although the host is known.
//
// The files are read through /proc/self/fd, so that the caller decides
// with which identity they are opened; errors name them by their Name.
func KnownHosts(addr string, files ...*os.File) (ssh.HostKeyCallback, []string, error) {
	if len(files) == 0 {
		return nil, nil, errors.New("no known_hosts file")
	}
	var paths, names []string
	rename := map[string]string{}
	for _, f := range files {
		p := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
		paths = append(paths, p)
		names = append(names, f.Name())
		rename[p] = f.Name()
	}
	cb, err := knownhosts.New(paths...)
	if err != nil {
		msg := err.Error()
		for p, n := range rename {
			msg = strings.ReplaceAll(msg, p, n)
		}
		return nil, nil, fmt.Errorf("read known_hosts: %s", msg)
	}
	check := func(host string, remote net.Addr, key ssh.PublicKey) error {
		err := cb(host, remote, key)
		if err == nil {
			return nil
		}
		he := &HostKeyError{Addr: host, Offered: key, Files: names}
		var ke *knownhosts.KeyError
		var re *knownhosts.RevokedError
		switch {
		case errors.As(err, &ke):
			for _, k := range ke.Want {
				if n, ok := rename[k.Filename]; ok {
					k.Filename = n
				}
				he.Known = append(he.Known, k)
			}
		case errors.As(err, &re):
			he.Revoked = true
		default:
			return err
		}
		return he
	}
	return check, knownAlgorithms(cb, addr), nil
}

// knownAlgorithms asks cb about a key nobody has, to learn from the
// mismatch which key types known_hosts holds for addr.
func knownAlgorithms(cb ssh.HostKeyCallback, addr string) []string {
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil
	}
	probe, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil
	}
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 22}
	var ke *knownhosts.KeyError
	if err := cb(knownhosts.Normalize(addr), remote, probe); !errors.As(err, &ke) {
		return nil
	}
	var algos []string
	seen := map[string]bool{}
	for _, k := range ke.Want {
		names := []string{k.Key.Type()}
		if names[0] == ssh.KeyAlgoRSA {
			// The key type of an RSA key says nothing of the signature
			// hash; prefer SHA-2.
			names = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				algos = append(algos, n)
			}
		}
	}
	return algos
}

// Identity parses an unencrypted private key file (OpenSSH, PKCS#1,
// PKCS#8 or SEC 1 PEM). An encrypted key is refused with a hint: load it
// into ssh-agent instead.
func Identity(pemBytes []byte) (ssh.Signer, error) {
	s, err := ssh.ParsePrivateKey(pemBytes)
	var pm *ssh.PassphraseMissingError
	if errors.As(err, &pm) {
		return nil, errors.New("the key is encrypted with a passphrase: add it to ssh-agent (ssh-add) and leave out --identity")
	}
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	return s, nil
}

// Agent returns an authentication method that uses the keys of the
// ssh-agent listening on the Unix socket sock (usually $SSH_AUTH_SOCK),
// and the connection to close when done.
func Agent(sock string) (ssh.AuthMethod, io.Closer, error) {
	if sock == "" {
		return nil, nil, errors.New("no ssh-agent (SSH_AUTH_SOCK is not set)")
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to ssh-agent: %w", err)
	}
	return ssh.PublicKeysCallback(agent.NewClient(c).Signers), c, nil
}
