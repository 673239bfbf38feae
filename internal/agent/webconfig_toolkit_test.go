package agent

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
)

// Files in the format of exporter-toolkit's web-config.yml, as
// node_exporter reads them with --web.config.file. The toolkit
// (v0.20.0, a test-only dependency: memwho-agent does not link it) is
// the oracle of what such a file means.

// signedCert is a certificate for 127.0.0.1 signed by ca, with the DNS
// name dns, written as PEM files NAME.crt and NAME.key in dir.
func signedCert(t *testing.T, dir, name, dns string, ca testCert) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{dns},
	}
	caCert, err := x509.ParseCertificate(ca.cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	c := testCert{certFile: filepath.Join(dir, name+".crt"), keyFile: filepath.Join(dir, name+".key")}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	os.WriteFile(c.certFile, certPEM, 0o644)
	os.WriteFile(c.keyFile, keyPEM, 0o600)
	if c.cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	return c
}

// nodeExporterFile uses every key of exporter-toolkit's format: client
// certificates signed by clients.crt and naming prometheus.example.org,
// TLS 1.2 and 1.3 with two TLS 1.2 suites and two curves, HTTP/2,
// headers, a rate limit and a user.
const nodeExporterFile = `tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: clients.crt
  client_allowed_sans:
    - prometheus.example.org
  min_version: TLS12
  max_version: TLS13
  cipher_suites:
    - TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
    - TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
  curve_preferences: [X25519, CurveP256]
  prefer_server_cipher_suites: true
http_server_config:
  http2: true
  headers:
    X-Frame-Options: deny
    X-Content-Type-Options: nosniff
    Strict-Transport-Security: max-age=31536000
rate_limit:
  interval: 100ms
  burst: 5
basic_auth_users:
  prometheus: HASH
`

// TestWebConfigAgreesWithToolkit: every file memwho accepts, the toolkit
// accepts (web.Validate), but for client CAs without a client_auth_type
// (memwho: RequireAndVerifyClientCert; the toolkit refuses); every file
// the toolkit accepts and memwho refuses is one of the refusals
// docs/agent.md lists, said as such.
func TestWebConfigAgreesWithToolkit(t *testing.T) {
	dir := t.TempDir()
	newTestCert(t, dir, "server")
	newTestCert(t, dir, "clients")
	h := hashOf(t, "s3cret")
	tlsOn := "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
	users := "basic_auth_users:\n  prometheus: " + h + "\n"
	serverPEM, _ := os.ReadFile(filepath.Join(dir, "server.crt"))
	keyPEM, _ := os.ReadFile(filepath.Join(dir, "server.key"))
	indent := func(b []byte) string {
		return "    " + strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", "\n    ") + "\n"
	}
	// refusals are why memwho refuses a file the toolkit serves.
	refusals := []string{
		"sets no access control",
		"TLS settings without a certificate",
		"needs client_ca_file",
		"client_allowed_sans needs",
		"select nothing",
		"lets no request through",
		"is negative",
		"give one of each pair",
	}
	for _, tc := range []struct{ name, text string }{
		{"node-exporter", strings.Replace(nodeExporterFile, "HASH", h, 1)},
		{"basic-auth", users},
		{"tls-basic-auth", tlsOn + users},
		{"tls-client-certs", tlsOn + "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: clients.crt\n"},
		{"inline", "tls_server_config:\n  cert: |\n" + indent(serverPEM) + "  key: |\n" + indent(keyPEM) + users},
		{"legacy-require-client-cert", tlsOn + "  client_auth_type: RequireClientCert\n" + users},
		{"tls10", tlsOn + "  min_version: TLS10\n" + users},
		{"http2-off", tlsOn + "http_server_config:\n  http2: false\n" + users},
		{"rate", users + "rate_limit:\n  interval: 1s\n  burst: 1\n"},
		{"prefer-server-ciphers", tlsOn + "  prefer_server_cipher_suites: false\n" + users},
		// Refused by memwho, served by the toolkit:
		{"no-auth-empty", ""},
		{"no-auth-tls", tlsOn},
		{"no-auth-optional-certs", tlsOn + "  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: clients.crt\n"},
		{"verify-system-roots", tlsOn + "  client_auth_type: RequireAndVerifyClientCert\n" + users},
		{"tls-off-min-version", "tls_server_config:\n  min_version: TLS13\n" + users},
		{"sans-unverified", tlsOn + "  client_auth_type: RequireAnyClientCert\n  client_allowed_sans: [x]\n" + users},
		{"ciphers-tls13", tlsOn + "  min_version: TLS13\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n" + users},
		{"rate-burst-0", users + "rate_limit:\n  interval: 1s\n"},
		{"rate-negative", users + "rate_limit:\n  interval: -1s\n  burst: 1\n"},
		{"cert-twice", tlsOn + "  cert: |\n" + indent(serverPEM) + users},
		// Accepted by memwho only (docs/agent.md):
		{"ca-without-auth-type", tlsOn + "  client_ca_file: clients.crt\n"},
		// Refused by both:
		{"plain-password", "basic_auth_users:\n  p: hunter2\n"},
		{"unknown-key", users + "http_server_config:\n  http3: true\n"},
		{"ca-no-auth-type", tlsOn + "  client_auth_type: NoClientCert\n  client_ca_file: clients.crt\n" + users},
		{"bad-header", users + "http_server_config:\n  headers:\n    Server: x\n"},
		{"bad-cipher", tlsOn + "  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n" + users},
		{"bad-curve", tlsOn + "  curve_preferences: [P192]\n" + users},
		{"no-key", "tls_server_config:\n  cert_file: server.crt\n" + users},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".yml")
			if err := os.WriteFile(p, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			theirs := web.Validate(p)
			_, ours := LoadWebConfig(p, nil)
			t.Logf("toolkit: %v; memwho: %v", theirs, ours)
			if tc.name == "node-exporter" && (theirs != nil || ours != nil) {
				t.Fatalf("the file with every key: toolkit %v, memwho %v; want both to accept it", theirs, ours)
			}
			switch {
			case tc.name == "ca-without-auth-type":
				if ours != nil || theirs == nil {
					t.Errorf("client CAs without client_auth_type: toolkit %v (want refused), memwho %v (want RequireAndVerifyClientCert)", theirs, ours)
				}
			case ours == nil && theirs != nil:
				t.Errorf("memwho accepts a file the toolkit refuses (%v)", theirs)
			case ours != nil && theirs == nil:
				ok := false
				for _, r := range refusals {
					ok = ok || strings.Contains(ours.Error(), r)
				}
				if !ok {
					t.Errorf("memwho refuses a file the toolkit serves, for a reason docs/agent.md does not list: %v", ours)
				}
			}
		})
	}
}

