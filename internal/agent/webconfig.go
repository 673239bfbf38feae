package agent

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
)

// WebConfig is the access control of the agent's TCP listener, read from
// a file in the format of Prometheus' web configuration file (the
// web-config.yml of prometheus/exporter-toolkit, which node_exporter and
// Prometheus itself read). Every key of exporter-toolkit v0.20.0 is read:
//
//	tls_server_config:
//	  cert_file: server.crt        # or cert: inline PEM; relative paths are relative to the file
//	  key_file: server.key         # or key: inline PEM
//	  client_auth_type: RequireAndVerifyClientCert
//	  client_ca_file: clients-ca.crt   # or client_ca: inline PEM
//	  client_allowed_sans: [prometheus.example.org]
//	  min_version: TLS12           # TLS10, TLS11 (warned), TLS12 (default), TLS13
//	  max_version: TLS13
//	  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]
//	  curve_preferences: [X25519, CurveP256]
//	  prefer_server_cipher_suites: true   # accepted, no effect (as in exporter-toolkit)
//	http_server_config:
//	  http2: true                  # the default; at most one request at a time per connection
//	  headers: {X-Frame-Options: deny}
//	rate_limit: {interval: 1s, burst: 10}
//	basic_auth_users:
//	  prometheus: $2y$10$...       # bcrypt hash of the password
//
// A file is either served as exporter-toolkit serves it, or refused with
// the reason (docs/agent.md lists the differences): a setting memwho does
// not apply must not look applied, and a file that lets anyone read the
// figures is --no-auth in disguise.
//
// We implement the format rather than import exporter-toolkit's web
// package: importing it grows memwho-agent by 4.5 MB (18.02 → 22.52 MB
// stripped, v0.20.0; it links client_golang, oauth2, jwt, x/net/trace with
// html/template, go-systemd and vsock), and its server rereads the file
// on every request and handshake without a size bound, queues password
// checks behind a mutex nobody can leave, and serves files without
// access control. See docs/agent.md.
type WebConfig struct {
	tls     *tls.Config // nil: plain HTTP
	auth    *basicAuth  // nil: no basic auth
	http2   bool        // serve HTTP/2 to clients that offer it (TLS only)
	headers http.Header // set on every response
	limit   *rateLimit  // nil: no rate limit
	// warnings are said on stderr when the listener starts.
	warnings []string
}

// ErrNoAccessControl is returned by LoadWebConfig for a file that lets
// anyone who can connect read the figures: neither basic_auth_users nor
// client_auth_type RequireAndVerifyClientCert.
var ErrNoAccessControl = errors.New("sets no access control (neither basic_auth_users nor client_auth_type: RequireAndVerifyClientCert)")

// webConfigFile is the file's layout, as exporter-toolkit's web.Config.
type webConfigFile struct {
	TLS   *tlsServerConfig  `yaml:"tls_server_config"`
	HTTP  *httpServerConfig `yaml:"http_server_config"`
	Rate  *rateLimitConfig  `yaml:"rate_limit"`
	Users map[string]string `yaml:"basic_auth_users"`
}

type tlsServerConfig struct {
	Cert           string   `yaml:"cert"`
	Key            string   `yaml:"key"`
	ClientCA       string   `yaml:"client_ca"`
	CertFile       string   `yaml:"cert_file"`
	KeyFile        string   `yaml:"key_file"`
	ClientAuthType string   `yaml:"client_auth_type"`
	ClientCAFile   string   `yaml:"client_ca_file"`
	CipherSuites   []string `yaml:"cipher_suites"`
	Curves         []string `yaml:"curve_preferences"`
	MinVersion     string   `yaml:"min_version"`
	MaxVersion     string   `yaml:"max_version"`
	// PreferServerCipherSuites has had no effect since Go 1.17;
	// exporter-toolkit reads and ignores it too.
	PreferServerCipherSuites bool     `yaml:"prefer_server_cipher_suites"`
	ClientAllowedSANs        []string `yaml:"client_allowed_sans"`
}

