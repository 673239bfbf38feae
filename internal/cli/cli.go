// Package cli holds the command-line conventions every memwho command
// shares, so that they are spelled once: a usage error (exit code 2)
// against any other failure (exit code 1), how flags are parsed (--help
// on standard output, one error line otherwise), flags set from the
// environment, and the values flags take: sizes (64MiB), durations with
// days (30d), points in time (RFC 3339, a date, or "24h" ago) and
// regular expressions; and the version the binary reports.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"
)

// UsageError is a mistake on the command line: the command exits with
// code 2 and a hint to read the help.
type UsageError struct {
	Msg string
	// Command, when set, is the subcommand whose --help the hint names
	// ("watch": memwho watch --help); else memwho --help, the report's.
	Command string
	// Hint, when set, is said before the pointer to --help: what to
	// type instead (a ps_mem or smem habit).
	Hint string
}

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// flagError rewords the flag package's errors as memwho's others read:
// the flag as it is typed (--top, not -top) first, then what is wrong.
// "flag provided but not defined: -bogus" becomes "unknown flag
// --bogus", "invalid value "abc" for flag -top: parse error" becomes
// "--top: invalid value "abc"". Anything else is left as it is.
func flagError(msg string) string {
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag " + dashed(name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return dashed(name) + ": needs a value"
	}
	// The value is quoted (%q): read it whole, with strconv, since a
	// value may itself hold " for flag -" (--top 'x" for flag -p: y'
	// would read as an error of -p).
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		// invalid value "V" for flag -NAME: REASON
		if value, err := strconv.QuotedPrefix(rest); err == nil {
			if tail, ok := strings.CutPrefix(rest[len(value):], " for flag -"); ok {
				name, reason, _ := strings.Cut(tail, ": ")
				switch reason {
				case "parse error":
					reason = "not a number"
				case "value out of range":
					reason = "out of range"
				}
				if reason == "" {
					return dashed(name) + ": invalid value " + value
				}
				return dashed(name) + ": invalid value " + value + ": " + reason
			}
		}
	}
	if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		// invalid boolean value "V" for -NAME: REASON
		if value, err := strconv.QuotedPrefix(rest); err == nil {
			if tail, ok := strings.CutPrefix(rest[len(value):], " for -"); ok {
				name, _, _ := strings.Cut(tail, ": ")
				return dashed(name) + ": invalid value " + value + ": want true or false (or the flag alone)"
			}
		}
	}
	return msg
}

// FlagError is the usage error for an error of flag.FlagSet.Parse,
// reworded by flagError, for commands that call Parse themselves
// (the flag package's "flag provided but not defined: -bogus" beside
// every other command's "unknown flag --bogus").
func FlagError(err error) *UsageError {
	return &UsageError{Msg: flagError(err.Error())}
}

// ErrHelp is --help: the usage was printed to standard output, and the
// command exits 0.
var ErrHelp = errors.New("help requested")

// NewFlagSet returns the flag set of a subcommand. It prints nothing
// itself: Parse turns its errors into one usage error line, and --help
// into the usage on standard output.
func NewFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// Parse parses a subcommand's arguments. --help (or -h) prints usage to
// stdout and returns ErrHelp; a bad flag or a stray argument is a usage
// error. An unknown flag names the nearest of fs's when it looks like a
// typo of one ("did you mean --system?"), and a flag of habits, or one
// of them given without its value, gets the habit's hint.
func Parse(fs *flag.FlagSet, usage string, args []string, stdout io.Writer, habits ...Habit) error {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, usage)
			return ErrHelp
		}
		ue := FlagError(err)
		msg := err.Error()
		name, unknown := strings.CutPrefix(msg, "flag provided but not defined: -")
		if !unknown {
			name, _ = strings.CutPrefix(msg, "flag needs an argument: -")
		}
		for _, h := range habits {
			if h.Flag == "-"+name || h.Flag == "--"+name {
				ue.Hint = h.Hint
				return ue
			}
		}
		// A one-letter flag is a letter away from every other: no guess.
		if unknown && len(name) > 1 {
			if s := Suggest(dashed(name), flagNames(fs)); s != "" {
				ue.Msg += " (did you mean " + s + "?)"
			}
		}
		return ue
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// NoEmpty returns a usage error for the first of the named flags that
// the command line gave an empty value. For these an empty value would
// mean the flag's absence: every process for -p "$(pgrep app)" when app
// is not running, a live walk for --from "$UNSET", the snapshot on the
// terminal for -o "". ps_mem refuses an empty -p too.
func NoEmpty(fs *flag.FlagSet, names ...string) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err != nil || f.Value.String() != "" || !slices.Contains(names, f.Name) {
			return
		}
		err = Usagef("%s: empty (an unset variable, or a command that printed nothing?)", dashed(f.Name))
	})
	return err
}

