// Command memwho-pair times two commands run alternately, one pair at a
// time, and reports the median of the per-pair ratios of wall and CPU time.
//
//	memwho-pair [-n PAIRS] [-warmup N] -- A [ARGS...] -- B [ARGS...]
//
// bench.sh's rounds time many runs of one command and then many of the
// other: on a shared 2-core VM the machine drifts between the blocks by
// more than the few percent a 10 ms report differs from its floor. Here
// each ratio is of two runs made back to back, A first in even pairs and B
// first in odd ones, so drift and order both cancel in the median. Each
// run's output goes to /dev/null; a run that fails ends the measurement.
//
// It prints one line of key=value fields, times in milliseconds:
//
//	pairs=300 a_ms=13.45 b_ms=12.91 ratio=1.046 q25=0.996 q75=1.106 a_cpu_ms=22.79 b_cpu_ms=22.20 cpu_ratio=1.028 cpu_q25=0.994 cpu_q75=1.075
//
// a_ms and b_ms are medians of each command alone; ratio is the median of
// A/B over the pairs, q25 and q75 its quartiles. CPU time is user plus
// system of the child (and of the children it waited for: memwho's
// reader). With -first the wall time is until the command's first byte
// on standard output: a watch's start-up, up to its first frame.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", 200, "pairs measured")
	warmup := flag.Int("warmup", 5, "pairs run first and not counted")
	flag.BoolVar(&first, "first", false, "wall time until the first byte of standard output")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: memwho-pair [-n PAIRS] [-warmup N] -- A [ARGS...] -- B [ARGS...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	a, b, ok := split(flag.Args())
	if !ok || *n < 1 || *warmup < 0 {
		flag.Usage()
		os.Exit(2)
	}
	var wa, wb, ca, cb, rw, rc []float64
	for k := range *n + *warmup {
		var x, y timing
		var err error
		if k%2 == 0 {
			if x, err = run(a); err == nil {
				y, err = run(b)
			}
		} else {
			if y, err = run(b); err == nil {
				x, err = run(a)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "memwho-pair:", err)
			os.Exit(1)
		}
		if k < *warmup {
			continue
		}
		wa, wb = append(wa, x.wall), append(wb, y.wall)
		ca, cb = append(ca, x.cpu), append(cb, y.cpu)
		rw, rc = append(rw, x.wall/y.wall), append(rc, x.cpu/max(y.cpu, 1e-6))
	}
	fmt.Printf("pairs=%d a_ms=%.2f b_ms=%.2f ratio=%.3f q25=%.3f q75=%.3f a_cpu_ms=%.2f b_cpu_ms=%.2f cpu_ratio=%.3f cpu_q25=%.3f cpu_q75=%.3f\n",
		*n, quantile(wa, .5), quantile(wb, .5), quantile(rw, .5), quantile(rw, .25), quantile(rw, .75),
		quantile(ca, .5), quantile(cb, .5), quantile(rc, .5), quantile(rc, .25), quantile(rc, .75))
}

// split parses "-- A... -- B..." (the first "--" may have been taken by
// the flag package already).
func split(args []string) (a, b []string, ok bool) {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	i := slices.Index(args, "--")
	if i < 1 || i == len(args)-1 {
		return nil, nil, false
	}
	return args[:i], args[i+1:], true
}

// first: wall time is until the first byte of standard output.
var first bool

// timing is one run's wall and CPU time in milliseconds.
type timing struct{ wall, cpu float64 }

func run(argv []string) (timing, error) {
	c := exec.Command(argv[0], argv[1:]...)
	var out io.ReadCloser
	if first {
		var err error
		if out, err = c.StdoutPipe(); err != nil {
			return timing{}, err
		}
	}
	start := time.Now()
	if err := c.Start(); err != nil {
		return timing{}, fmt.Errorf("%q: %w", argv, err)
	}
	var wall time.Duration
	if first {
		var b [1]byte
		if _, err := io.ReadFull(out, b[:]); err != nil {
			c.Wait()
			return timing{}, fmt.Errorf("%q: no output: %w", argv, err)
		}
		wall = time.Since(start)
		io.Copy(io.Discard, out)
	}
	if err := c.Wait(); err != nil {
		return timing{}, fmt.Errorf("%q: %w", argv, err)
	}
	if !first {
		wall = time.Since(start)
	}
	ru := c.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return timing{float64(wall) / 1e6, float64(cpu) / 1e6}, nil
}

// quantile returns the p-quantile of v (nearest rank below).
func quantile(v []float64, p float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}