// TestWebConfigSpecialFiles: the file and the files it names must be
// regular files of at most 1 MiB. A FIFO (which would block the start
// until someone writes to it), a device, a directory and a huge file are
// refused at once with what they are; a symlink to a regular file, as
// Kubernetes mounts Secrets, is followed.
func TestWebConfigSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	newTestCert(t, dir, "server")
	users := "basic_auth_users:\n  prometheus: " + hashOf(t, "s3cret") + "\n"
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 2<<20); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, config, cert, want string }{
		{"config-fifo", fifo, "", "not a regular file (a FIFO)"},
		{"config-dir", dir, "", "not a regular file (a directory)"},
		{"config-device", "/dev/zero", "", "not a regular file (a device)"},
		{"config-huge", huge, "", "larger than 1048576 bytes"},
		{"cert-fifo", "", fifo, "not a regular file (a FIFO)"},
		{"cert-device", "", "/dev/zero", "not a regular file (a device)"},
		{"cert-huge", "", huge, "larger than 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.config
			if path == "" {
				path = writeConfig(t, dir, "tls_server_config:\n  cert_file: "+tc.cert+"\n  key_file: server.key\n"+users)
			}
			done := make(chan error, 1)
			go func() { _, err := LoadWebConfig(path, nil); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("LoadWebConfig: %v, want %q", err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("LoadWebConfig blocked")
			}
		})
	}
	t.Run("secret-symlinks", func(t *testing.T) {
		// A Secret volume: web.yml -> ..data/web.yml, ..data -> ..2026_…
		vol := t.TempDir()
		ts := filepath.Join(vol, "..2026_11_27")
		os.Mkdir(ts, 0o755)
		for _, f := range []string{"server.crt", "server.key"} {
			b, _ := os.ReadFile(filepath.Join(dir, f))
			os.WriteFile(filepath.Join(ts, f), b, 0o600)
		}
		os.WriteFile(filepath.Join(ts, "web.yml"), []byte("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"+users), 0o600)
		os.Symlink("..2026_11_27", filepath.Join(vol, "..data"))
		for _, f := range []string{"web.yml", "server.crt", "server.key"} {
			os.Symlink(filepath.Join("..data", f), filepath.Join(vol, f))
		}
		if _, err := LoadWebConfig(filepath.Join(vol, "web.yml"), nil); err != nil {
			t.Errorf("LoadWebConfig through Secret symlinks: %v", err)
		}
	})
}

