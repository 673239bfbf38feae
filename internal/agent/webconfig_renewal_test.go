package agent

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWebConfigRenewalStuckReadKeepsServing pins that a renewed
// certificate whose read never returns (a cert_file on a FUSE mount its
// owner stops answering, or a hung NFS server: O_NONBLOCK does not help
// for regular files) stalls at most the handshake that read it: every
// other handshake is served the certificate already loaded. Otherwise
// whoever can replace the certificate with a symlink into such a mount
// hangs every scrape, the connection slots filling with handshakes that
// wait on the renewal.
func TestWebConfigRenewalStuckReadKeepsServing(t *testing.T) {
	dir := t.TempDir()
	newTestCert(t, dir, "server")
	release := make(chan struct{})
	stuck := make(chan struct{}, 1)
	block := false
	open := func(path string) (*os.File, error) {
		if block {
			select {
			case stuck <- struct{}{}:
			default:
			}
			<-release
		}
		return openNonblock(path)
	}
	cfg, err := LoadWebConfig(writeConfig(t, dir, "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prometheus: "+hashOf(t, "s3cret")+"\n"), open)
	if err != nil {
		t.Fatal(err)
	}
	get := cfg.TLSConfig().GetCertificate
	first, err := get(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	// The renewal: the certificate's stamp changes, and its read hangs.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "server.crt"), later, later); err != nil {
		t.Fatal(err)
	}
	block = true
	defer close(release)
	go get(&tls.ClientHelloInfo{})
	<-stuck

	done := make(chan *tls.Certificate, 1)
	go func() {
		c, _ := get(&tls.ClientHelloInfo{})
		done <- c
	}()
	select {
	case c := <-done:
		if c != first {
			t.Errorf("another handshake during a stuck renewal got %p, want the loaded certificate %p", c, first)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("another handshake waits on a renewal whose read never returns: every scrape hangs")
	}
}
