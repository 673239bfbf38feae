package sample

import (
	"bytes"
	"strings"
)

// ProgramName chooses the name a process is grouped under by default.
// The rules, in order (documented in the README):
//
//  1. An interpreter running a script is named "SCRIPT [INTERPRETER]",
//     for example "backup.sh [bash]" or "app.py [python3.11]", whether the
//     script was started through its #! line or as "python3 app.py".
//  2. When the executable's basename starts with the task name, the
//     basename is used: the kernel truncates task names to 15 bytes, the
//     link is not truncated.
//  3. When the parent runs the same executable, the executable's basename
//     is used, so helper processes that rename themselves ("Web Content"
//     under firefox) count with their program.
//  4. Otherwise the task name (comm) is used: the executable could not be
//     read (another user's process without privilege) or the process
//     chose its own name.
//
// Where the exe link cannot be read or is not a path (a memfd), the
// scan gives Exe the basename of argv[0] when the task name is a prefix
// of it (ExeFromCmdline), so rules 1 and 2 name the program as they
// would have from the link.
//
// A program whose executable was deleted or replaced since it started
// (an upgrade not yet restarted) gets " [deleted]" appended.
func ProgramName(p *Process, parentExe string) string {
	var name string
	switch {
	case p.Script != "" && p.Exe != "":
		name = p.Script + " [" + p.Exe + "]"
	case p.Exe != "" && strings.HasPrefix(p.Exe, p.Comm):
		name = p.Exe
	case p.Exe != "" && p.Exe == parentExe:
		name = p.Exe
	default:
		name = p.Comm
	}
	if p.ExeDeleted && p.Exe != "" {
		name += " [deleted]"
	}
	return name
}

// ExeBase turns the target of a /proc/PID/exe link into the executable's
// basename, and says whether the file was deleted or replaced since the
// process started. A link that is not a path to a file (a program run
// from a memfd, as container runtimes run their sealed binaries:
// "/memfd:runc_cloned:/proc/self/exe (deleted)", or anything not starting
// with "/") names nothing a person would know the program by: base is
// then nil, and the program is named as if the link could not be read
// (see ExeFromCmdline).
func ExeBase(link []byte) (base []byte, deleted bool) {
	if bytes.HasSuffix(link, []byte(" (deleted)")) {
		link = link[:len(link)-len(" (deleted)")]
		deleted = true
	}
	if len(link) == 0 || link[0] != '/' || bytes.HasPrefix(link, []byte("/memfd:")) {
		return nil, false
	}
	return basename(link), deleted
}

// ExeFromCmdline stands in for the executable's basename when the exe
// link gives none (another user's process read without privilege, a
// memfd): the basename of argv[0], when the task name is a prefix of it,
// as rule 2 of ProgramName asks of the link. So a program gets the same
// name whichever way it was read, as far as its command line tells: a
// python3.11 started as "/usr/bin/python3.11 app.py" is "app.py
// [python3.11]" either way. argv[0] holding a space or a colon is a title
// the program wrote over its command line ("postgres: checkpointer",
// "sshd: alice@pts/0"), not a file name, and is not used. It returns nil
// when nothing fits.
func ExeFromCmdline(comm string, cmdline []byte) []byte {
	argv0 := cmdline
	if i := bytes.IndexByte(argv0, 0); i >= 0 {
		argv0 = argv0[:i]
	}
	if len(argv0) == 0 || bytes.ContainsAny(argv0, " :") {
		return nil
	}
	base := basename(argv0)
	if comm == "" || len(base) == 0 || !bytes.HasPrefix(base, []byte(comm)) {
		return nil
	}
	return base
}

func basename(b []byte) []byte {
	if i := bytes.LastIndexByte(b, '/'); i >= 0 {
		return b[i+1:]
	}
	return b
}

// interpreters are executables that run a script named on their command
// line; the prefix match covers versioned names (python3.11, perl5.36).
var interpreters = []string{
	"python", "pypy", "perl", "ruby", "node", "nodejs", "php", "lua",
	"bash", "sh", "dash", "zsh", "ksh", "fish", "tclsh", "Rscript", "deno", "bun",
}

// IsInterpreter reports whether exe (a basename) is a script interpreter
// whose command line names the program (python3, bash, node...).
func IsInterpreter(exe string) bool {
	if exe == "" {
		return false
	}
	for _, i := range interpreters {
		if strings.HasPrefix(exe, i) {
			rest := exe[len(i):]
			// Accept "python", "python3", "python3.11", not "shred" or
			// "nodemon".
			if strings.Trim(rest, "0123456789.") == "" {
				return true
			}
		}
	}
	return false
}

