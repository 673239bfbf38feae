// Command stall measures what reading a process's memory costs that
// process: the stall a reader's page-table walk imposes on a program that
// maps and unmaps memory, seen from the program's side.
//
// It starts a victim (itself, run again) that holds one private anonymous
// mapping of the size asked for, 4 KiB pages (MADV_NOHUGEPAGE) or
// transparent huge pages (MADV_HUGEPAGE), every page written, and then
// times its own mmap + write + munmap of one page in a loop, recording
// every operation's start and latency. Meanwhile the readers given run,
// one after the other: one-shot commands (a report) are run -reads times,
// -gap apart, each a window; periodic ones (watch, the agent, record) run
// for -reads ticks of -tick, each tick a window. A window's worst and 99th
// percentile latency, less those of windows of the same length with no
// reader (the baseline, measured first), are what the read added. The
// reader's CPU time (from rusage) per read and per GiB of the mapping says
// what the read cost the host.
//
//	stall -gib 8 -thp=false -reads 8 \
//	    -r 'smaps_rollup=oneshot:cat /proc/{pid}/smaps_rollup' \
//	    -r 'memwho report=oneshot:./memwho --fresh -p {pid}'
//
// Output is a Markdown table, one row per reader; scripts/bench-stall.sh
// runs the sizes and readers of docs/performance.md.
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/memwho/memwho/internal/proc"
	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "victim" {
		victim(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "read" {
		if err := paced(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "stall read:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "stall:", err)
		os.Exit(1)
	}
}

type readerFlag []string

func (r *readerFlag) String() string     { return strings.Join(*r, "; ") }
func (r *readerFlag) Set(s string) error { *r = append(*r, s); return nil }

// reader is one -r: NAME=KIND:COMMAND, KIND oneshot or periodic.
type reader struct {
	name, kind string
	argv       []string
}

func parseReader(s string) (reader, error) {
	name, rest, ok := strings.Cut(s, "=")
	kind, cmd, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || (kind != "oneshot" && kind != "periodic") || strings.TrimSpace(cmd) == "" {
		return reader{}, fmt.Errorf("-r %q: want NAME=oneshot:COMMAND or NAME=periodic:COMMAND", s)
	}
	return reader{name: name, kind: kind, argv: strings.Fields(cmd)}, nil
}

func run() error {
	gib := flag.Float64("gib", 1, "size of the victim's mapping, GiB")
	thp := flag.Bool("thp", false, "back the mapping with transparent huge pages")
	reads := flag.Int("reads", 8, "reads (or ticks) per reader")
	gap := flag.Duration("gap", 400*time.Millisecond, "pause between one-shot reads")
	tick := flag.Duration("tick", time.Second, "tick of periodic readers")
	base := flag.Duration("baseline", 4*time.Second, "time with no reader, first")
	var rs readerFlag
	flag.Var(&rs, "r", "a reader, NAME=oneshot:COMMAND or NAME=periodic:COMMAND ({pid} is the victim); repeatable")
	flag.Parse()
	var readers []reader
	for _, s := range rs {
		r, err := parseReader(s)
		if err != nil {
			return err
		}
		readers = append(readers, r)
	}

	fmt.Printf("| GiB | THP | reader | reads | added worst ms (median) | added worst ms (max) | added p99 ms (median) | CPU ms per read | CPU ms per GiB |\n")
	fmt.Printf("|---:|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range readers {
		if err := measure(r, *gib, *thp, *reads, *gap, *tick, *base); err != nil {
			return err
		}
	}
	return nil
}

// paced reads one process page by page as memwho does, with the pacing
// given: "stall read -burst 0 -pause 0 PID" reads without pauses, to
// show what they are for.
func paced(args []string) error {
	fl := flag.NewFlagSet("stall read", flag.ContinueOnError)
	burst := fl.Duration("burst", proc.PacedBurst, "reads back to back before a pause")
	pause := fl.Duration("pause", proc.PacedPause, "the pause; 0: none")
	if err := fl.Parse(args); err != nil {
		return err
	}
	pid, err := strconv.Atoi(fl.Arg(0))
	if err != nil {
		return fmt.Errorf("want a PID: %v", err)
	}
	fs, err := proc.Open(proc.DefaultRoot)
	if err != nil {
		return err
	}
	r := fs.NewReader()
	pc := proc.Pacer{Burst: *burst, Pause: *pause}
	if *pause == 0 {
		// No pause: one burst as long as the read.
		pc.Burst = time.Hour
	}
	r.Select(pid)
	st, err := r.Statm()
	if err != nil {
		return err
	}
	if err := r.HoldPagemap(); err != nil {
		return err
	}
	var ru proc.Rollup
	if err := r.Paced(&ru, &pc, st); err != nil {
		return err
	}
	fmt.Printf("Pss %d Private %d, %d entries, %d pauses\n", ru.Pss, ru.PrivateClean+ru.PrivateDirty, pc.Entries, pc.Pauses)
	return nil
}

// measure starts a victim, lets it run alone for base, runs r against
// it, and prints r's row.
func measure(r reader, gib float64, thp bool, reads int, gap, tick, base time.Duration) error {
	dir, err := os.MkdirTemp("", "memwho-stall-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	logFile := dir + "/latencies"
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	v := exec.Command(exe, "victim", strconv.FormatFloat(gib, 'f', -1, 64), strconv.FormatBool(thp), logFile)
	v.Stderr = os.Stderr
	out, err := v.StdoutPipe()
	if err != nil {
		return err
	}
	stdin, err := v.StdinPipe()
	if err != nil {
		return err
	}
	if err := v.Start(); err != nil {
		return err
	}
	defer v.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("victim: %v", err)
	}
	var pid int
	var t0 int64 // the victim's start, CLOCK_MONOTONIC ns
	if _, err := fmt.Sscanf(line, "ready %d %d", &pid, &t0); err != nil {
		return fmt.Errorf("victim said %q", line)
	}
	hp := "?"
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "AnonHugePages:") {
				hp = strings.Join(strings.Fields(l)[1:], " ")
			}
		}
	}
	fmt.Fprintf(os.Stderr, "stall: %s: victim %d holds %.3g GiB (THP %v, AnonHugePages %s)\n", r.name, pid, gib, thp, hp)

	type window struct{ from, to int64 } // monotonic ns
	var wins []window
	var cpu time.Duration
	n := 0
	time.Sleep(base)
	baseEnd := monotonic()
	argv := make([]string, len(r.argv))
	for k, a := range r.argv {
		argv[k] = strings.ReplaceAll(a, "{pid}", strconv.Itoa(pid))
	}
	switch r.kind {
	case "oneshot":
		for range reads {
			from := monotonic()
			c := exec.Command(argv[0], argv[1:]...)
			c.Stdout, c.Stderr = io.Discard, io.Discard
			if err := c.Run(); err != nil {
				return fmt.Errorf("%s: %v", r.name, err)
			}
			wins = append(wins, window{from, monotonic()})
			cpu += c.ProcessState.UserTime() + c.ProcessState.SystemTime()
			n++
			time.Sleep(gap)
		}
	case "periodic":
		c := exec.Command(argv[0], argv[1:]...)
		c.Stdout, c.Stderr = io.Discard, os.Stderr
		if err := c.Start(); err != nil {
			return fmt.Errorf("%s: %v", r.name, err)
		}
		// The first tick reads the process for the first time; the
		// windows are the ticks after it.
		time.Sleep(tick + tick/2)
		for range reads {
			from := monotonic()
			time.Sleep(tick)
			wins = append(wins, window{from, monotonic()})
		}
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
		cpu += c.ProcessState.UserTime() + c.ProcessState.SystemTime()
		n += reads + 2
	}
	stdin.Close() // the victim writes its log and exits
	if err := v.Wait(); err != nil {
		return fmt.Errorf("victim: %v", err)
	}
	ops, err := readLog(logFile, t0)
	if err != nil {
		return err
	}
	var length int64
	for _, w := range wins {
		length = max(length, w.to-w.from)
	}
	// The baseline: windows of the same length before the reader ran.
	var bws, bps []time.Duration
	for from := ops[0].t + int64(time.Second/2); from+length <= baseEnd; from += length {
		w, p := stats(ops, from, from+length)
		bws, bps = append(bws, w), append(bps, p)
	}
	bw, bp := median(bws), median(bps)
	var worsts, p99s []time.Duration
	for _, w := range wins {
		wst, p := stats(ops, w.from, w.to)
		worsts, p99s = append(worsts, wst-bw), append(p99s, p-bp)
	}
	per := cpu / time.Duration(max(n, 1))
	fmt.Printf("| %.3g | %s | %s | %d | %.1f | %.1f | %.2f | %.1f | %.1f |\n",
		gib, onOff(thp), r.name, len(worsts), ms(median(worsts)), ms(slices.Max(worsts)), ms(median(p99s)),
		ms(per), ms(per)/gib)
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// op is one timed mmap + write + munmap of the victim.
type op struct {
	t   int64 // start, monotonic ns
	lat time.Duration
}

