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
	"bytes"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/chglog"
	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm"
)

func main() {
	config := flag.String("config", "", "nfpm configuration `file`")
	stage := flag.String("stage", "", "staged files (`dir`ectory), ${STAGE} in the configuration")
	version := flag.String("version", "", "package `version` (a leading v is dropped)")
	out := flag.String("out", "dist", "output `dir`ectory")
	formats := flag.String("formats", "deb,rpm", "comma-separated package `formats`")
	var rpm rpmOptions
	flag.Func("rpm-caps", "`PATH=CAPS`: the rpm's %caps(CAPS) of PATH (repeatable)", func(s string) error {
		path, caps, ok := strings.Cut(s, "=")
		if !ok || caps == "" {
			return fmt.Errorf("want PATH=CAPS, as /usr/bin/x=cap_sys_ptrace=ep")
		}
		if rpm.Caps == nil {
			rpm.Caps = map[string]string{}
		}
		rpm.Caps[path] = caps
		return nil
	})
	flag.Func("rpm-requires-pre", "a requirement of the rpm that %pre needs: Requires(pre) (repeatable)", func(s string) error {
		rpm.PreRequires = append(rpm.PreRequires, s)
		return nil
	})
	flag.Func("rpm-order-post", "a package whose scriptlets run before %post, %preun and %postun if it is installed: OrderWithRequires (repeatable)", func(s string) error {
		rpm.Order = append(rpm.Order, s)
		return nil
	})
	flag.Parse()
	if *config == "" || *stage == "" || *version == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: pkg -config FILE -stage DIR -version VERSION [-out DIR] [-formats deb,rpm]")
		os.Exit(2)
	}
	for _, format := range strings.Split(*formats, ",") {
		target, err := build(*config, *stage, *version, *out, format, rpm)
		if err != nil {
			fmt.Fprintf(os.Stderr, "pkg: %s: %v\n", format, err)
			os.Exit(1)
		}
		fmt.Println(target)
	}
}

// fileName is the package's name in dist: Debian's and Fedora's
// conventional names, with the release (the Debian revision).
func fileName(format, version, release string) (string, error) {
	switch format {
	case "deb":
		return "memwho_" + version + "-" + release + "_amd64.deb", nil
	case "rpm":
		return "memwho-" + version + "-" + release + ".x86_64.rpm", nil
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

func build(config, stage, version, out, format string, rpm rpmOptions) (string, error) {
	version = strings.TrimPrefix(version, "v")
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
	// The SPDX expression of everything linked (tools/pkg/notices).
	license, err := os.ReadFile(filepath.Join(stage, "license-expression"))
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
	info.License = strings.TrimSpace(string(license))
	if format == "rpm" {
		// rpm's Summary is the first line; its description is the rest.
		_, rest, _ := strings.Cut(info.Description, "\n")
		info.Description = rest
	}
	name, err := fileName(format, version, info.Release)
	if err != nil {
		return "", err
	}
	// nfpm opens the scripts and the changelog relative to the working
	// directory.
	for _, s := range []*string{&info.Scripts.PreInstall, &info.Scripts.PostInstall, &info.Scripts.PreRemove, &info.Scripts.PostRemove, &info.Changelog} {
		if *s != "" && !filepath.IsAbs(*s) {
			*s = filepath.Join(dir, *s)
		}
	}
	tmp, err := os.MkdirTemp("", "memwho-pkg")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if info.Changelog, err = changelog(info.Changelog, version+"-"+info.Release, info.Maintainer, mt, tmp); err != nil {
		return "", err
	}
	if info.Contents, err = expandDocs(info.Contents); err != nil {
		return "", err
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
	var b bytes.Buffer
	if err := p.Package(info, &b); err != nil {
		return "", err
	}
	pkg := b.Bytes()
	if format == "rpm" {
		if pkg, err = finishRPM(pkg, rpm); err != nil {
			return "", err
		}
	}
	part := target + ".tmp"
	if err := os.WriteFile(part, pkg, 0o644); err != nil {
		os.Remove(part)
		return "", err
	}
	return target, os.Rename(part, target)
}

// expandDocs expands the globs of documentation entries (type doc), one
// entry per file under the destination directory: nfpm expands globs
// only for plain files, and rpm's %doc is per file.
func expandDocs(contents files.Contents) (files.Contents, error) {
	var out files.Contents
	for _, c := range contents {
		if c.Type != files.TypeRPMDoc || !strings.ContainsAny(c.Source, "*?[") {
			out = append(out, c)
			continue
		}
		matches, err := filepath.Glob(c.Source)
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%s: no matching files", c.Source)
		}
		for _, m := range matches {
			d := *c
			fi := *c.FileInfo
			d.FileInfo = &fi
			d.Source = m
			d.Destination = path.Join(c.Destination, filepath.Base(m))
			out = append(out, &d)
		}
	}
	return out, nil
}

// changelog returns the changelog nfpm is to read: file itself when its
// newest entry is the version being built (VERSION-RELEASE), else a copy
// in dir with an entry for this build on top, as Debian's snapshot
// builds do (dch --snapshot), so that the newest entry of both formats'
// changelogs names the package's version.
func changelog(file, version, packager string, date time.Time, dir string) (string, error) {
	entries, err := chglog.Parse(file)
	if err != nil {
		return "", err
	}
	if len(entries) > 0 && entries[0].Semver == version {
		return file, nil
	}
	note := "Snapshot of the source: no release before it."
	if len(entries) > 0 {
		note = "Snapshot of the source after " + entries[0].Semver + "."
	}
	snapshot := &chglog.ChangeLog{
		ChangeLogOverridables: chglog.ChangeLogOverridables{Deb: &chglog.ChangelogDeb{
			Urgency: "medium", Distributions: []string{"unstable"},
		}},
		Semver:   version,
		Date:     date,
		Packager: packager,
		Changes:  chglog.ChangeLogChanges{{Note: note}},
	}
	entries = append(chglog.ChangeLogEntries{snapshot}, entries...)
	out := filepath.Join(dir, "changelog.yml")
	return out, entries.Save(out)
}