// ScriptOf returns the basename of the script an interpreter runs, given
// its NUL-separated command line, or nil when it runs none (an
// interactive shell, "python3 -c ...", a REPL). For "python3 -m mod" it
// returns "mod".
//
// Short options may be combined ("sh -ec CODE", "bash -lc CODE", "python3
// -uc CODE", "perl -ne CODE"): a combination holding the interpreter's
// code option runs code given on the command line, and names no script,
// as the option alone does. An argument that cannot be a file's name (a
// newline, a shell separator, longer than a name may be) is code too:
// every distinct command string would otherwise become its own program.
func ScriptOf(exe string, cmdline []byte) []byte {
	fam := familyOf(exe)
	args := cmdline
	next := func() []byte {
		end := bytes.IndexByte(args, 0)
		if end < 0 {
			end = len(args)
		}
		arg := args[:end]
		if end < len(args) {
			args = args[end+1:]
		} else {
			args = nil
		}
		return arg
	}
	next() // argv[0] is the interpreter itself.
	for len(args) > 0 {
		arg := next()
		if len(arg) == 0 {
			continue
		}
		if arg[0] == '+' && fam.shell {
			// "bash +e script", "set +o name": options turned off.
			if bytes.ContainsAny(arg[1:], "oO") {
				next()
			}
			continue
		}
		if arg[0] != '-' {
			// A script read from an inherited descriptor has no name
			// worth showing ("bash /dev/fd/3").
			if bytes.HasPrefix(arg, []byte("/dev/fd/")) || bytes.HasPrefix(arg, []byte("/proc/self/fd/")) {
				return nil
			}
			return fileName(basename(arg))
		}
		switch string(arg) {
		case "-", "--eval", "--print", "--command":
			// Code on the command line or from stdin: no script.
			return nil
		case "--require", "--import", "--loader":
			// Options that take the next argument as their value.
			next()
			continue
		case "--":
			if len(args) == 0 {
				return nil
			}
			s := next()
			if len(s) == 0 {
				return nil
			}
			return fileName(basename(s))
		}
		if arg[1] == '-' {
			continue // any other long option: "--login", "-- norc"
		}
		// One or more short options: "-u", "-ec", "-Wignore".
		for i := 1; i < len(arg); i++ {
			c := arg[i]
			if strings.IndexByte(fam.code, c) >= 0 {
				return nil
			}
			if strings.IndexByte(fam.value, c) < 0 {
				continue
			}
			// The option's value is the rest of the argument, or the
			// next argument when nothing follows.
			val := arg[i+1:]
			if len(val) == 0 {
				val = next()
			}
			if c == 'm' && fam.module {
				if len(val) == 0 {
					return nil
				}
				return fileName(val)
			}
			break
		}
	}
	return nil
}

// family is how an interpreter's short options read.
type family struct {
	// code are the options whose value is the program's text: -c for
	// shells and Python, -e for Perl, Ruby, Node.js, Lua and R.
	code string
	// value are the options that take a value (attached, or the next
	// argument): it is not the script.
	value string
	// shell: +o turns an option off and takes a value too.
	shell bool
	// module: -m MOD runs a module, named by the value.
	module bool
}

// families are the interpreters whose options read otherwise than a
// shell's, by the prefix of their executable's name.
var families = []struct {
	prefix string
	f      family
}{
	{"python", family{code: "c", value: "mWXQ", module: true}},
	{"pypy", family{code: "c", value: "mWXQ", module: true}},
	{"perl", family{code: "eE", value: "IMmlx0dDCi"}},
	{"ruby", family{code: "e", value: "IrCEFKTWx"}},
	{"node", family{code: "ep", value: "r"}},
	{"deno", family{code: "ep", value: "r"}},
	{"bun", family{code: "ep", value: "r"}},
	{"php", family{code: "rBRE", value: "cdz"}},
	{"lua", family{code: "e", value: "l"}},
	{"Rscript", family{code: "e"}},
	{"tclsh", family{}},
}

// familyOf returns how exe's options read: bash, sh, dash, zsh, ksh and
// fish (and an interpreter not known here) read -c as running the next
// argument, and -o and -O as setting an option named by the next one.
func familyOf(exe string) family {
	for _, f := range families {
		if strings.HasPrefix(exe, f.prefix) {
			return f.f
		}
	}
	return family{code: "c", value: "oO", shell: true}
}

// fileName returns name when it can be a file's basename, else nil: a
// name longer than NAME_MAX (255 bytes), or holding a newline or a shell
// separator (; | & ` $), is a piece of a command string.
func fileName(name []byte) []byte {
	if len(name) == 0 || len(name) > 255 || bytes.ContainsAny(name, "\n;|&`$") {
		return nil
	}
	return name
}
