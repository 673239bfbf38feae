package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
)

const manifest = "../../deploy/kubernetes/memwho-agent.yaml"

// TestKubernetesManifest validates the DaemonSet manifest against
// Kubernetes' schemas with kubernetes-validate --strict (PyPI, which
// carries them) and its ServiceMonitor against prometheus-operator's CRD
// schema (@kubernetes-models/prometheus-operator on npm), each installed
// into the test's own directory.
func TestKubernetesManifest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: installs two validators (about 20 s)")
	}
	dir := t.TempDir()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	if b, err := exec.Command("python3", "-m", "venv", filepath.Join(dir, "venv")).CombinedOutput(); err != nil {
		t.Skipf("python3 -m venv: %v\n%s", err, b)
	}
	pip := filepath.Join(dir, "venv/bin/pip")
	if b, err := exec.Command(pip, "install", "-q", "kubernetes-validate==1.37.0").CombinedOutput(); err != nil {
		t.Skipf("pip install kubernetes-validate: %v\n%s", err, b)
	}
	out, err := exec.Command(filepath.Join(dir, "venv/bin/kubernetes-validate"), "--strict", "-k", "1.33.0", manifest).CombinedOutput()
	t.Logf("kubernetes-validate --strict:\n%s", out)
	if err != nil || strings.Contains(string(out), "ERROR") {
		t.Errorf("kubernetes-validate: %v", err)
	}
	for _, kind := range []string{"namespace/memwho", "secret/memwho-web-config", "daemonset/memwho-agent", "service/memwho-agent"} {
		if !strings.Contains(string(out), "passed for resource "+kind) {
			t.Errorf("kubernetes-validate did not pass %s", kind)
		}
	}

	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed: the ServiceMonitor is not validated")
	}
	npm := exec.Command("npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", dir,
		"@kubernetes-models/prometheus-operator@6.0.0", "js-yaml@4.1.0")
	if b, err := npm.CombinedOutput(); err != nil {
		t.Skipf("npm install: %v\n%s", err, b)
	}
	script, err := os.ReadFile("testdata/validate-servicemonitor.mjs")
	if err != nil {
		t.Fatal(err)
	}
	mjs := filepath.Join(dir, "validate.mjs")
	if err := os.WriteFile(mjs, script, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(manifest)
	if b, err := exec.Command("node", mjs, abs).CombinedOutput(); err != nil || !strings.Contains(string(b), "1 ServiceMonitor valid") {
		t.Errorf("ServiceMonitor: %v\n%s", err, b)
	}
}

