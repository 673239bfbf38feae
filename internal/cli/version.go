package cli

import (
	"fmt"
	"io"
	"runtime/debug"
)

// Version is what "memwho --version" prints: set, the version a release
// build set with -ldflags "-X main.version=...", when not empty; else
// the module version Go recorded; else, for a local build ("(devel)"),
// the commit Go stamped (see develVersion).
func Version(set string) string {
	if set != "" {
		return set
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return develVersion(bi.Settings)
}

// develVersion formats the VCS stamp of a local build, e.g.
// "devel-3dce945c1a2b+dirty (2026-11-23)": the first 12 characters of
// vcs.revision, "+dirty" when vcs.modified is true, and the date of
// vcs.time (the commit's time, UTC). Without a revision (built with
// -buildvcs=false, outside a git work tree, or in a linked worktree,
// whose .git is a file go build does not recognise) it is "(devel)".
func develVersion(settings []debug.BuildSetting) string {
	var rev, modified, when string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		case "vcs.time":
			when = s.Value
		}
	}
	if rev == "" {
		return "(devel)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "devel-" + rev
	if modified == "true" {
		v += "+dirty"
	}
	if len(when) >= len("2006-01-02") {
		v += " (" + when[:len("2006-01-02")] + ")"
	}
	return v
}

// PrintVersion is the version command of binary name ("memwho"): it
// prints "NAME VERSION", or with --help (-h) its usage; any other
// argument is a usage error. It printed the version whatever followed,
// --help included.
func PrintVersion(name, version string, args []string, stdout io.Writer) error {
	fs := NewFlagSet(name + " version")
	usage := "Usage: " + name + " version\n\nPrints " + name + "'s version: a release's tag, or for a build from a\nchecked-out tree the commit it was built from (+dirty when the tree had\nchanges). " + name + " --version prints the same.\n"
	if err := Parse(fs, usage, args, stdout); err != nil {
		if ue, ok := err.(*UsageError); ok {
			ue.Command = "version"
		}
		return err
	}
	_, err := fmt.Fprintln(stdout, name, version)
	return err
}
