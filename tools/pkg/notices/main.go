// Command notices writes the license notices of memwho's packages from
// the module graph linked into the built binaries, so that no notice is
// copied by hand and none goes stale when a dependency moves:
//
//	go run ./notices -license ../../LICENSE -out DIR BINARY...
//
// It reads each binary's build information (the modules and the Go
// toolchain it was linked from), finds each module in the module cache
// (go mod download -json), and reads its license, notice and patent files.
// It writes into DIR:
//
//   - copyright: Debian's machine-readable copyright format (DEP-5) with
//     one Files paragraph per module (patterns relative to the source tree
//     after go mod vendor) holding its copyright lines and its license
//     text, and memwho's own Apache-2.0 paragraph;
//   - LICENSE: memwho's own license (the file given by -license);
//   - license-expression: the SPDX expression of everything linked, for
//     the rpm's License tag.
//
// A license file it cannot classify is an error: a person reads the new
// text and adds it to the classifier (or to exceptions, with the reason).
package main

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

func main() {
	license := flag.String("license", "", "memwho's own license `file` (Apache-2.0)")
	out := flag.String("out", "", "output `dir`ectory")
	flag.Parse()
	if *license == "" || *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: notices -license FILE -out DIR BINARY...")
		os.Exit(2)
	}
	if err := run(*license, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "notices:", err)
		os.Exit(1)
	}
}

func run(licenseFile, out string, binaries []string) error {
	own, err := os.ReadFile(licenseFile)
	if err != nil {
		return err
	}
	if ids, err := classify(string(own)); err != nil || !slices.Equal(ids, []string{"Apache-2.0"}) {
		return fmt.Errorf("%s: want the Apache License 2.0, classified as %v (%v)", licenseFile, ids, err)
	}
	mods, goVersion, err := linked(binaries)
	if err != nil {
		return err
	}
	var comps []component
	std, err := goComponent(goVersion)
	if err != nil {
		return err
	}
	comps = append(comps, std)
	for _, m := range mods {
		dir, err := moduleDir(m)
		if err != nil {
			return err
		}
		c, err := readComponent(m.Path, m.Version, "vendor/"+m.Path+"/*", dir)
		if err != nil {
			return err
		}
		comps = append(comps, c)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"copyright", []byte(dep5(comps))},
		{"LICENSE", own},
		{"license-expression", []byte(expression(comps) + "\n")},
	} {
		if err := os.WriteFile(filepath.Join(out, f.name), f.data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// module is one module linked into a binary.
type module struct{ Path, Version string }

// linked returns the modules linked into the binaries (replacements
// resolved), sorted by path, and the Go toolchain that built them.
func linked(binaries []string) ([]module, string, error) {
	seen := map[module]bool{}
	goVersion := ""
	for _, b := range binaries {
		info, err := buildinfo.ReadFile(b)
		if err != nil {
			return nil, "", err
		}
		if goVersion != "" && info.GoVersion != goVersion {
			return nil, "", fmt.Errorf("%s was built by %s, another binary by %s", b, info.GoVersion, goVersion)
		}
		goVersion = info.GoVersion
		for _, d := range info.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			if d.Version == "" || strings.HasPrefix(d.Version, "(") {
				return nil, "", fmt.Errorf("%s: module %s has no version (a local replacement?): its license cannot be looked up", b, d.Path)
			}
			seen[module{d.Path, d.Version}] = true
		}
	}
	var mods []module
	for m := range seen {
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool {
		if mods[i].Path != mods[j].Path {
			return mods[i].Path < mods[j].Path
		}
		return mods[i].Version < mods[j].Version
	})
	return mods, goVersion, nil
}

// moduleDir is where the module cache holds m (downloaded if missing).
func moduleDir(m module) (string, error) {
	c := exec.Command("go", "mod", "download", "-json", m.Path+"@"+m.Version)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	b, err := c.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %v: %s", m.Path, m.Version, err, stderr.Bytes())
	}
	var r struct{ Dir, Error string }
	if err := json.Unmarshal(b, &r); err != nil {
		return "", err
	}
	if r.Error != "" || r.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", m.Path, m.Version, r.Error)
	}
	return r.Dir, nil
}

