package main

import (
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/memwho/memwho/internal/agent"
	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/manpage"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/snapshot"
	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/watch"
)

// docDir is where the packages install docs/*.md (scripts/package.sh):
// the pages name the documents there.
const docDir = "/usr/share/doc/memwho"

// exitStatus is every command's EXIT STATUS, from internal/cli's codes.
func exitStatus() []manpage.Item {
	return []manpage.Item{
		{Term: strconv.Itoa(cli.ExitOK), Text: "Success (also for --help)."},
		{Term: strconv.Itoa(cli.ExitFailure), Text: "The command could not do its work; one line on standard error, \"memwho: error: ...\", says why. A file it was writing is left as it was."},
		{Term: strconv.Itoa(cli.ExitUsage), Text: "The command line was wrong (an unknown command or flag, a bad value); a hint names the --help to read."},
		{Term: "128+N", Text: "Ended by signal N (130 for SIGINT), as the shell reports it."},
	}
}

// has reports whether a page's flags include name.
func has(flags []manpage.Flag, name string) bool {
	for _, f := range flags {
		if slices.Contains(f.Names, name) {
			return true
		}
	}
	return false
}

// environment is the ENVIRONMENT section of a page with these flags:
// the variables memwho reads (the colour switches, the history's
// default, ssh-agent) and, for serve, the one per flag (cli.ApplyEnv).
func environment(page string, flags []manpage.Flag) []manpage.Item {
	var items []manpage.Item
	if page == "memwho" || page == "memwho-watch" {
		items = append(items,
			manpage.Item{Term: "NO_COLOR", Text: "Any value but the empty one turns colours off (https://no-color.org)."},
			manpage.Item{Term: "TERM", Text: "dumb turns colours off."})
	}
	if has(flags, "--db") {
		items = append(items,
			manpage.Item{Term: "MEMWHO_DB", Text: "The history database when --db is not given."},
			manpage.Item{Term: "XDG_STATE_HOME", Text: "For a user other than root, the default database is $XDG_STATE_HOME/memwho/history.db, else ~/.local/state/memwho/history.db."})
	}
	if has(flags, "--identity") {
		items = append(items, manpage.Item{Term: "SSH_AUTH_SOCK", Text: "The ssh-agent whose keys --upload uses when --identity is not given."})
	}
	if page == "memwho-serve" {
		for _, f := range flags {
			for _, n := range f.Names {
				if len(n) > 2 && n[:2] == "--" {
					items = append(items, manpage.Item{Term: cli.EnvName(n[2:]), Text: "Sets " + n + " (the command line wins; an empty value counts as unset)."})
				}
			}
		}
	}
	return items
}

// filesSection is the FILES section of a page with these flags.
func filesSection(page string, flags []manpage.Flag) []manpage.Item {
	var items []manpage.Item
	if page == "memwho" {
		items = append(items, manpage.Item{Term: "/usr/bin/memwho", Text: "root:memwho, mode 0750, with the file capabilities cap_sys_ptrace and cap_dac_read_search (as the packages and make install-privileged install it): the members of the group memwho run it and see every process's exact figures; others cannot run it."})
	}
	if has(flags, "--agent-socket") {
		items = append(items, manpage.Item{Term: snapshot.DefaultSocket, Text: "memwho-agent serve's latest snapshot, read instead of walking every process when the agent runs and its group lets you."})
	}
	if has(flags, "--socket") {
		items = append(items,
			manpage.Item{Term: agent.DefaultSocket, Text: "The metrics socket, mode 0660: its owner and group read the figures."},
			manpage.Item{Term: "/usr/lib/systemd/system/memwho.service", Text: "The unit that runs the agent as the user memwho with the two capabilities."})
	}
	if has(flags, "--db") {
		items = append(items,
			manpage.Item{Term: "/var/lib/memwho/history.db", Text: "The default history for root, and the one memwho-record.service writes (as the user memwho, mode 0600, in a directory memwho:memwho 0750)."},
			manpage.Item{Term: "~/.local/state/memwho/history.db", Text: "The default history for any other user."})
	}
	switch page {
	case "memwho-record":
		items = append(items, manpage.Item{Term: "/usr/lib/systemd/system/memwho-record.service", Text: "The unit that records every minute into /var/lib/memwho/history.db."})
	case "memwho-export":
		items = append(items, manpage.Item{Term: "/usr/lib/systemd/system/memwho-export.service, memwho-export.timer", Text: "The units that upload the previous hour every hour."})
	}
	return append(items, manpage.Item{Term: docDir + "/", Text: "The documents these pages point to (the packages install them)."})
}

// valueWords are the words a flag's value may be, by flag name, from the
// packages that parse them; a flag's completion offers those its help
// text names (report's --sort lists fewer columns than watch's; serve's
// --by has no pid). -u/--user completes user names.
func valueWords() map[string][]string {
	var by, sorts, kinds []string
	for b := sample.ByProgram; b <= sample.ByContainer; b++ {
		by = append(by, b.String())
	}
	for k := watch.SortKey(sample.SortRAM); k <= watch.SortConns; k++ {
		sorts = append(sorts, k.String())
	}
	for k := store.KindProcess; k <= store.KindContainer; k++ {
		kinds = append(kinds, k.String())
	}
	return map[string][]string{
		"--by":     by,
		"--sort":   sorts,
		"--kind":   kinds,
		"--groups": append(kinds, "none"),
	}
}

// flagValues returns the values flag f of a help text completes with.
func flagValues(f manpage.Flag) (values []string, users bool) {
	if slices.Contains(f.Names, "--user") {
		return nil, true
	}
	words := strings.FieldsFunc(f.Help, func(r rune) bool { return !unicode.IsLetter(r) })
	for _, n := range f.Names {
		for _, v := range valueWords()[n] {
			if slices.Contains(words, v) && !slices.Contains(values, v) {
				values = append(values, v)
			}
		}
	}
	return values, false
}