// enabled is exporter-toolkit's TLSConfig.IsEnabled: whether the section
// turns TLS on at all.
func (t *tlsServerConfig) enabled() bool {
	return t.Cert != "" || t.Key != "" || t.ClientCA != "" || t.CertFile != "" || t.KeyFile != "" ||
		t.ClientCAFile != "" || t.ClientAuthType != ""
}

type httpServerConfig struct {
	HTTP2   *bool             `yaml:"http2"`
	Headers map[string]string `yaml:"headers"`
}

type rateLimitConfig struct {
	Burst    int           `yaml:"burst"`
	Interval time.Duration `yaml:"interval"`
}

// maxConfigFile bounds what LoadWebConfig reads of any file it names.
const maxConfigFile = 1 << 20

// OpenFunc opens a file named in the configuration, for reading, without
// blocking on a FIFO (O_NONBLOCK). cmd/memwho-agent passes one that opens
// with the invoking user's rights, not the agent's capabilities.
type OpenFunc func(path string) (*os.File, error)

// openNonblock is the OpenFunc used when none is given.
func openNonblock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// LoadWebConfig reads the web configuration file at path, and the
// certificates and keys it names, through open (openNonblock when nil).
func LoadWebConfig(path string, open OpenFunc) (*WebConfig, error) {
	if open == nil {
		open = openNonblock
	}
	b, err := readFile(open, path)
	if err != nil {
		return nil, err
	}
	var f webConfigFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := &WebConfig{http2: true}
	if f.TLS != nil {
		if c.tls, err = f.TLS.config(filepath.Dir(path), open, &c.warnings); err != nil {
			return nil, fmt.Errorf("%s: tls_server_config: %w", path, err)
		}
	}
	if f.HTTP != nil {
		if f.HTTP.HTTP2 != nil {
			c.http2 = *f.HTTP.HTTP2
		}
		if c.headers, err = checkHeaders(f.HTTP.Headers); err != nil {
			return nil, fmt.Errorf("%s: http_server_config: headers: %w", path, err)
		}
	}
	if f.Rate != nil && f.Rate.Interval != 0 {
		if c.limit, err = newRateLimit(f.Rate.Interval, f.Rate.Burst); err != nil {
			return nil, fmt.Errorf("%s: rate_limit: %w", path, err)
		}
	}
	if len(f.Users) > 0 {
		if c.auth, err = newBasicAuth(f.Users); err != nil {
			return nil, fmt.Errorf("%s: basic_auth_users: %w", path, err)
		}
	}
	if c.auth == nil && (c.tls == nil || c.tls.ClientAuth != tls.RequireAndVerifyClientCert) {
		return nil, fmt.Errorf("%s: %w", path, ErrNoAccessControl)
	}
	if c.tls == nil {
		c.http2 = false // HTTP/2 is offered over TLS only
	}
	return c, nil
}

// TLSConfig is the listener's TLS configuration, nil for plain HTTP.
func (c *WebConfig) TLSConfig() *tls.Config { return c.tls }

// BasicAuth reports whether requests need a user name and password.
func (c *WebConfig) BasicAuth() bool { return c.auth != nil }

// HTTP2 reports whether the listener serves HTTP/2 to clients that offer
// it: http_server_config's http2 (default true), over TLS.
func (c *WebConfig) HTTP2() bool { return c.http2 }

// Warnings are what the listener says on stderr when it starts: settings
// applied as asked that weaken it (TLS 1.0 or 1.1).
func (c *WebConfig) Warnings() []string { return c.warnings }

