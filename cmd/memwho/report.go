package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"regexp"
	"regexp/syntax"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"

	"github.com/memwho/memwho/internal/atomicfile"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
)

const reportUsage = `Usage: memwho [report] [flags]

Shows who uses RAM and swap: one row per program with its private and
shared memory (proportional set size, PSS) and swap (SwapPss), sorted so
that the largest sits last, above the total.

Flags:
  --by KEY          group by program (default), pid, user or cgroup
  --filter REGEX    keep groups whose name matches REGEX (Go syntax)
  -p, --pid PIDS    only these processes (comma-separated)
  -u, --user USER   only processes of USER (name or uid)
  --sort COL        ram (default), private, shared, swap, count or name
  --reverse         largest first
  --top N           keep the N largest groups by the sort column
  -t, --total       print only the total RAM used, in bytes
  -S, --swap        accepted for ps_mem compatibility: swap is always shown
  --system          compare the total with /proc/meminfo
  --json            JSON output (bytes, with an accuracy flag per value)
  --csv             CSV output (bytes, with an accuracy flag per value)
  --fast            read only /proc/PID/status: RSS-based estimates named
                    by task name, no page-table walk
  --conns           add a TCP column: ESTABLISHED connections per group
                    (reads every /proc/PID/fd: root, or CAP_DAC_READ_SEARCH
                    and CAP_SYS_PTRACE, for other users' processes)
  --proc DIR        read the procfs tree at DIR (default /proc)
  --cpuprofile FILE write a CPU profile of the run to FILE
  --memprofile FILE write an allocation profile (every allocation) to FILE
  --sandbox         confine memwho with Landlock before the scan: read-only
                    access to the procfs tree, no network (see docs/safe.md)
  --version         print the version

Figures are exact when memwho may read /proc/PID/smaps_rollup (as root, or
with CAP_SYS_PTRACE) and RSS-based estimates, marked as such, otherwise.
NO_COLOR is respected.

Examples:
  memwho                       per-program table
  memwho --by user --system    per user, set against /proc/meminfo
  memwho --filter '^postgres' --json
  memwho -p 1234,5678 -t
  memwho --by cgroup --sort swap --reverse --top 10
`

// errHelp is --help: the usage was printed to standard output.
var errHelp = errors.New("help requested")

type reportFlags struct {
	by, filter, pids, user, sortCol string
	reverse, total, swap, system    bool
	json, csv, fast                 bool
	conns                           bool
	top                             int
	procDir                         string
	cpuprofile, memprofile          string
	sandbox                         bool
}

func (f *reportFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.by, "by", "program", "")
	fs.StringVar(&f.filter, "filter", "", "")
	fs.StringVar(&f.pids, "p", "", "")
	fs.StringVar(&f.pids, "pid", "", "")
	fs.StringVar(&f.user, "u", "", "")
	fs.StringVar(&f.user, "user", "", "")
	fs.StringVar(&f.sortCol, "sort", "ram", "")
	fs.BoolVar(&f.reverse, "reverse", false, "")
	fs.IntVar(&f.top, "top", 0, "")
	fs.BoolVar(&f.total, "t", false, "")
	fs.BoolVar(&f.total, "total", false, "")
	fs.BoolVar(&f.swap, "S", false, "")
	fs.BoolVar(&f.swap, "swap", false, "")
	fs.BoolVar(&f.system, "system", false, "")
	fs.BoolVar(&f.json, "json", false, "")
	fs.BoolVar(&f.csv, "csv", false, "")
	fs.BoolVar(&f.fast, "fast", false, "")
	fs.BoolVar(&f.conns, "conns", false, "")
	fs.StringVar(&f.procDir, "proc", "/proc", "")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "")
	fs.StringVar(&f.memprofile, "memprofile", "", "")
	fs.BoolVar(&f.sandbox, "sandbox", false, "")
}

