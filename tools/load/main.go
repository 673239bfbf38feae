// Command memwho-load starts N child processes that each hold a known
// amount of memory, prints "ready" and their pids, and keeps them alive
// until it is killed. It is the load for scripts/bench.sh and for checking
// memwho by hand:
//
//	memwho-load -n 1000 -private 1MiB -file-shared 8MiB -memfd-shared 4MiB
//
// -file-shared and -memfd-shared are the sizes of one object shared by all
// N children (each child's Pss share is size/N). On SIGTERM, SIGINT or
// SIGHUP it kills and reaps the children and exits 0; if it dies any other
// way the children get SIGKILL from the kernel (parent-death signal).
//
// Output: a line "ready N" (N processes, including the grandchildren of
// -cow) and then one line with all their pids separated by spaces.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/memwho/memwho/internal/atomicfile"
	"github.com/memwho/memwho/internal/testload"
)

// sizeFlag is a byte count given as "4096", "64KiB", "8MiB", ...
type sizeFlag int64

func (s *sizeFlag) String() string { return testload.FormatSize(int64(*s)) }

func (s *sizeFlag) Set(v string) error {
	n, err := testload.ParseSize(v)
	*s = sizeFlag(n)
	return err
}

func main() {
	var spec struct{ private, file, memfd, cow sizeFlag }
	n := flag.Int("n", 1, "number of child processes")
	flag.Var(&spec.private, "private", "private anonymous memory per child")
	flag.Var(&spec.file, "file-shared", "size of one file mapped MAP_SHARED by all children")
	flag.Var(&spec.memfd, "memfd-shared", "size of one memfd mapped MAP_SHARED by all children")
	flag.Var(&spec.cow, "cow", "private memory per child shared copy-on-write with a forked grandchild")
	pidFile := flag.String("pids", "", "also write the pids to this file, one per line, before printing ready")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up if the children are not ready by then")
	dir := flag.String("dir", "", "directory for the -file-shared file (default $TMPDIR or /tmp)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "memwho-load: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}

	// Catch the signals before starting so that a kill during a long
	// start still reaps what was started.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	stop := make(chan struct{})
	go func() {
		<-sig
		cancel()
		close(stop)
	}()

	start := time.Now()
	g, err := testload.Start(ctx, *n, testload.Spec{
		Private:     int64(spec.private),
		FileShared:  int64(spec.file),
		MemfdShared: int64(spec.memfd),
		COW:         int64(spec.cow),
		Dir:         *dir,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "memwho-load: %v\n", err)
		os.Exit(1)
	}
	pids := g.All()
	if *pidFile != "" {
		if err := writePIDs(*pidFile, pids); err != nil {
			g.Stop()
			fmt.Fprintf(os.Stderr, "memwho-load: %v\n", err)
			os.Exit(1)
		}
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "ready %d\n", len(pids))
	for i, p := range pids {
		if i > 0 {
			w.WriteByte(' ')
		}
		w.WriteString(strconv.Itoa(p))
	}
	w.WriteByte('\n')
	w.Flush()
	fmt.Fprintf(os.Stderr, "memwho-load: %d processes ready in %v\n", len(pids), time.Since(start).Round(time.Millisecond))

	<-stop
	g.Stop()
}

// writePIDs writes the pid list through atomicfile, like every file the
// memwho tools create: never through a planted link, and complete or not
// at all for whoever waits for it to appear.
func writePIDs(name string, pids []int) error {
	f, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	w := bufio.NewWriter(f)
	for _, p := range pids {
		fmt.Fprintln(w, p)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Commit()
}