// Handler wraps h: every response gets the configured headers; beyond the
// rate limit a request gets 429; requests without valid credentials get
// 401. Refused requests never reach h (so they never start a walk).
func (c *WebConfig) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range c.headers {
			w.Header().Set(k, v[0]) // not the shared slice: a handler may Add
		}
		if c.limit != nil && !c.limit.allow(time.Now()) {
			http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
			return
		}
		if c.auth == nil {
			h.ServeHTTP(w, r)
			return
		}
		user, pass, ok := r.BasicAuth()
		if ok && c.auth.check(r.Context(), user, pass) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="memwho", charset="UTF-8"`)
		http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
	})
}

// readFile reads a file the configuration names: a regular file (a
// symlink to one is followed: Kubernetes mounts Secrets that way) of at
// most maxConfigFile bytes. A FIFO, a device or a directory is refused
// before anything is read from it.
func readFile(open OpenFunc, path string) ([]byte, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, modeKind(st.Mode()))
	}
	if st.Size() > maxConfigFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxConfigFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxConfigFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxConfigFile)
	}
	return b, nil
}

func modeKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// clientAuthTypes are exporter-toolkit's names; RequireClientCert is its
// older name of RequireAnyClientCert.
var clientAuthTypes = map[string]tls.ClientAuthType{
	"":                           tls.NoClientCert,
	"NoClientCert":               tls.NoClientCert,
	"RequestClientCert":          tls.RequestClientCert,
	"RequireAnyClientCert":       tls.RequireAnyClientCert,
	"RequireClientCert":          tls.RequireAnyClientCert,
	"VerifyClientCertIfGiven":    tls.VerifyClientCertIfGiven,
	"RequireAndVerifyClientCert": tls.RequireAndVerifyClientCert,
}

var tlsVersions = map[string]uint16{
	"TLS10": tls.VersionTLS10, "TLS11": tls.VersionTLS11,
	"TLS12": tls.VersionTLS12, "TLS13": tls.VersionTLS13,
}

// curves are exporter-toolkit's names.
var curves = map[string]tls.CurveID{
	"CurveP256": tls.CurveP256, "CurveP384": tls.CurveP384, "CurveP521": tls.CurveP521, "X25519": tls.X25519,
}

func (t *tlsServerConfig) config(dir string, open OpenFunc, warnings *[]string) (*tls.Config, error) {
	if !t.enabled() {
		// exporter-toolkit serves plain HTTP then, whatever else the
		// section says.
		if t.MinVersion != "" || t.MaxVersion != "" || len(t.CipherSuites) > 0 || len(t.Curves) > 0 || len(t.ClientAllowedSANs) > 0 {
			return nil, errors.New("TLS settings without a certificate (cert_file or cert): TLS would be off; name the certificate and key, or remove the section")
		}
		return nil, nil
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	for _, both := range [][2]string{{t.CertFile, t.Cert}, {t.KeyFile, t.Key}, {t.ClientCAFile, t.ClientCA}} {
		if both[0] != "" && both[1] != "" {
			return nil, errors.New("cert and cert_file, key and key_file, client_ca and client_ca_file: give one of each pair, not both")
		}
	}
	if t.CertFile == "" && t.Cert == "" || t.KeyFile == "" && t.Key == "" {
		return nil, errors.New("a certificate (cert_file or cert) and its key (key_file or key) are both required")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}
	var ok bool
	if cfg.ClientAuth, ok = clientAuthTypes[t.ClientAuthType]; !ok {
		return nil, fmt.Errorf("client_auth_type %q: want one of NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert", t.ClientAuthType)
	}
	if t.ClientCAFile != "" || t.ClientCA != "" {
		pem := []byte(t.ClientCA)
		if t.ClientCAFile != "" {
			var err error
			if pem, err = readFile(open, rel(t.ClientCAFile)); err != nil {
				return nil, fmt.Errorf("client_ca_file: %w", err)
			}
		}
		cfg.ClientCAs = x509.NewCertPool()
		if !cfg.ClientCAs.AppendCertsFromPEM(pem) {
			return nil, errors.New("client_ca_file (or client_ca): no PEM certificate in it")
		}
		switch t.ClientAuthType {
		case "":
			// Naming the CAs and no client_auth_type is read as "clients
			// must present a certificate signed by them": the safe
			// reading (exporter-toolkit refuses such a file).
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		case "NoClientCert":
			return nil, errors.New("client CAs are named but client_auth_type is NoClientCert: say which clients must present a certificate")
		}
	}
	if (cfg.ClientAuth == tls.VerifyClientCertIfGiven || cfg.ClientAuth == tls.RequireAndVerifyClientCert) && cfg.ClientCAs == nil {
		// exporter-toolkit would verify against the system's roots: any
		// certificate a public CA issued would do.
		return nil, fmt.Errorf("client_auth_type %s needs client_ca_file (or client_ca): memwho does not take the system's CAs for clients", t.ClientAuthType)
	}
	if len(t.ClientAllowedSANs) > 0 {
		if cfg.ClientAuth != tls.VerifyClientCertIfGiven && cfg.ClientAuth != tls.RequireAndVerifyClientCert {
			return nil, errors.New("client_allowed_sans needs client_auth_type RequireAndVerifyClientCert (or VerifyClientCertIfGiven): the names of a certificate nobody verified prove nothing")
		}
		sans := slices.Clone(t.ClientAllowedSANs)
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error { return checkSANs(raw, sans) }
	}
	for _, v := range []struct {
		name string
		dst  *uint16
	}{{t.MinVersion, &cfg.MinVersion}, {t.MaxVersion, &cfg.MaxVersion}} {
		if v.name == "" {
			continue
		}
		n, ok := tlsVersions[v.name]
		if !ok {
			return nil, fmt.Errorf("TLS version %q: want TLS10, TLS11, TLS12 or TLS13", v.name)
		}
		*v.dst = n
	}
	if cfg.MaxVersion < cfg.MinVersion {
		return nil, errors.New("max_version is below min_version")
	}
	if cfg.MinVersion < tls.VersionTLS12 {
		*warnings = append(*warnings, fmt.Sprintf("min_version %s: clients may connect with TLS 1.0 or 1.1, deprecated since 2021 (RFC 8996)", t.MinVersion))
	}
	for _, name := range t.CipherSuites {
		id, ok := cipherSuite(name)
		if !ok {
			return nil, fmt.Errorf("cipher_suites: unknown cipher %q (Go's secure suites for TLS 1.0 to 1.2: tls.CipherSuites)", name)
		}
		cfg.CipherSuites = append(cfg.CipherSuites, id)
	}
	if len(cfg.CipherSuites) > 0 && cfg.MinVersion == tls.VersionTLS13 {
		return nil, errors.New("cipher_suites apply to TLS 1.2 and below, and min_version is TLS13: they would select nothing")
	}
	for _, name := range t.Curves {
		id, ok := curves[name]
		if !ok {
			return nil, fmt.Errorf("curve_preferences: unknown curve %q: want CurveP256, CurveP384, CurveP521 or X25519", name)
		}
		cfg.CurvePreferences = append(cfg.CurvePreferences, id)
	}
	kp := &keyPair{cert: rel(t.CertFile), key: rel(t.KeyFile), certPEM: []byte(t.Cert), keyPEM: []byte(t.Key), open: open}
	if _, err := kp.get(); err != nil {
		return nil, err
	}
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.get() }
	return cfg, nil
}

func cipherSuite(name string) (uint16, bool) {
	for _, cs := range tls.CipherSuites() {
		if cs.Name == name {
			return cs.ID, true
		}
	}
	return 0, false
}

// checkSANs accepts a client certificate that names one of sans (a DNS
// name, an e-mail address, an IP address or a URI), as exporter-toolkit
// does; the chain was verified before.
func checkSANs(raw [][]byte, sans []string) error {
	if len(raw) == 0 {
		return errors.New("client_allowed_sans: no client certificate")
	}
	cert, err := x509.ParseCertificate(raw[0])
	if err != nil {
		return fmt.Errorf("client certificate: %w", err)
	}
	names := slices.Concat(cert.DNSNames, cert.EmailAddresses)
	for _, ip := range cert.IPAddresses {
		names = append(names, ip.String())
	}
	for _, u := range cert.URIs {
		names = append(names, u.String())
	}
	for _, n := range names {
		if slices.Contains(sans, n) {
			return nil
		}
	}
	return errors.New("client certificate names none of client_allowed_sans")
}

// extraHeaders are the response headers http_server_config may set, with
// the values allowed where exporter-toolkit restricts them.
var extraHeaders = map[string][]string{
	"Strict-Transport-Security": nil,
	"X-Content-Type-Options":    {"nosniff"},
	"X-Frame-Options":           {"deny", "sameorigin"},
	"X-XSS-Protection":          nil,
	"Content-Security-Policy":   nil,
}

func checkHeaders(in map[string]string) (http.Header, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := http.Header{}
	for k, v := range in {
		allowed, ok := extraHeaders[k]
		if !ok {
			return nil, fmt.Errorf("HTTP header %q can not be configured (Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options, X-XSS-Protection, Content-Security-Policy)", k)
		}
		if len(allowed) > 0 && !slices.Contains(allowed, v) {
			return nil, fmt.Errorf("invalid value for %s: %q, want one of %q", k, v, allowed)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("%s: the value holds a line break or NUL", k)
		}
		out.Set(k, v)
	}
	return out, nil
}

// rateLimit is a token bucket shared by every request of the listener,
// as exporter-toolkit's rate_limit: one token every interval, at most
// burst kept.
type rateLimit struct {
	mu       sync.Mutex
	interval time.Duration
	burst    float64
	tokens   float64
	last     time.Time
}

func newRateLimit(interval time.Duration, burst int) (*rateLimit, error) {
	if interval < 0 {
		return nil, fmt.Errorf("interval %v is negative", interval)
	}
	if burst < 1 {
		return nil, fmt.Errorf("burst %d lets no request through: give at least 1", burst)
	}
	return &rateLimit{interval: interval, burst: float64(burst), tokens: float64(burst)}, nil
}

func (l *rateLimit) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.After(l.last) {
		l.tokens = min(l.burst, l.tokens+float64(now.Sub(l.last))/float64(l.interval))
	}
	if l.last.IsZero() || now.After(l.last) {
		l.last = now
	}
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// keyPair is the server's certificate, read again when a file it comes
// from changes, so that a renewed certificate needs no restart (as with
// exporter-toolkit, which rereads its files per connection). A
// certificate or key given inline (cert, key) is used as it is.
type keyPair struct {
	cert, key       string // paths; "" for inline
	certPEM, keyPEM []byte // inline, when the path is ""
	open            OpenFunc

	mu       sync.Mutex
	loaded   *tls.Certificate
	seen     [2]fileStamp // of cert and key when loaded
	renewing bool         // a load runs (without mu): serve loaded meanwhile
}

// fileStamp is what says a file changed: its modification time and size.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stamp(path string) (fileStamp, error) {
	if path == "" {
		return fileStamp{}, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{st.ModTime(), st.Size()}, nil
}

func (k *keyPair) get() (*tls.Certificate, error) {
	k.mu.Lock()
	if k.loaded != nil && k.renewing {
		// A stat or read that never returns (a FUSE or NFS mount)
		// stalls only the handshake that made it.
		c := k.loaded
		k.mu.Unlock()
		return c, nil
	}
	if k.loaded == nil {
		// The first load, at start: nothing to serve meanwhile.
		defer k.mu.Unlock()
		c, now, ok, err := k.load(k.seen, nil)
		if err != nil {
			return nil, err
		}
		k.loaded = c
		if ok {
			k.seen = now
		}
		return c, nil
	}
	k.renewing = true
	loaded, seen := k.loaded, k.seen
	k.mu.Unlock()
	c, now, ok, err := k.load(seen, loaded)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.renewing = false
	if err != nil {
		return k.loaded, nil // the last good pair while a renewal is half written
	}
	k.loaded = c
	if ok {
		k.seen = now
	}
	return c, nil
}

// load returns the pair, read again unless the files' stamps are still
// seen (then loaded, when not nil), the stamps now and whether both could
// be taken. It runs without k.mu, which guards only loaded and seen.
func (k *keyPair) load(seen [2]fileStamp, loaded *tls.Certificate) (*tls.Certificate, [2]fileStamp, bool, error) {
	cs, cerr := stamp(k.cert)
	ks, kerr := stamp(k.key)
	now := [2]fileStamp{cs, ks}
	ok := cerr == nil && kerr == nil
	if loaded != nil && ok && now[0].mod.Equal(seen[0].mod) && now[1].mod.Equal(seen[1].mod) &&
		now[0].size == seen[0].size && now[1].size == seen[1].size {
		return loaded, seen, true, nil
	}
	certPEM, keyPEM := k.certPEM, k.keyPEM
	var err error
	if k.cert != "" {
		if certPEM, err = readFile(k.open, k.cert); err != nil {
			return nil, now, ok, fmt.Errorf("cert_file: %w", err)
		}
	}
	if k.key != "" {
		if keyPEM, err = readFile(k.open, k.key); err != nil {
			return nil, now, ok, fmt.Errorf("key_file: %w", err)
		}
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The message of X509KeyPair never quotes key material.
		return nil, now, ok, fmt.Errorf("certificate %s and key %s: %w", orInline(k.cert), orInline(k.key), err)
	}
	return &c, now, ok, nil
}

func orInline(path string) string {
	if path == "" {
		return "(inline)"
	}
	return path
}

// basicAuth checks user names and passwords against bcrypt hashes.
//
// A bcrypt comparison costs tens of milliseconds of CPU by design, and
// Prometheus sends the same credentials every scrape, so a success is
// remembered: per user, an HMAC (under a key made at start-up and never
// stored) of the password bcrypt accepted, compared in constant time.
// Failures are never cached, and at most one bcrypt comparison runs at a
// time, so that a flood of wrong passwords costs at most one core.
type basicAuth struct {
	users map[string][]byte // bcrypt hashes
	dummy []byte            // compared for unknown users: same cost, same time
	key   [32]byte

	sem  chan struct{}
	mu   sync.Mutex
	good map[string][sha256.Size]byte
}

// maxBcryptCost bounds the cost of a basic_auth_users hash: at 16 a check
// takes seconds on a small machine.
const maxBcryptCost = 16

func newBasicAuth(users map[string]string) (*basicAuth, error) {
	a := &basicAuth{
		users: make(map[string][]byte, len(users)),
		sem:   make(chan struct{}, 1),
		good:  make(map[string][sha256.Size]byte, len(users)),
	}
	names := make([]string, 0, len(users))
	for u := range users {
		names = append(names, u)
	}
	sort.Strings(names)
	maxCost := bcrypt.MinCost
	for _, u := range names {
		h := []byte(users[u])
		cost, err := bcrypt.Cost(h)
		if err != nil {
			// Never quote the value: it may be a password typed in
			// place of its hash.
			return nil, fmt.Errorf("user %q: not a bcrypt hash (make one with: htpasswd -nBC 10 %q | cut -d: -f2)", u, u)
		}
		if cost > maxBcryptCost {
			// Each step doubles the time: cost 31 takes hours, at start
			// (the dummy hash) and for the first scrape.
			return nil, fmt.Errorf("user %q: bcrypt cost %d is more than %d (seconds per check; Prometheus scrapes every 15 s): make a hash with cost 10 to 14", u, cost, maxBcryptCost)
		}
		maxCost = max(maxCost, cost)
		a.users[u] = h
	}
	rand.Read(a.key[:])
	var pw [16]byte
	rand.Read(pw[:])
	var err error
	if a.dummy, err = bcrypt.GenerateFromPassword(pw[:], maxCost); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *basicAuth) mac(user, pass string) [sha256.Size]byte {
	m := hmac.New(sha256.New, a.key[:])
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(user)))
	m.Write(n[:])
	io.WriteString(m, user)
	io.WriteString(m, pass)
	var out [sha256.Size]byte
	m.Sum(out[:0])
	return out
}

// check reports whether pass is user's password. It gives up (false)
// when ctx ends while it waits for its turn: the connection was closed,
// by its client or to make room for another (limitListener), and a
// request nobody waits for must not keep its place, or closed requests
// would pile up behind bcrypt without bound.
func (a *basicAuth) check(ctx context.Context, user, pass string) bool {
	sum := a.mac(user, pass)
	a.mu.Lock()
	cached, ok := a.good[user]
	a.mu.Unlock()
	if ok && hmac.Equal(cached[:], sum[:]) {
		return true
	}
	hash, known := a.users[user]
	if !known {
		hash = a.dummy
	}
	select {
	case a.sem <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	err := bcrypt.CompareHashAndPassword(hash, []byte(pass))
	<-a.sem
	if err != nil || !known {
		return false
	}
	a.mu.Lock()
	a.good[user] = sum
	a.mu.Unlock()
	return true
}
