//go:build !nosftp

package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/upload/sftp"
)

// SFTP reports whether this build can upload (--upload sftp://...): the
// optional part is left out with the nosftp build tag (see
// upload_absent.go).
const SFTP = true

// PrepareUpload checks u, reads the key and known_hosts (through u.Open)
// and returns the function that streams an export, encoded as opt says,
// to the server. Mistakes in u are usage errors (cli.UsageError).
func PrepareUpload(u *Upload, opt Options) (func(context.Context, Source) error, error) {
	login := ""
	if u, err := user.Current(); err == nil {
		login = u.Username
	}
	target, err := sftp.ParseURL(u.URL, login)
	if err != nil {
		return nil, cli.Usagef("--upload: %v", err)
	}

	khPath := u.KnownHosts
	if khPath == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, cli.Usagef("--known-hosts: no home directory to find ~/.ssh/known_hosts: %v", err)
		}
		khPath = filepath.Join(home, ".ssh", "known_hosts")
	}
	kh, err := u.Open(khPath)
	if err != nil {
		return nil, fmt.Errorf("--known-hosts: %w (add the server with: ssh-keyscan -p %d %s >> %s, after checking its fingerprint)",
			err, target.Port, target.Host, khPath)
	}
	hostKeyCallback, algos, err := sftp.KnownHosts(target.Addr(), kh)
	if err != nil {
		kh.Close()
		return nil, fmt.Errorf("--known-hosts: %w", err)
	}

	var auth ssh.AuthMethod
	var closeAuth io.Closer
	if u.Identity != "" {
		kf, err := u.Open(u.Identity)
		if err != nil {
			kh.Close()
			return nil, fmt.Errorf("--identity: %w", err)
		}
		// A private key file is a few KiB; refuse to slurp anything else.
		b, err := io.ReadAll(io.LimitReader(kf, 1<<20))
		kf.Close()
		if err == nil {
			var signer ssh.Signer
			if signer, err = sftp.Identity(b); err == nil {
				auth = ssh.PublicKeys(signer)
			}
		}
		if err != nil {
			kh.Close()
			return nil, fmt.Errorf("--identity %s: %w", u.Identity, err)
		}
	} else {
		if auth, closeAuth, err = sftp.Agent(os.Getenv("SSH_AUTH_SOCK")); err != nil {
			kh.Close()
			return nil, cli.Usagef("--upload needs a key: %v; give --identity FILE", err)
		}
	}

	cfg := sftp.Config{
		Target:            target,
		HostKeyCallback:   hostKeyCallback,
		HostKeyAlgorithms: algos,
		Auth:              []ssh.AuthMethod{auth},
		Retries:           u.Retries,
		Backoff:           UploadBackoff,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(u.Log, "memwho: warning: %s\n", cli.OneLine(fmt.Sprintf(format, args...)))
		},
	}
	return func(ctx context.Context, src Source) error {
		defer kh.Close()
		if closeAuth != nil {
			defer closeAuth.Close()
		}
		// Each attempt runs the whole export again from the database:
		// the pipeline keeps no state, and --until was fixed at start.
		_, err := sftp.Upload(ctx, cfg, func(ctx context.Context, w io.Writer) error {
			_, err := Run(ctx, w, opt, src)
			return err
		})
		var he *sftp.HostKeyError
		if errors.As(err, &he) && len(he.Known) == 0 && !he.Revoked {
			return fmt.Errorf("upload to %s: %w; if the fingerprint is right, add the host with: ssh-keyscan -p %d %s >> %s",
				target, err, target.Port, target.Host, khPath)
		}
		if err != nil {
			return fmt.Errorf("upload to %s: %w", target, err)
		}
		return nil
	}, nil
}

// UploadBackoff is the wait before the first retry of a dropped upload;
// it doubles with each retry. Tests shorten it.
var UploadBackoff = time.Second
