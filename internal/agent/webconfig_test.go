package agent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// testCert is a self-signed certificate (its own CA) for 127.0.0.1 and
// localhost, written as PEM files.
type testCert struct {
	certFile, keyFile string
	cert              tls.Certificate
	pool              *x509.CertPool
}

func newTestCert(t testing.TB, dir, name string) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := testCert{certFile: filepath.Join(dir, name+".crt"), keyFile: filepath.Join(dir, name+".key")}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	if err := os.WriteFile(c.certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if c.cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	c.pool = x509.NewCertPool()
	c.pool.AppendCertsFromPEM(certPEM)
	return c
}

// hashOf is a bcrypt hash at the lowest cost, to keep tests fast.
func hashOf(t testing.TB, pw string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func writeConfig(t testing.TB, dir, text string) string {
	t.Helper()
	p := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWebConfigErrors: files LoadWebConfig refuses, with the reason.
func TestWebConfigErrors(t *testing.T) {
	dir := t.TempDir()
	c := newTestCert(t, dir, "server")
	h := hashOf(t, "secret")
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", "sets no access control"},
		{"tls-only", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n", "sets no access control"},
		{"tls-optional-client-cert", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: server.crt\n", "sets no access control"},
		{"unknown-key", "basic_auth_users:\n  p: " + h + "\nhttp_server_config:\n  http3: true\n", "field http3 not found"},
		{"unknown-tls-key", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  cipher_suite: [TLS_AES_128_GCM_SHA256]\nbasic_auth_users:\n  p: " + h + "\n", "field cipher_suite not found"},
		{"tls-settings-without-cert", "tls_server_config:\n  min_version: TLS13\nbasic_auth_users:\n  p: " + h + "\n", "TLS settings without a certificate"},
		{"cert-twice", "tls_server_config:\n  cert_file: server.crt\n  cert: x\n  key_file: server.key\nbasic_auth_users:\n  p: " + h + "\n", "give one of each pair"},
		{"ca-no-client-cert", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_ca_file: server.crt\n  client_auth_type: NoClientCert\nbasic_auth_users:\n  p: " + h + "\n", "NoClientCert"},
		{"sans-unverified", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAnyClientCert\n  client_allowed_sans: [x]\nbasic_auth_users:\n  p: " + h + "\n", "client_allowed_sans needs"},
		{"unknown-cipher", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\nbasic_auth_users:\n  p: " + h + "\n", `unknown cipher "TLS_RSA_WITH_RC4_128_SHA"`},
		{"ciphers-tls13", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS13\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\nbasic_auth_users:\n  p: " + h + "\n", "select nothing"},
		{"unknown-curve", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  curve_preferences: [P192]\nbasic_auth_users:\n  p: " + h + "\n", `unknown curve "P192"`},
		{"header-not-allowed", "http_server_config:\n  headers:\n    Server: memwho\nbasic_auth_users:\n  p: " + h + "\n", `HTTP header "Server" can not be configured`},
		{"header-bad-value", "http_server_config:\n  headers:\n    X-Frame-Options: allow\nbasic_auth_users:\n  p: " + h + "\n", "invalid value for X-Frame-Options"},
		{"rate-no-burst", "rate_limit:\n  interval: 1s\nbasic_auth_users:\n  p: " + h + "\n", "burst 0 lets no request through"},
		{"plain-password", "basic_auth_users:\n  p: hunter2\n", `user "p": not a bcrypt hash`},
		{"no-key-file", "tls_server_config:\n  cert_file: server.crt\nbasic_auth_users:\n  p: " + h + "\n", "are both required"},
		{"missing-cert", "tls_server_config:\n  cert_file: nothere.crt\n  key_file: server.key\nbasic_auth_users:\n  p: " + h + "\n", "nothere.crt: no such file"},
		{"key-mismatch", "tls_server_config:\n  cert_file: server.crt\n  key_file: other.key\nbasic_auth_users:\n  p: " + h + "\n", "private key does not match"},
		{"bad-client-auth", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: Sometimes\n", `client_auth_type "Sometimes"`},
		{"verify-without-ca", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAndVerifyClientCert\n", "needs client_ca_file"},
		{"old-tls", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: SSL30\nbasic_auth_users:\n  p: " + h + "\n", `TLS version "SSL30"`},
		{"not-yaml", "basic_auth_users: [", "yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := t.TempDir()
			for _, f := range []string{c.certFile, c.keyFile} {
				b, _ := os.ReadFile(f)
				os.WriteFile(filepath.Join(sub, filepath.Base(f)), b, 0o600)
			}
			other := newTestCert(t, t.TempDir(), "other")
			b, _ := os.ReadFile(other.keyFile)
			os.WriteFile(filepath.Join(sub, "other.key"), b, 0o600)
			_, err := LoadWebConfig(writeConfig(t, sub, tc.text), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadWebConfig: %v, want an error containing %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error quotes the password: %v", err)
			}
		})
	}
}

// serveWeb serves h behind cfg on a loopback port and returns the base
// URL.
func serveWeb(t testing.TB, cfg *WebConfig, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Handshake failures are what some tests provoke: keep them out of
	// the output.
	srv := &http.Server{Handler: cfg.Handler(h), TLSConfig: cfg.TLSConfig(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	scheme := "http"
	if cfg.TLSConfig() != nil {
		scheme = "https"
		go srv.ServeTLS(ln, "", "")
	} else {
		go srv.Serve(ln)
	}
	t.Cleanup(func() { srv.Close() })
	return scheme + "://" + ln.Addr().String()
}

// TestWebConfigBasicAuth: no credentials, a wrong password and an
// unknown user get 401 and never reach the handler; the right password
// gets 200, and the second success comes from the cache.
func TestWebConfigBasicAuth(t *testing.T) {
	dir := t.TempDir()
	cfg, err := LoadWebConfig(writeConfig(t, dir, "basic_auth_users:\n  prometheus: "+hashOf(t, "s3cret")+"\n  other: "+hashOf(t, "x")+"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var reached atomic.Int64
	base := serveWeb(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		io.WriteString(w, "figures\n")
	}))
	for _, tc := range []struct {
		name, user, pass string
		noAuth           bool
		want             int
	}{
		{"missing", "", "", true, 401},
		{"wrong-password", "prometheus", "guess", false, 401},
		{"other-users-password", "prometheus", "x", false, 401},
		{"unknown-user", "nobody", "s3cret", false, 401},
		{"empty-password", "prometheus", "", false, 401},
		{"right", "prometheus", "s3cret", false, 200},
		{"right-again-cached", "prometheus", "s3cret", false, 200},
		{"wrong-after-cached", "prometheus", "s3cret ", false, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reached.Load()
			req, _ := http.NewRequest("GET", base+"/metrics", nil)
			if !tc.noAuth {
				req.SetBasicAuth(tc.user, tc.pass)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want == 401 {
				if reached.Load() != before || strings.Contains(string(body), "figures") {
					t.Error("a refused request reached the handler")
				}
				if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
					t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
				}
			}
		})
	}
	if _, ok := cfg.auth.good["prometheus"]; !ok {
		t.Error("the successful login was not cached")
	}
	if len(cfg.auth.good) != 1 {
		t.Errorf("cache holds %d users, want 1 (failures are never cached)", len(cfg.auth.good))
	}
}

// TestWebConfigTLS: TLS with basic auth, and TLS with required client
// certificates, from a self-signed certificate made here.
func TestWebConfigTLS(t *testing.T) {
	dir := t.TempDir()
	server := newTestCert(t, dir, "server")
	client := newTestCert(t, dir, "client")
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "figures\n") })

	get := func(base string, tc *tls.Config, user, pass string) (int, error) {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
		defer c.CloseIdleConnections()
		req, _ := http.NewRequest("GET", base+"/metrics", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}

	t.Run("basic-auth", func(t *testing.T) {
		cfg, err := LoadWebConfig(writeConfig(t, dir, "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prometheus: "+hashOf(t, "s3cret")+"\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		base := serveWeb(t, cfg, ok)
		trust := &tls.Config{RootCAs: server.pool}
		if code, err := get(base, trust, "prometheus", "s3cret"); err != nil || code != 200 {
			t.Errorf("right password: %d %v, want 200", code, err)
		}
		if code, err := get(base, trust, "prometheus", "nope"); err != nil || code != 401 {
			t.Errorf("wrong password: %d %v, want 401", code, err)
		}
		if _, err := get(base, &tls.Config{}, "prometheus", "s3cret"); err == nil {
			t.Error("a client that does not trust the certificate connected")
		}
		if code, err := get(strings.Replace(base, "https:", "http:", 1), nil, "prometheus", "s3cret"); err == nil && code == 200 {
			t.Error("plain HTTP to the TLS port got the figures")
		}
		old := &tls.Config{RootCAs: server.pool, MaxVersion: tls.VersionTLS11}
		if _, err := get(base, old, "prometheus", "s3cret"); err == nil {
			t.Error("a TLS 1.1 client connected")
		}
	})

	t.Run("client-cert", func(t *testing.T) {
		cfg, err := LoadWebConfig(writeConfig(t, dir, "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_ca_file: client.crt\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.TLSConfig().ClientAuth != tls.RequireAndVerifyClientCert {
			t.Errorf("client_ca_file without client_auth_type: ClientAuth %v, want RequireAndVerifyClientCert", cfg.TLSConfig().ClientAuth)
		}
		base := serveWeb(t, cfg, ok)
		with := &tls.Config{RootCAs: server.pool, Certificates: []tls.Certificate{client.cert}}
		if code, err := get(base, with, "", ""); err != nil || code != 200 {
			t.Errorf("with a client certificate: %d %v, want 200", code, err)
		}
		if _, err := get(base, &tls.Config{RootCAs: server.pool}, "", ""); err == nil {
			t.Error("without a client certificate: connected")
		}
		wrong := &tls.Config{RootCAs: server.pool, Certificates: []tls.Certificate{server.cert}}
		if _, err := get(base, wrong, "", ""); err == nil {
			t.Error("with a certificate the CA did not sign: connected")
		}
	})
}

// FuzzWebConfig: no input makes LoadWebConfig panic, hang on a huge
// bcrypt cost, or accept a configuration that controls nobody.
func FuzzWebConfig(f *testing.F) {
	f.Add("basic_auth_users:\n  alice: $2y$10$abcdefghijklmnopqrstuu5yJ4oD1c7ZP0z8Y3h6t1c8d0Q0b6yW.\n")
	f.Add("tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n  client_auth_type: RequireAndVerifyClientCert\n")
	f.Add("basic_auth_users:\n  bob: $2a$31$abcdefghijklmnopqrstuu5yJ4oD1c7ZP0z8Y3h6t1c8d0Q0b6yW.\n")
	f.Add("http_server_config: {}\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		open := func(name string) (*os.File, error) {
			if name != "web.yml" {
				return nil, os.ErrNotExist
			}
			p := filepath.Join(t.TempDir(), "web.yml")
			if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
				return nil, err
			}
			return os.Open(p)
		}
		c, err := LoadWebConfig("web.yml", open)
		if err == nil && !c.BasicAuth() && (c.TLSConfig() == nil || c.TLSConfig().ClientAuth != tls.RequireAndVerifyClientCert) {
			t.Fatalf("accepted a configuration that controls nobody: %q", text)
		}
	})
}
