// Command pkg builds memwho's .deb and .rpm packages from a staged tree
// with the nfpm library, pinned in this module's go.mod so that nfpm's
// dependencies stay out of memwho's own go.mod. Run it through
// scripts/package.sh VERSION, which builds and stages the files first.
//
//	go run . -config ../../packaging/nfpm.yaml -stage DIR -version 1.2.3 -out ../../dist
//
// Packages are reproducible: every timestamp in them is SOURCE_DATE_EPOCH
// (the script sets it to the commit time), and the rpm's build host is a
// fixed name.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb"
	_ "github.com/goreleaser/nfpm/v2/rpm"
)

func main() {
	config := flag.String("config", "", "nfpm configuration `file`")
	stage := flag.String("stage", "", "staged files (`dir`ectory), ${STAGE} in the configuration")
	version := flag.String("version", "", "package `version` (a leading v is dropped)")
	out := flag.String("out", "dist", "output `dir`ectory")
	formats := flag.String("formats", "deb,rpm", "comma-separated package `formats`")
	flag.Parse()
	if *config == "" || *stage == "" || *version == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: pkg -config FILE -stage DIR -version VERSION [-out DIR] [-formats deb,rpm]")
		os.Exit(2)
	}
	for _, format := range strings.Split(*formats, ",") {
		target, err := build(*config, *stage, *version, *out, format)
		if err != nil {
			fmt.Fprintf(os.Stderr, "pkg: %s: %v\n", format, err)
			os.Exit(1)
		}
		fmt.Println(target)
	}
}

// fileName is the package's name in dist: the brief's (and Debian's and
// Fedora's) conventional names without the release number.
func fileName(format, version string) (string, error) {
	switch format {
	case "deb":
		return "memwho_" + version + "_amd64.deb", nil
	case "rpm":
		return "memwho-" + version + ".x86_64.rpm", nil
	}
	return "", fmt.Errorf("unknown format (want deb or rpm)")
}

// mtime is SOURCE_DATE_EPOCH, required: a package stamped with the time
// of its build would never be reproducible.
func mtime() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970 (scripts/package.sh sets it)", s)
	}
	return time.Unix(sec, 0).UTC(), nil
}

func build(config, stage, version, out, format string) (string, error) {
	version = strings.TrimPrefix(version, "v")
	name, err := fileName(format, version)
	if err != nil {
		return "", err
	}
	mt, err := mtime()
	if err != nil {
		return "", err
	}
	stage, err = filepath.Abs(stage)
	if err != nil {
		return "", err
	}
	dir, err := filepath.Abs(filepath.Dir(config))
	if err != nil {
		return "", err
	}
	vars := map[string]string{"STAGE": stage, "VERSION": version}
	cfg, err := nfpm.ParseFileWithEnvMapping(config, func(k string) string { return vars[k] })
	if err != nil {
		return "", err
	}
	info, err := cfg.Get(format)
	if err != nil {
		return "", err
	}
	info.MTime = mt
	// nfpm opens the scripts relative to the working directory.
	for _, s := range []*string{&info.Scripts.PostInstall, &info.Scripts.PreRemove, &info.Scripts.PostRemove} {
		if *s != "" && !filepath.IsAbs(*s) {
			*s = filepath.Join(dir, *s)
		}
	}
	info = nfpm.WithDefaults(info)
	p, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	target := filepath.Join(out, name)
	info.Target = target
	f, err := os.Create(target + ".tmp")
	if err != nil {
		return "", err
	}
	if err := p.Package(info, f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return target, os.Rename(f.Name(), target)
}