// nodeExporterSetup writes nodeExporterFile with its certificates and
// serves it through Listen (the agent's limits included); it returns the
// address, the server's CA pool, a client certificate that names
// prometheus.example.org and one that names another host, both signed by
// the clients' CA.
func nodeExporterSetup(t *testing.T, maxConns int) (addr string, pool *x509.CertPool, good, other tls.Certificate, dir string) {
	t.Helper()
	dir = t.TempDir()
	server := newTestCert(t, dir, "server")
	ca := newTestCert(t, dir, "clients")
	g := signedCert(t, dir, "prometheus", "prometheus.example.org", ca)
	o := signedCert(t, dir, "intruder", "intruder.example.org", ca)
	p := writeConfig(t, dir, strings.Replace(nodeExporterFile, "HASH", hashOf(t, "s3cret"), 1))
	if err := web.Validate(p); err != nil {
		t.Fatalf("the toolkit refuses the test's file: %v", err)
	}
	cfg, err := LoadWebConfig(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, addr = r10Listen(t, Listeners{TCP: "127.0.0.1:0", Web: cfg, MaxConns: maxConns}, nil, nil)
	return addr, server.pool, g.cert, o.cert, dir
}

// TestWebConfigNodeExporterFile: a node_exporter web-config file using
// every key, unchanged, served by the agent to real TLS clients (Go's
// and curl's): HTTP/2 and HTTP/1.1 with the allowed client certificate
// and the password; refused without the password (401), with a
// certificate naming another host, with none, with TLS 1.1, with a TLS
// 1.2 suite not in the list; the headers on every answer; 429 past the
// rate limit.
func TestWebConfigNodeExporterFile(t *testing.T) {
	addr, pool, good, other, dir := nodeExporterSetup(t, 8)
	get := func(tc *tls.Config, h2 bool, pass string) (*http.Response, error) {
		tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: h2}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest("GET", "https://"+addr+"/metrics", nil)
		if pass != "" {
			req.SetBasicAuth("prometheus", pass)
		}
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	base := func() *tls.Config {
		return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{good}}
	}
	pause := func() { time.Sleep(250 * time.Millisecond) } // the rate limit: 5, one more per 100 ms

	for _, h2 := range []bool{true, false} {
		resp, err := get(base(), h2, "s3cret")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("h2=%v: %v %v, want 200", h2, resp, err)
		}
		if want := map[bool]int{true: 2, false: 1}[h2]; resp.ProtoMajor != want {
			t.Errorf("served %s, want HTTP/%d", resp.Proto, want)
		}
		for k, v := range map[string]string{"X-Frame-Options": "deny", "X-Content-Type-Options": "nosniff", "Strict-Transport-Security": "max-age=31536000"} {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s: %q, want %q", k, got, v)
			}
		}
		pause()
	}
	if resp, err := get(base(), true, "wrong"); err != nil || resp.StatusCode != 401 || resp.Header.Get("X-Frame-Options") != "deny" {
		t.Errorf("wrong password: %v %v, want 401 with the headers", resp, err)
	}
	pause()
	refused := map[string]*tls.Config{
		"a certificate naming another host": {RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{other}},
		"no certificate":                    {RootCAs: pool, ServerName: "127.0.0.1"},
		"TLS 1.1":                           func() *tls.Config { c := base(); c.MaxVersion = tls.VersionTLS11; return c }(),
		"a suite not in cipher_suites": func() *tls.Config {
			c := base()
			c.MaxVersion = tls.VersionTLS12
			c.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}
			return c
		}(),
	}
	for name, tc := range refused {
		if resp, err := get(tc, true, "s3cret"); err == nil {
			t.Errorf("%s: %s, want a failed handshake", name, resp.Status)
		}
	}
	pause()
	// TLS 1.2 with a listed suite.
	c12 := base()
	c12.MaxVersion = tls.VersionTLS12
	if resp, err := get(c12, false, "s3cret"); err != nil || resp.StatusCode != 200 {
		t.Errorf("TLS 1.2 with a listed suite: %v %v", resp, err)
	}

	t.Run("curl", func(t *testing.T) {
		if _, err := exec.LookPath("curl"); err != nil {
			t.Skip("no curl (scripts/test.sh installs it)")
		}
		pause()
		curl := func(args ...string) string {
			args = append([]string{"-sS", "-o", "/dev/null", "-w", "%{http_version} %{http_code}", "--max-time", "10",
				"--cacert", filepath.Join(dir, "server.crt")}, args...)
			out, _ := exec.Command("curl", append(args, "https://"+addr+"/metrics")...).CombinedOutput()
			return strings.TrimSpace(string(out))
		}
		cert := []string{"--cert", filepath.Join(dir, "prometheus.crt"), "--key", filepath.Join(dir, "prometheus.key")}
		for _, tc := range []struct {
			name string
			args []string
			want string
		}{
			{"http2", append(cert, "--http2", "-u", "prometheus:s3cret"), "2 200"},
			{"http1.1", append(cert, "--http1.1", "-u", "prometheus:s3cret"), "1.1 200"},
			{"no-password", append(cert, "--http2"), "2 401"},
			{"tls1.1", append(cert, "--tlsv1.1", "--tls-max", "1.1", "-u", "prometheus:s3cret"), "000"},
			{"other-host-cert", []string{"--cert", filepath.Join(dir, "intruder.crt"), "--key", filepath.Join(dir, "intruder.key"), "-u", "prometheus:s3cret"}, "000"},
		} {
			got := curl(tc.args...)
			if !strings.HasPrefix(got, tc.want) && !strings.Contains(got, tc.want) {
				t.Errorf("curl %s: %q, want %q", tc.name, got, tc.want)
			}
			pause()
		}
	})

	t.Run("rate-limit", func(t *testing.T) {
		time.Sleep(time.Second) // the bucket refills
		codes := map[int]int{}
		tr := &http.Transport{TLSClientConfig: base()}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		for range 20 {
			req, _ := http.NewRequest("GET", "https://"+addr+"/metrics", nil)
			req.SetBasicAuth("prometheus", "s3cret")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[resp.StatusCode]++
		}
		if codes[200] < 5 || codes[429] == 0 {
			t.Errorf("20 requests at once: %v, want at least the burst (5) of 200 and some 429", codes)
		}
	})
}

