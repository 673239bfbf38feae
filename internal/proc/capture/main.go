// Command capture copies the /proc files that memwho reads, for a few live
// processes, into a txtar archive laid out as a fake /proc tree (see package
// proctest for the encoding). It builds the fixtures in internal/proc/testdata.
//
// Usage:
//
//	go run ./internal/proc/capture [-o out.txtar] [-comment text] [-drop name,...] PID...
//
// For each PID it stores PID/stat, status, statm, cmdline, comm,
// smaps_rollup, smaps, cgroup and the target of PID/exe, plus the top-level
// meminfo and uptime. A file that cannot be read is left out, and the
// archive's comment says why: the exe link of a kernel thread or a zombie
// does not resolve, and parsers must cope with its absence.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/rogpeppe/go-internal/txtar"
)

// pidFiles are read in this order, cheapest first, so that the figures are
// as close in time as a sequence of reads allows.
var pidFiles = []string{"stat", "status", "statm", "cmdline", "comm", "smaps_rollup", "smaps", "cgroup"}

var topFiles = []string{"meminfo", "uptime"}

func main() {
	out := flag.String("o", "", "write the archive to this `file` (default standard output)")
	comment := flag.String("comment", "", "describe the capture in the archive's comment")
	drop := flag.String("drop", "", "comma-separated file `names` to leave out (e.g. smaps_rollup, as older kernels lack it)")
	root := flag.String("proc", "/proc", "read from this procfs `root`")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: capture [flags] PID...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var pids []int
	for _, arg := range flag.Args() {
		pid, err := strconv.Atoi(arg)
		if err != nil || pid <= 0 {
			fmt.Fprintf(os.Stderr, "capture: %q is not a PID\n", arg)
			os.Exit(2)
		}
		pids = append(pids, pid)
	}
	dropped := map[string]bool{}
	for name := range strings.SplitSeq(*drop, ",") {
		if name = strings.TrimSpace(name); name != "" {
			dropped[name] = true
		}
	}

	// The command line, less the flags that only say where the archive goes
	// and what the comment says (it follows anyway).
	args := []string{"go run ./internal/proc/capture"}
	flag.Visit(func(f *flag.Flag) {
		if f.Name != "o" && f.Name != "comment" {
			args = append(args, "-"+f.Name+"="+f.Value.String())
		}
	})
	args = append(args, flag.Args()...)
	header := fmt.Sprintf("Captured with: %s\nKernel: %s\n", strings.Join(args, " "), osRelease(*root))
	if *comment != "" {
		header += "\n" + strings.TrimSuffix(*comment, "\n") + "\n"
	}
	a, err := capture(*root, pids, dropped, header)
	if err != nil {
		fmt.Fprintf(os.Stderr, "capture: %v\n", err)
		os.Exit(1)
	}
	data := txtar.Format(a)
	if *out == "" {
		_, err = os.Stdout.Write(data)
	} else {
		err = os.WriteFile(*out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "capture: %v\n", err)
		os.Exit(1)
	}
}

func osRelease(root string) string {
	b, err := os.ReadFile(filepath.Join(root, "sys/kernel/osrelease"))
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// capture reads the files of pids under root into an archive whose comment
// is header followed by a note for each file that could not be read.
func capture(root string, pids []int, drop map[string]bool, header string) (*txtar.Archive, error) {
	a := &txtar.Archive{}
	var notes []string
	add := func(name string) error {
		if drop[filepath.Base(name)] {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: absent: %v", name, unwrap(err)))
			fmt.Fprintf(os.Stderr, "capture: %v\n", err)
			return nil
		}
		return proctest.AddFile(a, name, data)
	}
	for _, pid := range pids {
		dir := strconv.Itoa(pid)
		// A process that is gone would only yield a tree of absences.
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			return nil, fmt.Errorf("pid %d: %w", pid, err)
		}
		for _, f := range pidFiles {
			if err := add(dir + "/" + f); err != nil {
				return nil, err
			}
		}
		if drop["exe"] {
			continue
		}
		name := dir + "/exe"
		target, err := os.Readlink(filepath.Join(root, name))
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: absent: readlink: %v", name, unwrap(err)))
			continue
		}
		if err := proctest.AddSymlink(a, name, target); err != nil {
			return nil, err
		}
	}
	for _, f := range topFiles {
		if err := add(f); err != nil {
			return nil, err
		}
	}
	comment := header
	if len(notes) > 0 {
		comment += "\n" + strings.Join(notes, "\n") + "\n"
	}
	a.Comment = []byte(comment)
	return a, nil
}

// unwrap drops the path from a *fs.PathError: the note already names the file.
func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
