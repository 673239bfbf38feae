package cli

import (
	"flag"
	"strings"
)

// Habit is a flag people bring from ps_mem or smem that memwho spells
// otherwise, or has no room for: when a command line holds it and
// memwho does not take it, the hint says what to use instead.
type Habit struct {
	// Flag is as typed: "-w", "-m".
	Flag string
	// Hint is what memwho offers instead.
	Hint string
}

// Suggest returns the candidate nearest to word by edit distance
// (insertions, deletions, substitutions and swaps of two neighbouring
// characters, case ignored), when it is near enough to be a typo: at
// most one edit for words of up to four characters, two up to eight,
// three beyond; "" otherwise.
func Suggest(word string, candidates []string) string {
	best, bestD := "", 1<<30
	limit := 1
	switch n := len(word); {
	case n > 8:
		limit = 3
	case n > 4:
		limit = 2
	}
	for _, c := range candidates {
		if d := distance(strings.ToLower(word), strings.ToLower(c)); d <= limit && d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the optimal string alignment distance of a and b, in
// bytes.
func distance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// flagNames are the names of fs's flags as typed (-p, --system).
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, dashed(f.Name)) })
	return names
}

// UnknownCommand is the usage error for a command name memwho does not
// have, with the nearest of commands when it looks like a typo of one.
func UnknownCommand(name string, commands []Command) error {
	var names []string
	for _, c := range commands {
		names = append(names, c.Name)
	}
	if s := Suggest(name, names); s != "" {
		return Usagef("unknown command %q (did you mean %s?)", name, s)
	}
	return Usagef("unknown command %q", name)
}