// reportPlan is the validated form of the flags.
type reportPlan struct {
	by      sample.By
	sortKey sample.SortKey
	filter  *regexp.Regexp
	pids    []int
	uid     uint32
	hasUID  bool
}

func (f *reportFlags) plan() (*reportPlan, error) {
	p := &reportPlan{}
	var err error
	if p.by, err = sample.ParseBy(f.by); err != nil {
		return nil, usagef("--by: %v", err)
	}
	if p.sortKey, err = sample.ParseSort(f.sortCol); err != nil {
		return nil, usagef("--sort: %v", err)
	}
	if f.filter != "" {
		if p.filter, err = regexp.Compile(f.filter); err != nil {
			msg := err.Error()
			var se *syntax.Error
			if errors.As(err, &se) {
				msg = fmt.Sprintf("%s in %q", se.Code, se.Expr)
			}
			return nil, usagef("--filter: bad regular expression: %s", msg)
		}
	}
	if f.pids != "" {
		for _, s := range strings.Split(f.pids, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n <= 0 {
				return nil, usagef("-p: %q is not a process id", s)
			}
			p.pids = append(p.pids, n)
		}
		slices.Sort(p.pids)
		p.pids = slices.Compact(p.pids)
	}
	if f.user != "" {
		u, err := lookupUser(f.user)
		if err != nil {
			return nil, usagef("-u: %v", err)
		}
		p.uid, p.hasUID = u, true
	}
	if f.top < 0 {
		return nil, usagef("--top: must not be negative")
	}
	if f.json && f.csv {
		return nil, usagef("--json and --csv exclude each other")
	}
	if f.total && (f.json || f.csv) {
		return nil, usagef("--total prints one number; it excludes --json and --csv")
	}
	if f.sandbox && (f.cpuprofile != "" || f.memprofile != "") {
		// Landlock forbids the rename that publishes a file.
		return nil, usagef("--sandbox forbids writing files: it excludes --cpuprofile and --memprofile")
	}
	if privilege.Elevated() && (f.cpuprofile != "" || f.memprofile != "") {
		// A profile would be written by the privileged binary: keep
		// the code that runs with capabilities to reading /proc and
		// printing.
		return nil, usagef("--cpuprofile and --memprofile are not available in the privileged install; profile a build run as root or as yourself")
	}
	return p, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}

