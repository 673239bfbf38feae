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
	"sort"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
)

// WebConfig is the access control of the agent's TCP listener, read from
// a file in the format of Prometheus' web configuration file (the
// web-config.yml of prometheus/exporter-toolkit, which node_exporter and
// Prometheus itself read), restricted to the part that decides who reads
// the figures:
//
//	tls_server_config:
//	  cert_file: server.crt        # relative paths are relative to the file
//	  key_file: server.key
//	  client_auth_type: RequireAndVerifyClientCert
//	  client_ca_file: clients-ca.crt
//	  min_version: TLS12           # TLS12 (default) or TLS13
//	  max_version: TLS13
//	basic_auth_users:
//	  prometheus: $2y$10$...       # bcrypt hash of the password
//
// Any other key is an error, not ignored: a setting memwho does not
// apply must not look applied.
//
// We implement this subset rather than import exporter-toolkit's web
// package: that package links client_golang, oauth2, jwt, x/net and
// go-systemd into the binary (+4.9 MB, 18.6 → 23.5 MB stripped, measured
// with v0.20.0), for features (systemd socket activation, rate limits,
// inline secrets) the agent does not need. See docs/agent.md.
type WebConfig struct {
	tls  *tls.Config // nil: plain HTTP
	auth *basicAuth  // nil: no basic auth
}

// ErrNoAccessControl is returned by LoadWebConfig for a file that lets
// anyone who can connect read the figures: neither basic_auth_users nor
// client_auth_type RequireAndVerifyClientCert.
var ErrNoAccessControl = errors.New("sets no access control (neither basic_auth_users nor client_auth_type: RequireAndVerifyClientCert)")

// webConfigFile is the file's layout.
type webConfigFile struct {
	TLS   *tlsServerConfig  `yaml:"tls_server_config"`
	Users map[string]string `yaml:"basic_auth_users"`
}

type tlsServerConfig struct {
	CertFile       string `yaml:"cert_file"`
	KeyFile        string `yaml:"key_file"`
	ClientAuthType string `yaml:"client_auth_type"`
	ClientCAFile   string `yaml:"client_ca_file"`
	MinVersion     string `yaml:"min_version"`
	MaxVersion     string `yaml:"max_version"`
}

// maxConfigFile bounds what LoadWebConfig reads of any file it names.
const maxConfigFile = 1 << 20

// OpenFunc opens a file named in the configuration. cmd/memwho passes one
// that opens with the invoking user's rights, not the agent's
// capabilities.
type OpenFunc func(path string) (*os.File, error)