// TestHTTP2OneStreamPerConnection: an HTTP/2 connection is announced one
// concurrent stream (SETTINGS_MAX_CONCURRENT_STREAMS = 1), so that it
// carries one request at a time, as an HTTP/1.1 connection does and as
// --max-connections counts; and connections that sent the HTTP/2
// preface and nothing else are closed to make room for a scrape when
// every slot is taken.
func TestHTTP2OneStreamPerConnection(t *testing.T) {
	addr, pool, good, _, _ := nodeExporterSetup(t, 2)
	tc := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{good}, NextProtos: []string{"h2"}}
	var idle []net.Conn
	for range 2 {
		c, err := tls.Dial("tcp", addr, tc)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
			t.Fatalf("ALPN: %q, want h2", p)
		}
		io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
		// An empty SETTINGS frame: the client's preface is complete.
		c.Write([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0})
		settings := readSettings(t, c)
		if v, ok := settings[3]; !ok || v != 1 {
			t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS: %d (sent: %v), want 1", v, ok)
		}
		idle = append(idle, c)
	}
	time.Sleep(100 * time.Millisecond)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{good}}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "https://"+addr+"/metrics", nil)
	req.SetBasicAuth("prometheus", "s3cret")
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("scrape with every slot held by idle HTTP/2 connections: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Errorf("scrape: %s %s", resp.Proto, resp.Status)
	}
	if !h2Closed(idle[0]) || h2Closed(idle[1]) {
		t.Errorf("closed by the server: oldest %v, newer %v; want the oldest idle HTTP/2 connection closed, the newer kept", h2Closed(idle[0]), h2Closed(idle[1]))
	}
}

// h2Closed reports whether the server closed c, reading past the frames
// it sent (SETTINGS, its ACK, WINDOW_UPDATE).
func h2Closed(c net.Conn) bool {
	buf := make([]byte, 4096)
	for {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err := c.Read(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false
		}
		if err != nil {
			return true
		}
	}
}

// readSettings reads frames from c until the server's first SETTINGS
// frame and returns its parameters.
func readSettings(t *testing.T, c net.Conn) map[uint16]uint32 {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	r := bufio.NewReader(c)
	for {
		var hdr [9]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			t.Fatalf("read frame: %v", err)
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatalf("read frame: %v", err)
		}
		if hdr[3] != 4 || hdr[4]&1 != 0 { // SETTINGS, not an ACK
			continue
		}
		out := map[uint16]uint32{}
		for i := 0; i+6 <= len(body); i += 6 {
			out[binary.BigEndian.Uint16(body[i:])] = binary.BigEndian.Uint32(body[i+2:])
		}
		return out
	}
}