func lookupUser(s string) (uint32, error) {
	if u, err := user.Lookup(s); err == nil {
		n, err := strconv.ParseUint(u.Uid, 10, 32)
		return uint32(n), err
	}
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return uint32(n), nil
	}
	return 0, fmt.Errorf("unknown user %q", s)
}

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlagSet("memwho", reportUsage, stderr)
	var f reportFlags
	f.register(fs)
	if err := parseFlags(fs, reportUsage, args, stdout); err != nil {
		return err
	}
	plan, err := f.plan()
	if err != nil {
		return err
	}

	// Every file the user named is opened before the scan (only when
	// memwho is not elevated: see plan), so that a refused path costs
	// nothing and the --sandbox can forbid new opens.
	var mf *atomicfile.File
	create := createOutput
	if f.memprofile != "" {
		// Record every allocation: a report allocates little, and the
		// default rate (one sample per 512 KiB) would show none of it.
		runtime.MemProfileRate = 1
		if mf, err = create(f.memprofile); err != nil {
			return fmt.Errorf("--memprofile: %w", err)
		}
		defer mf.Abort()
	}
	if f.cpuprofile != "" {
		pf, perr := create(f.cpuprofile)
		if perr != nil {
			return fmt.Errorf("--cpuprofile: %w", perr)
		}
		defer pf.Abort()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		// A profile that could not be written completely (a full disk)
		// fails the run; it is published only when whole.
		defer func() {
			pprof.StopCPUProfile()
			if cerr := pf.Commit(); cerr != nil && err == nil {
				err = fmt.Errorf("--cpuprofile: %w", cerr)
			}
		}()
	}

	procFS, err := enterScan("report", f.procDir, f.conns, stderr)
	if err != nil {
		return err
	}
	defer procFS.Close()
	if f.sandbox {
		if err := sandboxScan(procFS, stderr); err != nil {
			return err
		}
	}
	sc, err := engine.New(engine.Options{
		OneShot:    true,
		FS:         procFS,
		Fast:       f.fast,
		NeedUID:    plan.hasUID || plan.by == sample.ByUser,
		NeedCgroup: plan.by == sample.ByCgroup,
		NoNames:    plan.by == sample.ByUser || plan.by == sample.ByCgroup,
		PIDs:       scanPIDs(plan.pids, f.system),
	})
	if err != nil {
		return err
	}
	defer sc.Close()
	var snap sample.Snapshot
	if err := sc.Scan(&snap); err != nil {
		return err
	}
	if f.conns {
		if denied, err := engine.CountConns(procFS, &snap); err != nil {
			fmt.Fprintf(stderr, "memwho: warning: --conns: %v\n", err)
		} else if denied > 0 {
			fmt.Fprintf(stderr, "memwho: warning: --conns: %d processes' descriptors were not readable and count 0 connections\n", denied)
		}
	}
	// The scan was the only step that needed privilege.
	if err := dropPrivileges(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	// The host's ledger (--system) counts every process, before -p, -u,
	// --filter and --top choose the rows.
	host := hostTotal(snap.Procs)
	procs := snap.Procs
	if len(plan.pids) > 0 {
		procs = slices.DeleteFunc(procs, func(p sample.Process) bool {
			_, ok := slices.BinarySearch(plan.pids, p.PID)
			return !ok
		})
		if err := missingPIDs(stderr, plan.pids, procs); err != nil {
			return err
		}
	}
	if plan.hasUID {
		procs = slices.DeleteFunc(procs, func(p sample.Process) bool { return p.UID != plan.uid })
	}
	var users sample.Users
	groups := sample.GroupProcs(procs, plan.by, &users)
	groups = sample.Filter(groups, plan.filter)
	sample.Sort(groups, plan.sortKey, f.reverse)
	groups = sample.Top(groups, f.top, f.reverse)
	total := sample.Total(groups)

	// Each renderer builds its output in memory and writes it at once.
	w := stdout
	opt := report.Options{
		By:        plan.by.String(),
		KeyHeader: keyHeader(plan.by),
		ShowCount: plan.by != sample.ByPID,
		Fast:      f.fast,
		Color:     useColor(stdout),
		System:    f.system,
		Host:      &host,
		Conns:     snap.ConnsOK,
	}
	switch {
	case f.total:
		err = report.TotalLine(w, total)
	case f.json:
		err = report.JSON(w, groups, total, &snap, opt)
	case f.csv:
		err = report.CSV(w, groups, total, &snap, opt)
	default:
		err = report.Table(w, groups, total, &snap, opt)
	}
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	warn(stderr, &snap, procs, groups, f.fast)

	if mf != nil {
		if err := pprof.Lookup("allocs").WriteTo(mf, 0); err != nil {
			return fmt.Errorf("--memprofile: %w", err)
		}
		if err := mf.Commit(); err != nil {
			return fmt.Errorf("--memprofile: %w", err)
		}
	}
	if f.system && !f.total && !f.csv && !snap.MeminfoOK {
		// The figures printed are right; what was asked for is not all
		// there, and a script must not take the report for complete.
		return fmt.Errorf("--system: cannot read %s/meminfo (%v): the report above has no system section", f.procDir, snap.MeminfoErr)
	}
	return nil
}

// scanPIDs is the PID list to scan: -p's, except with --system, whose
// ledger needs every process (the rows are chosen after the scan).
func scanPIDs(pids []int, system bool) []int {
	if system {
		return nil
	}
	return pids
}

// hostTotal sums every process of a scan, for the --system ledger.
func hostTotal(procs []sample.Process) sample.Group {
	return sample.SumProcs(procs)
}

