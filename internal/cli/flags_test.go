package cli

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

// The command line's checks (NoEmpty, Excludes, flagError,
// UsageError.Command; rows in docs/safe.md).

// reportLikeFlags is a flag set shaped as the report's: -p and --pid one
// string, --from, --proc, -t and --total one bool, --system, --fast,
// --fresh, --top, --json and -n (Seconds).
func reportLikeFlags() *flag.FlagSet {
	fs := NewFlagSet("memwho")
	var pids, from, proc string
	var total, system, fast, fresh, json bool
	var top int
	n := 2 * time.Second
	fs.StringVar(&pids, "p", "", "")
	fs.StringVar(&pids, "pid", "", "")
	fs.StringVar(&from, "from", "", "")
	fs.StringVar(&proc, "proc", "/proc", "")
	fs.BoolVar(&total, "t", false, "")
	fs.BoolVar(&total, "total", false, "")
	fs.BoolVar(&system, "system", false, "")
	fs.BoolVar(&fast, "fast", false, "")
	fs.BoolVar(&fresh, "fresh", false, "")
	fs.BoolVar(&json, "json", false, "")
	fs.IntVar(&top, "top", 0, "")
	fs.Var((*Seconds)(&n), "n", "")
	return fs
}

// TestNoEmptyValues: every spelling of an empty value is refused, and
// the last of repeated flags decides (as the flag package's value).
func TestNoEmptyValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for no error
	}{
		{[]string{"-p", ""}, "-p: empty"},
		{[]string{"--pid="}, "--pid: empty"},
		{[]string{"-p="}, "-p: empty"},
		{[]string{"--p", ""}, "-p: empty"},
		{[]string{"-pid", ""}, "--pid: empty"},
		{[]string{"--pid", "1", "-p", ""}, "-p: empty"}, // the last is empty
		{[]string{"-p", "", "--pid", "1"}, ""},          // the last is not
		{[]string{"--from", "x", "--from", ""}, "--from: empty"},
		{[]string{"--from", "", "--from", "x"}, ""},
		{[]string{"--proc="}, "--proc: empty"},
		{[]string{"-p", " "}, ""}, // not empty: ParsePIDs refuses it
		{[]string{"--top", "0"}, ""},
		{nil, ""},
	} {
		fs := reportLikeFlags()
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		err := NoEmpty(fs, "p", "pid", "from", "proc")
		var ue *UsageError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v, want no error", tc.args, err)
		case tc.want != "" && (err == nil || !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%q: %v, want a usage error %q", tc.args, err, tc.want)
		}
	}
}