// TestKubePlay runs the DaemonSet's pod with podman kube play (no
// Kubernetes runs here; podman 4.3 plays Pods, not DaemonSets, so the
// test plays the DaemonSet's pod template as a Pod), beside a workload
// pod, from the image scripts/image.sh builds, and scrapes it as
// Prometheus would: over TLS with basic auth, as the web configuration
// of the manifest's Secret says. The workload's container must show by
// name in --by container. Two adaptations for podman, both in how the
// pod is run, not in the pod: the Secret's files come from a directory
// (podman 4.3's kube play crashes on a secret volume), podman's own
// storage is mounted where the agent reads container names (on
// Kubernetes, the kubelet's log links the manifest mounts name them),
// and the kubelet's log directories are empty ones of the test's (the
// manifest's DirectoryOrCreate would make them on this machine).
// The pods share the host's network (no port mapping), and the agent
// listens on a free port of its loopback.
func TestKubePlay(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds an image and runs pods")
	}
	if os.Geteuid() != 0 {
		t.Skip("podman kube play with the host's PID namespace needs root")
	}
	for _, tool := range []string{"podman", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	dir := t.TempDir()
	c := exec.Command("../../scripts/image.sh", testVersion)
	c.Env = append(os.Environ(), "OUT="+dir)
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, b)
	}
	tag := strings.ReplaceAll(testVersion, "~", "-")
	archive := filepath.Join(dir, "memwho-agent-"+tag+".oci.tar")
	image := "localhost/memwho-agent:" + tag

	state := t.TempDir()
	storage := filepath.Join(state, "storage")
	global := []string{"--root", storage, "--runroot", filepath.Join(state, "run"),
		"--tmpdir", filepath.Join(state, "tmp"), "--storage-driver", "vfs", "--events-backend", "none"}
	// podman kube play takes no --ulimit: its defaults exceed this
	// machine's hard limits (runc: "error setting rlimit").
	conf := filepath.Join(state, "containers.conf")
	if err := os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1000:1000\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	podman := func(args ...string) (string, error) {
		c := exec.Command("podman", append(global, args...)...)
		c.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
		b, err := c.CombinedOutput()
		return string(b), err
	}
	t.Cleanup(func() { podman("system", "reset", "--force") })
	if out, err := podman("load", "-i", archive); err != nil {
		t.Fatalf("podman load: %v\n%s", err, out)
	}

	// The web configuration: the Secret's web.yml with a real hash, a
	// certificate for 127.0.0.1.
	web := filepath.Join(dir, "web")
	os.Mkdir(web, 0o700)
	certPEM := writeCert(t, web)
	const password = "pkgtest-password"
	hash, err := bcrypt.GenerateFromPassword([]byte(password), 10)
	if err != nil {
		t.Fatal(err)
	}
	docs := readManifest(t)
	secret := docs["Secret"]["stringData"].(map[string]any)
	webYML := secret["web.yml"].(string)
	var hashed []string
	for _, l := range strings.Split(webYML, "\n") {
		if user, _, ok := strings.Cut(l, "prometheus: "); ok {
			l = user + "prometheus: " + string(hash)
		}
		hashed = append(hashed, l)
	}
	if err := os.WriteFile(filepath.Join(web, "web.yml"), []byte(strings.Join(hashed, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}

	port := freePort(t)
	ds := docs["DaemonSet"]
	tmpl := ds["spec"].(map[string]any)["template"].(map[string]any)
	spec := tmpl["spec"].(map[string]any)
	container := spec["containers"].([]any)[0].(map[string]any)
	container["image"] = image
	var args []any
	for _, a := range container["args"].([]any) {
		if strings.HasPrefix(a.(string), "--listen=") {
			a = fmt.Sprintf("--listen=127.0.0.1:%d", port)
		}
		args = append(args, a)
	}
	container["args"] = args
	// The host's network (no network of podman's own here): no port
	// mapping, and the probe on the port the agent listens on.
	delete(container, "ports")
	container["readinessProbe"].(map[string]any)["tcpSocket"] = map[string]any{"port": port}
	container["volumeMounts"] = append(container["volumeMounts"].([]any),
		map[string]any{"name": "podman-storage", "mountPath": "/host/var/lib/containers/storage", "readOnly": true})
	// The kubelet's log directories, which DirectoryOrCreate would make
	// on this machine: the test's own, empty, instead.
	var volumes []any
	for _, v := range spec["volumes"].([]any) {
		switch name := v.(map[string]any)["name"]; name {
		case "web-config":
			v = map[string]any{"name": "web-config", "hostPath": map[string]any{"path": web, "type": "Directory"}}
		case "pod-logs", "container-logs":
			d := filepath.Join(dir, name.(string))
			os.Mkdir(d, 0o755)
			v = map[string]any{"name": name, "hostPath": map[string]any{"path": d, "type": "Directory"}}
		}
		volumes = append(volumes, v)
	}
	spec["volumes"] = append(volumes, map[string]any{"name": "podman-storage", "hostPath": map[string]any{"path": storage, "type": "Directory"}})
	agentPod := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "memwho-agent", "labels": tmpl["metadata"].(map[string]any)["labels"], "annotations": tmpl["metadata"].(map[string]any)["annotations"]},
		"spec":     spec}
	// A workload: the same image serving on loopback without any
	// capability, as its default non-root user.
	workload := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "shop"},
		"spec": map[string]any{"containers": []any{map[string]any{
			"name": "cart", "image": image,
			"args": []any{"serve", fmt.Sprintf("--listen=127.0.0.1:%d", freePort(t)), "--no-auth", "--fast"},
		}}}}
	var play strings.Builder
	for i, d := range []any{workload, agentPod} {
		if i > 0 {
			play.WriteString("---\n")
		}
		b, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		play.Write(b)
	}
	playFile := filepath.Join(dir, "play.yaml")
	if err := os.WriteFile(playFile, []byte(play.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := podman("kube", "play", "--network", "host", playFile); err != nil {
		t.Fatalf("podman kube play: %v\n%s\n%s", err, out, play.String())
	}
	t.Cleanup(func() { podman("kube", "down", playFile) })

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	var body string
	for deadline := time.Now().Add(60 * time.Second); ; {
		req, _ := http.NewRequest("GET", url, nil)
		req.SetBasicAuth("prometheus", password)
		resp, err := client.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.Contains(string(b), `group="shop-cart"`) {
				body = string(b)
				break
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
			body = string(b)
		}
		if time.Now().After(deadline) {
			logs, _ := podman("logs", "memwho-agent-memwho-agent")
			ps, _ := podman("ps", "-a")
			var groups []string
			for _, l := range strings.Split(body, "\n") {
				if l != "" && !strings.HasPrefix(l, "#") && len(groups) < 40 {
					groups = append(groups, l)
				}
			}
			t.Fatalf("no metrics naming shop-cart at %s: %v\n%s\nagent's log:\n%s\n%s", url, err, strings.Join(groups, "\n"), logs, ps)
		}
		time.Sleep(time.Second)
	}
	// Exact figures for another user's container: the capabilities work.
	for _, want := range []string{`memwho_group_pss_bytes{group="shop-cart"}`, `memwho_group_estimated_processes{group="shop-cart"} 0`} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in the metrics", want)
		}
	}
	if resp, err := client.Get(url); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the password: %v %v, want 401", resp, err)
	}
	// The agent's process: uid 0 with exactly the two capabilities.
	pid, err := podman("inspect", "-f", "{{.State.Pid}}", "memwho-agent-memwho-agent")
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/" + strings.TrimSpace(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CapBnd:\t0000000000080004", "NoNewPrivs:\t1"} {
		if !strings.Contains(string(status), want) {
			t.Errorf("agent's /proc/PID/status lacks %q:\n%s", want, status)
		}
	}
}

