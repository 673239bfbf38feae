// Package completion writes memwho's shell completion scripts (bash, zsh,
// fish) from a table of its commands and their flags, which
// tools/man generates from the usage texts: the completions offer
// what --help lists.
package completion

import (
	"fmt"
	"strings"
)

// Command is one command of the table: its name, its one-line summary
// and its flags.
type Command struct {
	Name, Summary string
	Flags         []Flag
}

// Flag is one flag of a command: its spellings ("-o", "--output"), its
// value's placeholder (empty for a switch), its help, and what its value
// may be: one of Values (a comma-separated list of them when Arg is
// LIST), or a user name when Users is set. Any other value completes as
// a file name.
type Flag struct {
	Names     []string
	Arg, Help string
	Values    []string
	Users     bool
}

// list reports whether f takes a comma-separated list of its values.
func (f Flag) list() bool { return f.Arg == "LIST" }

// valued lists c's flags that complete their values.
func valued(c Command) []Flag {
	var out []Flag
	for _, f := range c.Flags {
		if len(f.Values) > 0 || f.Users {
			out = append(out, f)
		}
	}
	return out
}

// Shells are the shells Script writes for.
const Shells = "bash zsh fish"

// Script returns the completion script of shell for the commands cmds,
// or an error naming the shells it knows.
func Script(shell string, cmds []Command) (string, error) {
	switch shell {
	case "bash":
		return bash(cmds), nil
	case "zsh":
		return zsh(cmds), nil
	case "fish":
		return fish(cmds), nil
	}
	return "", fmt.Errorf("unknown shell %q (want bash, zsh or fish)", shell)
}

// sq quotes s for bash and zsh in single quotes; a quote inside ends the
// quoting, is escaped, and starts it again.
func sq(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fishQuote quotes s for fish, which reads \\ and \' inside single quotes.
func fishQuote(s string) string {
	// Backslashes first, so that the quotes' are not doubled. (No
	// strings.Replacer: it would add its code to the privileged binary.)
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

func quoteAll(s []string, quote func(string) string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = quote(x)
	}
	return out
}

func commandNames(cmds []Command) []string {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Name
	}
	return names
}

func bash(cmds []Command) string {
	var b strings.Builder
	b.WriteString("# bash completion for memwho (memwho completion bash)\n_memwho() {\n")
	b.WriteString("\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=report\n")
	fmt.Fprintf(&b, "\tcase ${COMP_WORDS[1]} in\n\t%s) cmd=${COMP_WORDS[1]} ;;\n\tesac\n", strings.Join(commandNames(cmds), "|"))
	// A flag's value: its words, a comma-separated list of them (the
	// words after the last comma complete), or a user name.
	b.WriteString("\tlocal words= list= users=\n\tcase $cmd in\n")
	for _, c := range cmds {
		v := valued(c)
		if len(v) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\t%s)\n\t\tcase $prev in\n", c.Name)
		for _, f := range v {
			fmt.Fprintf(&b, "\t\t%s) ", strings.Join(f.Names, "|"))
			switch {
			case f.Users:
				b.WriteString("users=1")
			case f.list():
				fmt.Fprintf(&b, "words=%s list=1", sq(strings.Join(f.Values, " ")))
			default:
				fmt.Fprintf(&b, "words=%s", sq(strings.Join(f.Values, " ")))
			}
			b.WriteString(" ;;\n")
		}
		b.WriteString("\t\tesac ;;\n")
	}
	b.WriteString("\tesac\n")
	b.WriteString("\tif [[ -n $users ]]; then\n\t\tCOMPREPLY=($(compgen -u -- \"$cur\"))\n\t\treturn\n\telif [[ -n $list && $cur == *,* ]]; then\n")
	b.WriteString("\t\tCOMPREPLY=($(compgen -W \"$words\" -P \"${cur%,*},\" -- \"${cur##*,}\"))\n\t\treturn\n")
	b.WriteString("\telif [[ -n $words ]]; then\n\t\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n\t\treturn\n\tfi\n")
	b.WriteString("\tif [[ $cur == -* ]]; then\n\t\tlocal flags\n\t\tcase $cmd in\n")
	for _, c := range cmds {
		var names []string
		for _, f := range c.Flags {
			names = append(names, f.Names...)
		}
		names = append(names, "--help")
		fmt.Fprintf(&b, "\t\t%s) flags=%s ;;\n", c.Name, sq(strings.Join(names, " ")))
	}
	b.WriteString("\t\tesac\n\t\tCOMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n")
	fmt.Fprintf(&b, "\telif ((COMP_CWORD == 1)); then\n\t\tCOMPREPLY=($(compgen -W %s -- \"$cur\"))\n", sq(strings.Join(commandNames(cmds), " ")))
	fmt.Fprintf(&b, "\telif ((COMP_CWORD == 2)) && [[ $cmd == completion ]]; then\n\t\tCOMPREPLY=($(compgen -W %s -- \"$cur\"))\n\tfi\n}\n", sq(Shells))
	b.WriteString("complete -o default -F _memwho memwho\n")
	return b.String()
}