// LoadWebConfig reads the web configuration file at path, and the
// certificates and keys it names, through open (os.Open when nil).
func LoadWebConfig(path string, open OpenFunc) (*WebConfig, error) {
	if open == nil {
		open = os.Open
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
	c := &WebConfig{}
	if f.TLS != nil {
		if c.tls, err = f.TLS.config(filepath.Dir(path), open); err != nil {
			return nil, fmt.Errorf("%s: tls_server_config: %w", path, err)
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
	return c, nil
}

// TLSConfig is the listener's TLS configuration, nil for plain HTTP.
func (c *WebConfig) TLSConfig() *tls.Config { return c.tls }

// BasicAuth reports whether requests need a user name and password.
func (c *WebConfig) BasicAuth() bool { return c.auth != nil }

// Handler wraps h so that requests without valid credentials get 401
// and never reach h (so they never start a walk).
func (c *WebConfig) Handler(h http.Handler) http.Handler {
	if c.auth == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if ok && c.auth.check(r.Context(), user, pass) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="memwho", charset="UTF-8"`)
		http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
	})
}

func readFile(open OpenFunc, path string) ([]byte, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxConfigFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxConfigFile)
	}
	return b, nil
}

var clientAuthTypes = map[string]tls.ClientAuthType{
	"":                           tls.NoClientCert,
	"NoClientCert":               tls.NoClientCert,
	"RequestClientCert":          tls.RequestClientCert,
	"RequireAnyClientCert":       tls.RequireAnyClientCert,
	"VerifyClientCertIfGiven":    tls.VerifyClientCertIfGiven,
	"RequireAndVerifyClientCert": tls.RequireAndVerifyClientCert,
}

// tlsVersions holds the versions accepted: TLS 1.0 and 1.1 are
// deprecated (RFC 8996).
var tlsVersions = map[string]uint16{"TLS12": tls.VersionTLS12, "TLS13": tls.VersionTLS13}

func (t *tlsServerConfig) config(dir string, open OpenFunc) (*tls.Config, error) {
	if t.CertFile == "" || t.KeyFile == "" {
		return nil, errors.New("cert_file and key_file are both required")
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	var ok bool
	if cfg.ClientAuth, ok = clientAuthTypes[t.ClientAuthType]; !ok {
		return nil, fmt.Errorf("client_auth_type %q: want one of NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert", t.ClientAuthType)
	}
	if t.ClientCAFile != "" {
		pem, err := readFile(open, rel(t.ClientCAFile))
		if err != nil {
			return nil, fmt.Errorf("client_ca_file: %w", err)
		}
		cfg.ClientCAs = x509.NewCertPool()
		if !cfg.ClientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client_ca_file %s: no PEM certificate in it", t.ClientCAFile)
		}
		// Naming the CAs and no client_auth_type is read as "clients
		// must present a certificate signed by them": the safe reading.
		if t.ClientAuthType == "" {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	if (cfg.ClientAuth == tls.VerifyClientCertIfGiven || cfg.ClientAuth == tls.RequireAndVerifyClientCert) && cfg.ClientCAs == nil {
		return nil, fmt.Errorf("client_auth_type %s needs client_ca_file", t.ClientAuthType)
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
			return nil, fmt.Errorf("TLS version %q: want TLS12 or TLS13", v.name)
		}
		*v.dst = n
	}
	if cfg.MaxVersion != 0 && cfg.MaxVersion < cfg.MinVersion {
		return nil, errors.New("max_version is below min_version")
	}
	kp := &keyPair{cert: rel(t.CertFile), key: rel(t.KeyFile), open: open}
	if _, err := kp.get(); err != nil {
		return nil, err
	}
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.get() }
	return cfg, nil
}

// keyPair is the server's certificate, read again when either file
// changes, so that a renewed certificate needs no restart (as with
// exporter-toolkit, which rereads its files per connection).
type keyPair struct {
	cert, key string
	open      OpenFunc

	mu               sync.Mutex
	loaded           *tls.Certificate
	certMod, keyMod  time.Time
	certSize, keySiz int64
}

func (k *keyPair) get() (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	cs, cerr := os.Stat(k.cert)
	ks, kerr := os.Stat(k.key)
	if k.loaded != nil && cerr == nil && kerr == nil &&
		cs.ModTime().Equal(k.certMod) && ks.ModTime().Equal(k.keyMod) && cs.Size() == k.certSize && ks.Size() == k.keySiz {
		return k.loaded, nil
	}
	certPEM, err := readFile(k.open, k.cert)
	if err != nil {
		return k.fallback(fmt.Errorf("cert_file: %w", err))
	}
	keyPEM, err := readFile(k.open, k.key)
	if err != nil {
		return k.fallback(fmt.Errorf("key_file: %w", err))
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The message of X509KeyPair never quotes key material.
		return k.fallback(fmt.Errorf("cert_file %s, key_file %s: %w", k.cert, k.key, err))
	}
	k.loaded = &c
	if cerr == nil && kerr == nil {
		k.certMod, k.keyMod, k.certSize, k.keySiz = cs.ModTime(), ks.ModTime(), cs.Size(), ks.Size()
	}
	return k.loaded, nil
}

// fallback keeps serving the last good pair while a renewal is half
// written.
func (k *keyPair) fallback(err error) (*tls.Certificate, error) {
	if k.loaded != nil {
		return k.loaded, nil
	}
	return nil, err
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