func readManifest(t *testing.T) map[string]map[string]any {
	t.Helper()
	f, err := os.Open(manifest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	docs := map[string]map[string]any{}
	dec := yaml.NewDecoder(f)
	for {
		var d map[string]any
		if err := dec.Decode(&d); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		docs[d["kind"].(string)] = d
	}
	return docs
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// writeCert writes tls.crt and tls.key for 127.0.0.1 into dir and
// returns the certificate.
func writeCert(t *testing.T, dir string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "memwho-agent"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"memwho-agent"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o644)
	os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certPEM
}

// TestImageReproducible builds the image twice and compares the
// manifest digests scripts/image.sh prints and the archives' bytes.
func TestImageReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memwho-agent twice")
	}
	var digests, sums []string
	for range 2 {
		dir := t.TempDir()
		c := exec.Command("../../scripts/image.sh", testVersion)
		c.Env = append(os.Environ(), "OUT="+dir)
		b, err := c.Output()
		if err != nil {
			t.Fatalf("scripts/image.sh: %v", err)
		}
		digests = append(digests, strings.TrimSpace(string(b)))
		sums = append(sums, sha(t, filepath.Join(dir, "memwho-agent-"+strings.ReplaceAll(testVersion, "~", "-")+".oci.tar")))
	}
	if !strings.HasPrefix(digests[0], "sha256:") || digests[0] != digests[1] || sums[0] != sums[1] {
		t.Errorf("two builds: digests %q, archives' sha256 %q", digests, sums)
	}
	t.Logf("image digest %s both times", digests[0])
}