// stats returns the worst and the 99th percentile latency of the
// operations that started in [from, to).
func stats(ops []op, from, to int64) (worst, p99 time.Duration) {
	i, _ := slices.BinarySearchFunc(ops, from, func(o op, t int64) int { return cmpInt(o.t, t) })
	j, _ := slices.BinarySearchFunc(ops, to, func(o op, t int64) int { return cmpInt(o.t, t) })
	if i >= j {
		return 0, 0
	}
	l := make([]time.Duration, 0, j-i)
	for _, o := range ops[i:j] {
		l = append(l, o.lat)
	}
	slices.Sort(l)
	return l[len(l)-1], l[len(l)*99/100]
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func median(v []time.Duration) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// readLog reads the victim's records: pairs of uint32, the start in µs
// since t0 and the latency in ns.
func readLog(file string, t0 int64) ([]op, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	ops := make([]op, 0, len(b)/8)
	for i := 0; i+8 <= len(b); i += 8 {
		us := binary.LittleEndian.Uint32(b[i:])
		ns := binary.LittleEndian.Uint32(b[i+4:])
		ops = append(ops, op{t: t0 + int64(us)*1000, lat: time.Duration(ns)})
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("victim recorded nothing")
	}
	return ops, nil
}

// victim holds the mapping and times its operations until its standard
// input closes, then writes the log.
func victim(args []string) {
	// No collections and one thread: the loop's latencies are the
	// kernel's alone.
	debug.SetGCPercent(-1)
	runtime.LockOSThread()
	gib, _ := strconv.ParseFloat(args[0], 64)
	thp := args[1] == "true"
	size := int(gib*(1<<30)) &^ (2<<20 - 1)
	b, err := unix.Mmap(-1, 0, size+2<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		os.Exit(1)
	}
	// 2 MiB aligned, for huge pages.
	off := (2<<20 - int(uintptr(unsafe.Pointer(&b[0]))%(2<<20))) % (2 << 20)
	b = b[off : off+size]
	advice := unix.MADV_NOHUGEPAGE
	if thp {
		advice = unix.MADV_HUGEPAGE
	}
	if err := unix.Madvise(b, advice); err != nil {
		fmt.Fprintln(os.Stderr, "victim: madvise:", err)
		os.Exit(1)
	}
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	t0 := monotonic()
	fmt.Printf("ready %d %d\n", os.Getpid(), t0)
	// Each record is 8 bytes; a generous buffer, written at the end so
	// that the loop does no I/O.
	log := make([]byte, 0, 256<<20)
	var rec [8]byte
	for {
		select {
		case <-done:
			if err := os.WriteFile(args[2], log, 0o600); err != nil {
				fmt.Fprintln(os.Stderr, "victim:", err)
				os.Exit(1)
			}
			return
		default:
		}
		for range 256 {
			s := monotonic()
			p, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			if err != nil {
				fmt.Fprintln(os.Stderr, "victim:", err)
				os.Exit(1)
			}
			p[0] = 1
			unix.Munmap(p)
			e := monotonic()
			if len(log)+8 > cap(log) {
				fmt.Fprintln(os.Stderr, "victim: log full")
				os.Exit(1)
			}
			binary.LittleEndian.PutUint32(rec[:], uint32((s-t0)/1000))
			binary.LittleEndian.PutUint32(rec[4:], uint32(min(e-s, 1<<32-1)))
			log = append(log, rec[:]...)
		}
	}
}