// Excludes returns a usage error when flag name was given together with
// any of others (each a flag's name as fs knows it), for a flag whose
// meaning leaves the others nothing to do: they were silently ignored
// (memwho --from FILE --proc DIR showed the file; -t --system dropped
// the ledger).
// why, when not empty, says why.
func Excludes(fs *flag.FlagSet, name, why string, others ...string) error {
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) {
		// A boolean flag given as false (-t=false, --fast=false, as
		// a script writes --fast=$FAST) asks for nothing, and is not
		// refused as if given.
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() && f.Value.String() == "false" {
			return
		}
		set[f.Name] = true
	})
	if !set[name] {
		return nil
	}
	for _, o := range others {
		if set[o] {
			if why != "" {
				return Usagef("%s excludes %s: %s", dashed(name), dashed(o), why)
			}
			return Usagef("%s excludes %s", dashed(name), dashed(o))
		}
	}
	return nil
}

// dashed is a flag's name as a user types it: -p, --from.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// EnvName is the environment variable that sets flag name: MEMWHO_ and
// the name in capitals with - as _.
func EnvName(name string) string {
	return "MEMWHO_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// ApplyEnv sets every flag of fs that has an environment variable. Call
// it before Parse, so that the command line wins.
func ApplyEnv(fs *flag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil {
			return
		}
		env := EnvName(f.Name)
		// An empty variable counts as unset, as in most tools.
		if v, ok := os.LookupEnv(env); ok && v != "" {
			if e := f.Value.Set(v); e != nil {
				err = Usagef("%s=%q: %v", env, v, e)
			}
		}
	})
	return err
}

// ParseSize parses a byte count with an optional binary unit: 512, 4KiB,
// 64MiB, 1GiB, 1TiB (K, M, G, T, KB, MB, ... are taken as binary too).
func ParseSize(s string) (int64, error) {
	// "I" too: the units are read in any case, and without it "1TI"
	// and "1KIB" were refused while "1ti" and "1kib" were not.
	// (FuzzParseSize.)
	num := strings.TrimRight(s, "BbIiKMGTkmgt")
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err == nil && !plainDecimal(strings.TrimSpace(num)) {
		// ParseFloat also reads "1e3", "0x1p4", "inf" and "1_0":
		// spellings no size in our docs uses, refused so that a
		// typo is not taken for a number.
		err = strconv.ErrSyntax
	}
	// !(n >= 0) refuses NaN too: ParseFloat reads "nan", and int64 of
	// NaN is -2^63. (Seen reading the code for FuzzParseSize's find
	// below; "NaN" is now one of its seeds.)
	if err != nil || !(n >= 0) {
		return 0, fmt.Errorf("bad size %q (want a number with B, KiB, MiB, GiB or TiB)", s)
	}
	// The units spelled out: trimming "B" and "i" off whatever letters
	// the number ended with took "0i", "5iB" and "5bB" for bytes.
	// (FuzzParseSize.)
	sh, ok := sizeUnits[strings.ToUpper(s[len(num):])]
	if !ok {
		return 0, fmt.Errorf("bad size unit in %q (want B, KiB, MiB, GiB or TiB)", s)
	}
	v := n * float64(uint64(1)<<sh)
	if v >= 1<<62 {
		return 0, fmt.Errorf("size %q too large", s)
	}
	return int64(v), nil
}

// plainDecimal reports whether s is digits with at most one decimal
// point among them: "5", "1.5", "0.25", not "+5", ".5", "5." or "1e3".
func plainDecimal(s string) bool {
	whole, frac, dot := strings.Cut(s, ".")
	return digits(whole) && (!dot || digits(frac))
}

// digits reports whether s is one or more ASCII digits and nothing else:
// no sign, space or underscore, which strconv.Atoi would take or skip.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// sizeUnits are ParseSize's units, upper-cased, and their shifts.
var sizeUnits = map[string]uint{
	"": 0, "B": 0,
	"K": 10, "KB": 10, "KI": 10, "KIB": 10,
	"M": 20, "MB": 20, "MI": 20, "MIB": 20,
	"G": 30, "GB": 30, "GI": 30, "GIB": 30,
	"T": 40, "TB": 40, "TI": 40, "TIB": 40,
}