func zsh(cmds []Command) string {
	var b strings.Builder
	b.WriteString("#compdef memwho\n# zsh completion for memwho (memwho completion zsh)\n_memwho() {\n\tlocal cmd=report\n\tlocal -a items\n")
	b.WriteString("\tif (( CURRENT == 2 )) && [[ $PREFIX != -* ]]; then\n\t\titems=(\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "\t\t\t%s\n", sq(c.Name+":"+c.Summary))
	}
	b.WriteString("\t\t)\n\t\t_describe -t commands 'memwho command' items\n\t\treturn\n\tfi\n")
	fmt.Fprintf(&b, "\tcase $words[2] in\n\t(%s) cmd=$words[2] ;;\n\tesac\n", strings.Join(commandNames(cmds), "|"))
	b.WriteString("\tcase $cmd:$words[CURRENT-1] in\n")
	for _, c := range cmds {
		for _, f := range valued(c) {
			var pats []string
			for _, n := range f.Names {
				pats = append(pats, c.Name+":"+n)
			}
			fmt.Fprintf(&b, "\t(%s) ", strings.Join(pats, "|"))
			switch {
			case f.Users:
				b.WriteString("_users")
			case f.list():
				fmt.Fprintf(&b, "_sequence compadd - %s", strings.Join(quoteAll(f.Values, sq), " "))
			default:
				fmt.Fprintf(&b, "compadd - %s", strings.Join(quoteAll(f.Values, sq), " "))
			}
			b.WriteString("; return ;;\n")
		}
	}
	b.WriteString("\tesac\n")
	b.WriteString("\tif [[ $PREFIX == -* ]]; then\n\t\tcase $cmd in\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "\t\t(%s) items=(", c.Name)
		for _, f := range c.Flags {
			for _, n := range f.Names {
				fmt.Fprintf(&b, " %s", sq(n+":"+f.Help))
			}
		}
		b.WriteString(" '--help:print the help') ;;\n")
	}
	b.WriteString("\t\tesac\n\t\t_describe -t flags 'flag' items\n")
	b.WriteString("\telif (( CURRENT == 3 )) && [[ $cmd == completion ]]; then\n\t\tcompadd " + Shells + "\n")
	b.WriteString("\telse\n\t\t_files\n\tfi\n}\n")
	b.WriteString("if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then\n\t_memwho \"$@\"\nelse\n\tcompdef _memwho memwho\nfi\n")
	return b.String()
}

func fish(cmds []Command) string {
	var b strings.Builder
	names := strings.Join(commandNames(cmds), " ")
	b.WriteString("# fish completion for memwho (memwho completion fish)\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "complete -c memwho -f -n %s -a %s -d %s\n", fishQuote("not __fish_seen_subcommand_from "+names), c.Name, fishQuote(c.Summary))
	}
	fmt.Fprintf(&b, "complete -c memwho -f -n %s -a %s\n", fishQuote("__fish_seen_subcommand_from completion"), fishQuote(Shells))
	for _, c := range cmds {
		cond := "__fish_seen_subcommand_from " + c.Name
		if c.Name == "report" {
			// report is also what memwho runs when no command is named.
			cond = "not __fish_seen_subcommand_from " + strings.Join(commandNames(cmds)[1:], " ")
		}
		for _, f := range c.Flags {
			b.WriteString("complete -c memwho -n " + fishQuote(cond))
			for _, n := range f.Names {
				if long, ok := strings.CutPrefix(n, "--"); ok {
					b.WriteString(" -l " + long)
				} else {
					b.WriteString(" -s " + strings.TrimPrefix(n, "-"))
				}
			}
			switch {
			case f.Users:
				b.WriteString(" -x -a " + fishQuote("(__fish_complete_users)"))
			case f.list():
				// The words after the last comma: the list so far, then each.
				b.WriteString(" -x -a " + fishQuote("(__fish_append , "+strings.Join(f.Values, " ")+")"))
			case len(f.Values) > 0:
				b.WriteString(" -x -a " + fishQuote(strings.Join(f.Values, " ")))
			case f.Arg != "":
				b.WriteString(" -r")
			}
			b.WriteString(" -d " + fishQuote(f.Help) + "\n")
		}
	}
	return b.String()
}