// goComponent is the Go standard library and runtime, linked into every
// Go binary, from the toolchain that built them.
func goComponent(goVersion string) (component, error) {
	b, err := exec.Command("go", "env", "GOROOT", "GOVERSION").Output()
	if err != nil {
		return component{}, fmt.Errorf("go env: %v", err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || f[1] != goVersion {
		return component{}, fmt.Errorf("the binaries were built by %s but the go command here is %q: the notices must name the toolchain that built them", goVersion, f)
	}
	return readComponent("Go standard library and runtime", goVersion, "go/*", f[0])
}

// component is one body of code and its notices.
type component struct {
	name, version string
	pattern       string   // DEP-5 Files pattern
	licenses      []string // SPDX expressions, one per license file
	copyright     []string
	files         []noticeFile
}

type noticeFile struct {
	name, text string
}

// noticeName matches the files a module's root may hold its terms in.
var noticeName = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice|patents)([-._].*)?$`)

func readComponent(name, version, pattern, dir string) (component, error) {
	c := component{name: name, version: version, pattern: pattern}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return c, err
	}
	for _, e := range ents {
		if e.IsDir() || !noticeName.MatchString(e.Name()) {
			continue
		}
		if why, ok := exceptions[name+" "+e.Name()]; ok {
			if why == "" {
				return c, fmt.Errorf("internal error: exception %s %s without a reason", name, e.Name())
			}
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return c, err
		}
		text := strings.ReplaceAll(string(b), "\r\n", "\n")
		short, err := shorten(text)
		if err != nil {
			return c, fmt.Errorf("%s %s, %s: %w", name, version, e.Name(), err)
		}
		c.files = append(c.files, noticeFile{e.Name(), short})
		if kind, ok := notices[name+" "+e.Name()]; ok {
			c.licenses = append(c.licenses, kind...)
		} else if isNotice(e.Name()) {
			// A NOTICE or PATENTS file grants or tells; it is carried
			// along, but it names no license of its own.
		} else {
			ids, err := classify(text)
			if err != nil {
				return c, fmt.Errorf("%s %s, %s: %w: read it and add it to the classifier or to exceptions in tools/pkg/notices", name, version, e.Name(), err)
			}
			c.licenses = append(c.licenses, strings.Join(ids, " AND "))
		}
		c.copyright = append(c.copyright, copyrightLines(text)...)
	}
	if len(c.licenses) == 0 {
		return c, fmt.Errorf("%s %s: no license file in %s", name, version, dir)
	}
	c.copyright = uniq(c.copyright)
	return c, nil
}

func isNotice(file string) bool {
	u := strings.ToUpper(file)
	return strings.HasPrefix(u, "NOTICE") || strings.HasPrefix(u, "PATENTS")
}

// exceptions are license files of linked modules that cover nothing
// linked into memwho, each with the reason.
var exceptions = map[string]string{
	"modernc.org/memory LICENSE-LOGO":         "the attribution of the project's logo, which is not in the binary",
	"modernc.org/sqlite LICENSE-SQLITE_VEC":   "sqlite-vec is linked only when modernc.org/sqlite/vec is imported; memwho does not import it",
	"modernc.org/sqlite LICENSE-3RD-PARTY.md": "the module's inventory: its linked parts are covered by LICENSE (BSD-3-Clause) and LICENSE-SQLITE (public domain); its other rows are test-only or unlinked code (Apache-2.0, MPL-2.0)",
}

// notices are inventory files whose licenses are known by reading them:
// each license a linked part of the module is under.
var notices = map[string][]string{
	// Transpiled musl, go-netdb and nixpkgs code (MIT) and Go's own
	// code (BSD-3-Clause) inside modernc.org/libc.
	"modernc.org/libc LICENSE-3RD-PARTY.md": {"MIT", "BSD-3-Clause"},
}

// spdxLine is an explicit SPDX-License-Identifier line.
var spdxLine = regexp.MustCompile(`SPDX-License-Identifier:\s*([A-Za-z0-9.+() -]+?)\s*(\*/)?\s*$`)

// classify names the licenses in a license file's text.
func classify(text string) ([]string, error) {
	for _, line := range strings.Split(text, "\n") {
		if m := spdxLine.FindStringSubmatch(line); m != nil {
			return []string{m[1]}, nil
		}
	}
	t := strings.ToLower(strings.Join(strings.Fields(text), " "))
	var ids []string
	if strings.Contains(t, "apache license") && strings.Contains(t, "version 2.0") {
		ids = append(ids, "Apache-2.0")
	}
	if strings.Contains(t, "permission is hereby granted, free of charge") {
		ids = append(ids, "MIT")
	}
	if strings.Contains(t, "redistribution and use in source and binary forms") {
		if strings.Contains(t, "endorse or promote products") {
			ids = append(ids, "BSD-3-Clause")
		} else {
			ids = append(ids, "BSD-2-Clause")
		}
	}
	if strings.Contains(t, "permission to use, copy, modify, and/or distribute this software for any purpose") {
		ids = append(ids, "ISC")
	}
	if strings.Contains(t, "mozilla public license") {
		ids = append(ids, "MPL-2.0")
	}
	if strings.Contains(t, "dedicated to the public domain") && strings.Contains(t, "sqlite") {
		ids = append(ids, "blessing")
	}
	if len(ids) == 0 {
		return nil, errors.New("no license recognised")
	}
	sort.Strings(ids)
	return ids, nil
}

// copyrightNotice matches a line that states a copyright (not one that
// talks about "the above copyright notice").
var copyrightNotice = regexp.MustCompile(`(?i)^\s*(copyright\s*(\(c\)|©|[0-9]{4})|\(c\)\s*[0-9]{4})`)

func copyrightLines(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if copyrightNotice.MatchString(line) {
			out = append(out, strings.Join(strings.Fields(line), " "))
		}
	}
	return out
}

func uniq(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// expression is the SPDX expression of memwho and everything linked.
func expression(comps []component) string {
	set := map[string]bool{"Apache-2.0": true}
	for _, c := range comps {
		for _, l := range c.licenses {
			for _, part := range strings.Split(l, " AND ") {
				set[part] = true
			}
		}
	}
	var parts []string
	for p := range set {
		if strings.Contains(p, " OR ") {
			p = "(" + p + ")"
		}
		parts = append(parts, p)
	}
	sort.Strings(parts)
	return strings.Join(parts, " AND ")
}

// debianName is the DEP-5 short name of an SPDX expression: Debian
// calls the MIT license Expat and writes "or" and "and" in lower case.
func debianName(spdx string) string {
	r := strings.NewReplacer("MIT", "Expat", " OR ", " or ", " AND ", " and ", "blessing", "public-domain", "GPL-2.0-only", "GPL-2", "BSD-3-Clause", "BSD-3-clause", "BSD-2-Clause", "BSD-2-clause")
	return r.Replace(spdx)
}

const apacheNotice = `Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.

On Debian systems, the complete text of the Apache License, Version 2.0,
is in /usr/share/common-licenses/Apache-2.0. The rpm package carries it as
LICENSE beside this file (/usr/share/licenses/memwho/LICENSE).`

// commonLicense is the body of a license that Debian keeps in
// /usr/share/common-licenses: a copyright file names it there rather
// than repeating it (lintian's copyright-file-contains-full-*-license).
type commonLicense struct {
	start, end *regexp.Regexp // first and last line of the body
	sha256     string         // of the body, whitespace collapsed
	ref        string         // what stands in its place
}

var commonLicenses = []commonLicense{
	{
		start:  regexp.MustCompile(`(?m)^\s*Apache License\s*\n\s*Version 2\.0, January 2004\s*$`),
		end:    regexp.MustCompile(`(?m)^\s*END OF TERMS AND CONDITIONS\s*$`),
		sha256: apacheSHA256,
		ref:    "[The Apache License, Version 2.0: /usr/share/common-licenses/Apache-2.0 on Debian systems; LICENSE beside this file in the rpm (/usr/share/licenses/memwho/LICENSE).]",
	},
	{
		// To the end of the file: the license and its appendix.
		start:  regexp.MustCompile(`(?m)^\s*GNU GENERAL PUBLIC LICENSE\s*\n\s*Version 2, June 1991\s*$`),
		sha256: gpl2SHA256,
		ref:    "[The GNU General Public License, version 2: /usr/share/common-licenses/GPL-2 on Debian systems.]",
	},
}

// The bodies as Debian's /usr/share/common-licenses holds them (and as
// the modules carry them), whitespace collapsed: a body that differs is
// kept whole.
const (
	apacheSHA256 = "59d8f0ba87ad9a2f1a431123c8d16646e5b89ba53653e818f16d136d77263c99"
	gpl2SHA256   = "29aca396a145fe071fdbe77a984128ac894c96731cff188c4f9c24c251641bd8"
)

// shorten replaces the bodies of common licenses in text by a reference;
// a body that differs from the common one is an error, for a person to
// read.
func shorten(text string) (string, error) {
	for _, l := range commonLicenses {
		loc := l.start.FindStringIndex(text)
		if loc == nil {
			continue
		}
		end := len(text)
		if l.end != nil {
			e := l.end.FindStringIndex(text[loc[0]:])
			if e == nil {
				return "", fmt.Errorf("the license starting %q has no end", strings.TrimSpace(text[loc[0]:loc[1]]))
			}
			end = loc[0] + e[1]
		}
		body := strings.Join(strings.Fields(text[loc[0]:end]), " ")
		if sum := fmt.Sprintf("%x", sha256.Sum256([]byte(body))); sum != l.sha256 {
			return "", fmt.Errorf("the license starting %q is not the common text (sha256 %s of its words, want %s)", strings.TrimSpace(text[loc[0]:loc[1]]), sum, l.sha256)
		}
		text = text[:loc[0]] + l.ref + text[end:]
	}
	return text, nil
}

// dep5 writes the copyright file.
func dep5(comps []component) string {
	var b strings.Builder
	b.WriteString(`Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: memwho
Upstream-Contact: memwho maintainers <memwho@users.noreply.github.com>
Source: https://github.com/memwho/memwho
Comment: Generated by tools/pkg/notices from the modules linked into
 /usr/bin/memwho and /usr/bin/memwho-agent (static binaries): each Files
 paragraph below is one of them, its pattern relative to the source tree
 after "go mod vendor", with the module's own license text.

Files: *
Copyright: 2026 The memwho Authors
License: Apache-2.0

`)
	for _, c := range comps {
		fmt.Fprintf(&b, "Files: %s\n", c.pattern)
		copyright := c.copyright
		if len(copyright) == 0 {
			copyright = []string{"the authors of " + c.name + " (the license file names no holder)"}
		}
		fmt.Fprintf(&b, "Copyright: %s\n", strings.Join(copyright, "\n "))
		var names []string
		for _, l := range c.licenses {
			names = append(names, debianName(l))
		}
		names = uniq(names)
		lic := strings.Join(names, " and ")
		if len(names) > 1 {
			lic = "(" + strings.Join(names, ") and (") + ")"
		}
		fmt.Fprintf(&b, "License: %s\n", lic)
		for i, f := range c.files {
			if i > 0 {
				b.WriteString(" .\n")
			}
			fmt.Fprintf(&b, " ---- %s ----\n .\n", f.name)
			b.WriteString(indent(f.text))
		}
		fmt.Fprintf(&b, "Comment: %s %s, with the text of each of its license and notice files.\n\n", c.name, c.version)
	}
	b.WriteString("License: Apache-2.0\n")
	b.WriteString(indent(apacheNotice))
	return b.String()
}

// indent formats text as a DEP-5 continuation: each line after one
// space, an empty line as " .".
func indent(text string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		line = strings.TrimRight(line, " \t")
		if line == "" {
			b.WriteString(" .\n")
			continue
		}
		b.WriteString(" " + line + "\n")
	}
	return b.String()
}