// TestHTTP2StreamFlood: a client that ignores SETTINGS_MAX_CONCURRENT_STREAMS
// and opens 200 streams at once on one connection, each a request with a
// wrong password, gets at most one password check waiting per
// connection: the server refuses the streams beyond the limit before any
// handler runs.
func TestHTTP2StreamFlood(t *testing.T) {
	web, tc := r10Web(t, true)
	_, addr := r10Listen(t, Listeners{MaxConns: 2, Web: web}, nil, nil)
	tc.NextProtos = []string{"h2"}
	c, err := tls.Dial("tcp", addr, tc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("ALPN: %q, want h2", p)
	}
	base := waitingChecks()
	web.auth.sem <- struct{}{} // every check waits its turn
	defer func() { <-web.auth.sem }()
	io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	c.Write([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0})
	go io.Copy(io.Discard, c)
	for i := range 200 {
		block := hpackRequest("127.0.0.1", "/metrics", "Basic cHJvbWV0aGV1czp3cm9uZw==") // prometheus:wrong
		var hdr [9]byte
		hdr[0], hdr[1], hdr[2] = byte(len(block)>>16), byte(len(block)>>8), byte(len(block))
		hdr[3] = 1   // HEADERS
		hdr[4] = 0x5 // END_STREAM | END_HEADERS
		binary.BigEndian.PutUint32(hdr[5:], uint32(2*i+1))
		if _, err := c.Write(append(hdr[:], block...)); err != nil {
			break // the server may close a connection that breaks the protocol
		}
	}
	time.Sleep(500 * time.Millisecond)
	if n := waitingChecks() - base; n > 1 {
		t.Errorf("%d password checks waiting from one HTTP/2 connection that opened 200 streams, want at most 1", n)
	}
}

// hpackRequest encodes a GET's header block with HPACK literals (no
// Huffman, no indexing): the fields a request needs and Authorization.
func hpackRequest(authority, path, auth string) []byte {
	lit := func(b []byte, idx int, v string) []byte {
		// Literal without indexing, name by static index (4-bit prefix).
		if idx < 15 {
			b = append(b, byte(idx))
		} else {
			b = append(b, 0x0f, byte(idx-15))
		}
		if len(v) < 127 {
			return append(append(b, byte(len(v))), v...)
		}
		b = append(b, 0x7f)
		n := len(v) - 127
		for n >= 128 {
			b = append(b, byte(n%128+128))
			n /= 128
		}
		return append(append(b, byte(n)), v...)
	}
	b := []byte{0x82, 0x87} // :method GET, :scheme https (indexed)
	b = lit(b, 1, authority)
	b = lit(b, 4, path)
	return lit(b, 23, auth)
}

// FuzzWebConfigToolkit: no file memwho accepts is one exporter-toolkit
// refuses (its web.Validate), beside a certificate, a key and a CA, but
// for the one extension docs/agent.md lists: client CAs without a
// client_auth_type, which memwho reads as RequireAndVerifyClientCert.
func FuzzWebConfigToolkit(f *testing.F) {
	f.Add(nodeExporterFile)
	f.Add("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_ca_file: clients.crt\n")
	f.Add("basic_auth_users:\n  a: $2y$04$A46x7LsqvNdZ66ecuL0Ji.nbY/vCSI2DAEKmEnu/tU22rOMSNRoj2\nrate_limit: {interval: 1s, burst: 1}\n")
	f.Add("http_server_config:\n  headers: {X-Frame-Options: deny}\n")
	dir := f.TempDir()
	newTestCert(f, dir, "server")
	newTestCert(f, dir, "clients")
	f.Fuzz(func(t *testing.T, text string) {
		p := filepath.Join(dir, "web.yml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := LoadWebConfig(p, nil)
		if err != nil {
			return
		}
		if err := web.Validate(p); err != nil {
			if strings.Contains(err.Error(), "without a Client Auth Policy") && c.TLSConfig() != nil &&
				c.TLSConfig().ClientAuth == tls.RequireAndVerifyClientCert {
				return
			}
			t.Fatalf("memwho accepts what exporter-toolkit refuses (%v):\n%s", err, text)
		}
	})
}