// ParseDays parses a Go duration or a whole number of days ("30d"); "0"
// is zero.
func ParseDays(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		// time.ParseDuration and strconv.Atoi take a leading "+";
		// nothing in the docs writes one. A "-" too: "-1h" is
		// negative, and "-0s" and "-0h" must not be taken where
		// "-0d" is refused.
		return 0, fmt.Errorf("bad duration %q (want 90s, 15m, 12h or 30d)", s)
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || !digits(d) || n < 0 || n > 100*365 {
			return 0, fmt.Errorf("bad number of days %q", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration %q (want 90s, 15m, 12h or 30d)", s)
	}
	return d, nil
}

// ParseTime reads an RFC 3339 time, a date (midnight UTC) or a duration
// before now ("90m", "24h", "7d"), truncated to the millisecond the
// history stores.
func ParseTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		// Truncated too: "…T12:00:00.0005Z" came back with its
		// microseconds, a bound finer than any stored time, so the
		// row at 12:00:00.000 fell outside --since. (FuzzParseTime.)
		return t.Truncate(time.Millisecond), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	d, err := parseAgo(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time, a date (YYYY-MM-DD) nor a duration like 24h or 7d", s)
	}
	return now.Add(-d).Truncate(time.Millisecond), nil
}

// parseAgo is time.ParseDuration plus whole days ("7d"), never negative.
func parseAgo(s string) (time.Duration, error) {
	if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		// As in ParseDays: no sign. time.ParseDuration took "+1h" and
		// "-0s" for --since and --to, which --keep and --window
		// refuse.
		return 0, errors.New("a sign")
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return 0, err
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		err = errors.New("negative duration")
	}
	return d, err
}

// CompileFilter compiles a --filter regular expression; a bad one is a
// usage error described on one line (the code and the offending part).
func CompileFilter(expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		msg := err.Error()
		var se *syntax.Error
		if errors.As(err, &se) {
			msg = fmt.Sprintf("%s in %q", se.Code, se.Expr)
		}
		return nil, Usagef("--filter: bad regular expression: %s", msg)
	}
	return re, nil
}

// Seconds is a flag.Value for a refresh interval: a bare number is
// seconds, as in watch(1), top and vmstat; a Go duration (500ms, 1m)
// works too.
type Seconds time.Duration

func (d *Seconds) String() string { return time.Duration(*d).String() }

// Set parses the flag's value.
func (d *Seconds) Set(s string) error {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if !(v > 0 && v <= 1e6) { // NaN fails too
			return errors.New("want a positive number of seconds (2, 0.5) or a duration (500ms, 1m)")
		}
		*d = Seconds(time.Duration(v * float64(time.Second)))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want seconds (2, 0.5) or a duration (500ms, 1m)")
	}
	*d = Seconds(v)
	return nil
}

// OneLine keeps a message on one line for "memwho: error:" and
// "memwho: warning:" lines: errors can quote user input and process
// names, and a newline or a control character in them could forge a
// line of their own or drive the terminal.
func OneLine(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n':
			b = append(b, `\n`...)
		case c < 0x20 || c == 0x7f:
			b = append(b, fmt.Sprintf(`\x%02x`, c)...)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// GroupID resolves a group flag (flagName, for the error): a name from
// the group database or a number; "" is -1, the process's own group.
func GroupID(flagName, name string) (int, error) {
	if name == "" {
		return -1, nil
	}
	if n, err := strconv.Atoi(name); err == nil && n >= 0 {
		return n, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return -1, Usagef("%s: %v", flagName, err)
	}
	n, err := strconv.Atoi(g.Gid)
	if err != nil {
		return -1, Usagef("%s: group %s has gid %q", flagName, name, g.Gid)
	}
	return n, nil
}

// ParseArgs is Parse for a command that takes exactly n arguments after
// its flags (memwho diff A B): it returns them, and a usage error naming
// what is missing or extra.
func ParseArgs(fs *flag.FlagSet, usage string, args []string, stdout io.Writer, n int, what string) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, usage)
			return nil, ErrHelp
		}
		return nil, FlagError(err)
	}
	if fs.NArg() != n {
		return nil, Usagef("want %s (flags first), got %d argument(s)", what, fs.NArg())
	}
	return fs.Args(), nil
}
