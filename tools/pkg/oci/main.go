// Command oci writes the OCI image of memwho-agent for fleets (a
// Kubernetes DaemonSet: deploy/kubernetes) without a container engine:
// one layer holding the static binary, the account files of its non-root
// user and the license notices, "FROM scratch". Every timestamp is
// SOURCE_DATE_EPOCH and every byte is chosen here, so that two builds of
// the same binary give the same image digest. Run it through
// scripts/image.sh VERSION:
//
//	go run ./oci -binary memwho-agent -notices DIR -version 1.2.3 -out memwho-agent.oci.tar
//
// The output is an OCI image layout in a tar (podman load -i FILE, skopeo
// copy oci-archive:FILE docker://REGISTRY/memwho-agent:TAG); the
// manifest's digest is printed.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// User is the image's user: not root, and no user of the host (65532 is
// the "nonroot" of distroless images).
const (
	UID  = 65532
	User = "memwho"
	// Port is where the DaemonSet's agent listens (--listen).
	Port = "9743/tcp"
)

func main() {
	bin := flag.String("binary", "", "the static memwho-agent `file`")
	notices := flag.String("notices", "", "`dir`ectory with copyright, LICENSE and license-expression (tools/pkg/notices)")
	version := flag.String("version", "", "image `version`")
	out := flag.String("out", "", "the OCI layout tar to write (`file`)")
	flag.Parse()
	if *bin == "" || *notices == "" || *version == "" || *out == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: oci -binary FILE -notices DIR -version VERSION -out FILE")
		os.Exit(2)
	}
	digest, err := build(*bin, *notices, *version, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "oci:", err)
		os.Exit(1)
	}
	fmt.Println(digest)
}

func epoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970 (scripts/image.sh sets it)", s)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// file is one entry of the layer.
type file struct {
	name string
	mode int64
	data []byte
	dir  bool
}

func layerFiles(bin, notices string) ([]file, error) {
	agent, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	files := []file{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:memwho agent:/nonexistent:/sbin/nologin\n", User, UID, UID)},
		{name: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\n%s:x:%d:\n", User, UID)},
		{name: "licenses/", dir: true, mode: 0o755},
		// No file capability: memwho-agent refuses those (an exec that
		// gains privilege, docs/safe.md). It keeps only capabilities it
		// is started with: the DaemonSet's two.
		{name: "memwho-agent", mode: 0o755, data: agent},
	}
	for _, n := range []string{"LICENSE", "copyright"} {
		b, err := os.ReadFile(filepath.Join(notices, n))
		if err != nil {
			return nil, err
		}
		files = append(files, file{name: "licenses/" + n, mode: 0o644, data: b})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return files, nil
}

// layer returns the layer's tar and its gzip.
func layer(files []file, mtime time.Time) (raw, gz []byte, err error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: mtime,
			Typeflag: tar.TypeReg, Format: tar.FormatPAX,
		}
		if f.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, err
	}
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	zw.Write(b.Bytes())
	if err := zw.Close(); err != nil {
		return nil, nil, err
	}
	return b.Bytes(), z.Bytes(), nil
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func digestOf(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

func build(bin, notices, version, out string) (string, error) {
	mtime, err := epoch()
	if err != nil {
		return "", err
	}
	files, err := layerFiles(bin, notices)
	if err != nil {
		return "", err
	}
	raw, gz, err := layer(files, mtime)
	if err != nil {
		return "", err
	}
	license, err := os.ReadFile(filepath.Join(notices, "license-expression"))
	if err != nil {
		return "", err
	}
	created := mtime.Format(time.RFC3339)
	labels := map[string]string{
		"org.opencontainers.image.title":       "memwho-agent",
		"org.opencontainers.image.description": "memwho's Prometheus agent: who uses the RAM and the swap, per program, user or container",
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.created":     created,
		"org.opencontainers.image.licenses":    strings.TrimSpace(string(license)),
		"org.opencontainers.image.source":      "https://github.com/memwho/memwho",
	}
	config, err := json.Marshal(map[string]any{
		"created":      created,
		"architecture": "amd64",
		"os":           "linux",
		"config": map[string]any{
			"User":         fmt.Sprintf("%d:%d", UID, UID),
			"Entrypoint":   []string{"/memwho-agent"},
			"Cmd":          []string{"serve"},
			"WorkingDir":   "/",
			"ExposedPorts": map[string]any{Port: map[string]any{}},
			"Labels":       labels,
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{digestOf(raw)}},
		"history": []map[string]string{{"created": created, "created_by": "memwho tools/pkg/oci " + version}},
	})
	if err != nil {
		return "", err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: digestOf(config), Size: len(config)},
		"layers":        []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Digest: digestOf(gz), Size: len(gz)}},
		"annotations":   labels,
	})
	if err != nil {
		return "", err
	}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []descriptor{{
			MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: digestOf(manifest), Size: len(manifest),
			Annotations: map[string]string{"org.opencontainers.image.ref.name": "memwho-agent:" + version},
		}},
	})
	if err != nil {
		return "", err
	}
	blob := func(b []byte) file {
		return file{name: "blobs/sha256/" + strings.TrimPrefix(digestOf(b), "sha256:"), mode: 0o644, data: b}
	}
	layout := []file{
		{name: "blobs/", dir: true, mode: 0o755},
		{name: "blobs/sha256/", dir: true, mode: 0o755},
		blob(config), blob(gz), blob(manifest),
		{name: "index.json", mode: 0o644, data: index},
		{name: "oci-layout", mode: 0o644, data: []byte(`{"imageLayoutVersion":"1.0.0"}`)},
	}
	sort.Slice(layout, func(i, j int) bool { return layout[i].name < layout[j].name })
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range layout {
		h := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return "", err
		}
		tw.Write(f.data)
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), fs.FileMode(0o644)); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return digestOf(manifest), os.Rename(tmp, out)
}