// missingPIDs names on stderr the -p PIDs (sorted) that the scan did not
// find (no such process, or one without memory: a kernel thread or a
// zombie). When none was found, it returns an error instead: an empty
// report would read as "these processes use nothing".
func missingPIDs(stderr io.Writer, pids []int, found []sample.Process) error {
	var missing []string
	for _, pid := range pids {
		if !slices.ContainsFunc(found, func(p sample.Process) bool { return p.PID == pid }) {
			missing = append(missing, strconv.Itoa(pid))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	list := strings.Join(missing, ", ")
	if len(missing) == len(pids) {
		return fmt.Errorf("-p: no such process: %s (or only kernel threads and zombies, which have no memory)", list)
	}
	fmt.Fprintf(stderr, "memwho: warning: -p: no such process: %s (or a kernel thread or zombie, which has no memory)\n", list)
	return nil
}

// createOutput starts a file the user asked us to write: a new temporary
// file beside path, mode 0600, renamed over path by Commit (see package
// atomicfile); the caller must Commit or Abort it.
//
// When memwho runs with more privilege than its user, the file is opened
// with the user's identity (privilege.OpenFile): it succeeds exactly when
// the user could have created it, and the new file is the user's.
func createOutput(path string) (*atomicfile.File, error) {
	return atomicfile.CreateWith(path, 0, privilege.OpenFile)
}


// openInput opens a file the user asked us to read, with the user's
// identity (see createOutput): nothing the user could not read.
func openInput(path string) (*os.File, error) {
	return privilege.OpenFile(path, os.O_RDONLY, 0)
}

func keyHeader(by sample.By) string {
	switch by {
	case sample.ByPID:
		return "Program [PID]"
	case sample.ByUser:
		return "User"
	case sample.ByCgroup:
		return "Cgroup"
	}
	return "Program"
}

// useColor follows https://no-color.org and colours only terminals.
func useColor(w io.Writer) bool {
	if v, ok := os.LookupEnv("NO_COLOR"); ok && v != "" {
		return false
	}
	if os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// warn reports, once each, what made the figures shown less than exact.
// It counts the processes of the groups shown (after -p, -u, --filter
// and --top), not every process scanned: procs are the processes that
// passed -p and -u, groups the rows; nil groups means every one of procs
// is shown.
func warn(stderr io.Writer, snap *sample.Snapshot, procs []sample.Process, groups []sample.Group, fast bool) {
	shown := make(map[int]bool)
	for i := range groups {
		for _, pid := range groups[i].PIDs {
			shown[pid] = true
		}
	}
	if groups == nil {
		for i := range procs {
			shown[procs[i].PID] = true
		}
	}
	var denied, malformed int
	for i := range procs {
		if !shown[procs[i].PID] {
			continue
		}
		switch procs[i].Cause {
		case sample.CauseDenied:
			denied++
		case sample.CauseMalformed:
			malformed++
		}
	}
	if denied > 0 && !fast {
		fmt.Fprintf(stderr, "memwho: warning: %d of %d processes are RSS-based estimates (permission denied for smaps_rollup)\n",
			denied, len(shown))
		if os.Geteuid() == 0 {
			// Root is refused only across a boundary: a process in
			// another user namespace, or one a security module guards.
			fmt.Fprintln(stderr, "memwho: hint: even root may not walk these processes (another user namespace or a security module); their figures stay estimates")
		} else {
			fmt.Fprintln(stderr, "memwho: hint: run as root, or install memwho with CAP_SYS_PTRACE (see README: Running as a non-root user)")
		}
	}
	if malformed > 0 {
		fmt.Fprintf(stderr, "memwho: warning: %d %s an unreadable smaps_rollup; the figures are RSS-based estimates\n", malformed, plural(malformed, "process had", "processes had"))
	}
	if snap.Broken > 0 {
		fmt.Fprintf(stderr, "memwho: warning: %d %s skipped: their stat or status could not be parsed\n", snap.Broken, plural(snap.Broken, "process", "processes"))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