// TestFlagExcludes: -t excludes --system, --from excludes --proc and
// --fast; a boolean given as false (-t=false, --fast=$FAST with FAST
// false) asks for nothing and is not refused. BROKE before the fix:
// memwho -t=false --system was "-t excludes --system".
func TestFlagExcludes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "--system"}, "-t excludes --system"},
		{[]string{"--system", "-t"}, "-t excludes --system"},
		{[]string{"-t=false", "--system"}, ""},
		{[]string{"-t", "--system=false"}, ""},
		{[]string{"-t", "--system=0"}, ""},
		{[]string{"--total=true", "--system=true"}, "--total excludes --system"},
		{[]string{"--from", "f", "--fast=false"}, ""},
		{[]string{"--from", "f", "--fast"}, "--from excludes --fast"},
		{[]string{"--from", "f", "--proc", "/proc"}, "--from excludes --proc"},
		{[]string{"--from", "f", "--fresh"}, ""},
		{[]string{"--proc", "/x", "--fast"}, ""},
	} {
		fs := reportLikeFlags()
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		var err error
		for _, name := range []string{"t", "total"} {
			if err == nil {
				err = Excludes(fs, name, "", "system")
			}
		}
		if err == nil {
			err = Excludes(fs, "from", "", "proc", "fast")
		}
		var ue *UsageError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v, want no error", tc.args, err)
		case tc.want != "" && (err == nil || !errors.As(err, &ue) || err.Error() != tc.want):
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestFlagErrorHostile: a value is quoted by the flag package,
// and a value holding " for flag -" or " for -" named another flag
// (--top 'x" for flag -p: y' read "-p: invalid value"). BROKE before the
// fix. Every message stays one line through Exit, exit 2.
func TestFlagErrorHostile(t *testing.T) {
	long := strings.Repeat("9", 5000)
	for _, tc := range []struct {
		args   []string
		prefix string // the error's start
	}{
		{[]string{"--top", `x" for flag -p: parse error`}, `--top: invalid value "x\" for flag -p: parse error": not a number`},
		{[]string{"--top", `" for flag -`}, `--top: invalid value "\" for flag -": not a number`},
		{[]string{"--json=x\" for -system: z"}, `--json: invalid value "x\" for -system: z": want true or false`},
		{[]string{"-n", `x" for flag -top: parse error`}, `-n: invalid value "x\" for flag -top: parse error": want seconds`},
		{[]string{"--top", "a\nb"}, `--top: invalid value "a\nb": not a number`},
		{[]string{"--top", "\xff\xfe"}, `--top: invalid value "\xff\xfe": not a number`},
		{[]string{"--top", "\x00"}, `--top: invalid value "\x00": not a number`},
		{[]string{"--top", long}, `--top: invalid value "` + long + `": out of range`},
		{[]string{"--top", "\u202e1"}, `--top: invalid value "\u202e1": not a number`},
		{[]string{"--bo\ngus"}, "unknown flag --bo\ngus"},
		{[]string{"-\x1b[31m"}, "unknown flag --\x1b[31m"},
		{[]string{"--top"}, "--top: needs a value"},
		{[]string{"---x"}, "bad flag syntax: ---x"},
	} {
		fs := reportLikeFlags()
		err := Parse(fs, "usage", tc.args, &bytes.Buffer{})
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), tc.prefix) {
			t.Errorf("%q: %v, want a usage error starting %q", tc.args, err, tc.prefix)
			continue
		}
		var stderr bytes.Buffer
		if code := Exit(err, &stderr); code != ExitUsage {
			t.Errorf("%q: exit %d", tc.args, code)
		}
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if len(lines) != 2 || lines[1] != "memwho: hint: see 'memwho --help'" {
			t.Errorf("%q: not one error line and the hint: %q", tc.args, stderr.String())
		}
		for _, c := range lines[0] {
			if c < 0x20 || c == 0x7f {
				t.Errorf("%q: control character %q in %q", tc.args, c, lines[0])
			}
		}
	}
	// flagError itself on messages the flag package never writes.
	for _, tc := range []struct{ in, want string }{
		{`invalid value "unterminated for flag -top: x`, `invalid value "unterminated for flag -top: x`},
		{`invalid value "" for flag -top: parse error`, `--top: invalid value "": not a number`},
		{`invalid value x for flag -top: y`, `invalid value x for flag -top: y`},
		{`invalid boolean value "a" for -`, `--: invalid value "a": want true or false (or the flag alone)`},
		{`invalid value "v"`, `invalid value "v"`},
	} {
		if got := flagError(tc.in); got != tc.want {
			t.Errorf("flagError(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestUsageCommand: the hint names the command set, else the
// report's --help; FlagError is a usage error.
func TestUsageCommand(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&UsageError{Msg: "x", Command: "watch"}, "memwho: hint: see 'memwho watch --help'"},
		{&UsageError{Msg: "x"}, "memwho: hint: see 'memwho --help'"},
		{errors.Join(&UsageError{Msg: "a\x00b", Command: "diff"}, errors.New("drop\nfailed")), "memwho: hint: see 'memwho diff --help'"},
		{FlagError(errors.New("flag provided but not defined: -bogus")), "memwho: hint: see 'memwho --help'"},
	} {
		var b bytes.Buffer
		if code := Exit(tc.err, &b); code != ExitUsage {
			t.Errorf("%v: exit %d", tc.err, code)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if len(lines) != 2 || lines[1] != tc.want {
			t.Errorf("%v: %q, want one error line and %q", tc.err, b.String(), tc.want)
		}
	}
}
