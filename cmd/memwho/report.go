package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/memwho/memwho/internal/atomicfile"
	"github.com/memwho/memwho/internal/cli"
	"github.com/memwho/memwho/internal/container"
	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/profile"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/sample"
)

// reportUsage is report's --help text, read when asked for: held in a
// variable, it was read and copied at every start.
func reportUsage() string { return usage("report") }

type reportFlags struct {
	by, filter, pids, user, sortCol string
	reverse, total, swap, system    bool
	byPID                           bool
	json, csv, fast                 bool
	conns, split                    bool
	top                             int
	procDir                         string
	cpuprofile, memprofile          string
	html, svg                       string
	sandbox                         bool
	agent                           agentFlags
	from                            string
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
	// ps_mem's and smem's spellings that clash with nothing of ours.
	fs.BoolVar(&f.reverse, "r", false, "")
	fs.BoolVar(&f.byPID, "d", false, "")
	fs.BoolVar(&f.byPID, "discriminate-by-pid", false, "")
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
	fs.BoolVar(&f.split, "split", false, "")
	fs.StringVar(&f.procDir, "proc", "/proc", "")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "")
	fs.StringVar(&f.memprofile, "memprofile", "", "")
	fs.StringVar(&f.html, "html", "", "")
	fs.StringVar(&f.svg, "svg", "", "")
	fs.BoolVar(&f.sandbox, "sandbox", false, "")
	f.agent.register(fs)
	fs.StringVar(&f.from, "from", "", "")
}

// reportHabits are the flags of ps_mem and smem the report does not
// take, and what it offers instead (-d and -r it takes).
var reportHabits = []cli.Habit{
	{Flag: "-w", Hint: "ps_mem's -w N (watch) is memwho watch --interval Ns: a live view, one plain table per interval when piped"},
	{Flag: "--watch", Hint: "ps_mem's --watch N is memwho watch --interval Ns: a live view, one plain table per interval when piped"},
	{Flag: "-s", Hint: "ps_mem's -s (full command lines) has no equivalent: rows are programs; -d (--by pid) shows each process, and ps -o pid,args its command line"},
	{Flag: "--split-args", Hint: "ps_mem's --split-args has no equivalent: rows are programs; -d (--by pid) shows each process, and ps -o pid,args its command line"},
	{Flag: "-u", Hint: "-u USER keeps one user's processes; smem's -u (a row per user) is --by user"},
	{Flag: "-p", Hint: "-p PIDS keeps these processes; smem's -p (percentages): --html FILE labels and lists each group with its share"},
	{Flag: "-c", Hint: "smem's -c (columns): --split and --conns add columns; --json and --csv give every figure, to pick from"},
	{Flag: "-m", Hint: "smem's -m (a row per mapping): memwho shows processes, not mappings; /proc/PID/smaps lists a process's"},
	{Flag: "-k", Hint: "smem's -k: the table always shows units (KiB, MiB, GiB); --json and --csv give bytes"},
	{Flag: "-P", Hint: "smem's -P REGEX: --filter REGEX keeps the groups whose name matches"},
	{Flag: "-U", Hint: "smem's -U USER: -u USER keeps one user's processes"},
	{Flag: "-M", Hint: "smem's -M (filter mappings): memwho shows processes, not mappings"},
}

// plan validates the flags into what the report shows.
func (f *reportFlags) plan() (*sample.Selection, error) {
	p := &sample.Selection{Reverse: f.reverse, Top: f.top}
	var err error
	if f.byPID {
		if f.by != "program" && f.by != "pid" {
			return nil, cli.Usagef("-d is --by pid: it excludes --by %s", f.by)
		}
		f.by = "pid"
	}
	if p.By, err = sample.ParseBy(f.by); err != nil {
		return nil, cli.Usagef("--by: %v", err)
	}
	if p.Sort, err = sample.ParseSort(f.sortCol); err != nil {
		return nil, cli.Usagef("--sort: %v", err)
	}
	if p.Filter, err = cli.CompileFilter(f.filter); err != nil {
		return nil, err
	}
	if f.pids != "" {
		if p.PIDs, err = sample.ParsePIDs(f.pids); err != nil {
			return nil, cli.Usagef("-p: %v", err)
		}
	}
	if f.user != "" {
		if p.UID, err = sample.LookupUser(f.user); err != nil {
			return nil, cli.Usagef("-u: %v", err)
		}
		p.HasUID = true
	}
	if f.top < 0 {
		return nil, cli.Usagef("--top: must not be negative")
	}
	if f.json && f.csv {
		return nil, cli.Usagef("--json and --csv exclude each other")
	}
	if f.total && (f.json || f.csv) {
		return nil, cli.Usagef("--total prints one number; it excludes --json and --csv")
	}
	if f.sandbox && (f.cpuprofile != "" || f.memprofile != "") {
		// Landlock forbids the rename that publishes a file.
		return nil, cli.Usagef("--sandbox forbids writing files: it excludes --cpuprofile and --memprofile")
	}
	if f.sandbox && (f.html != "" && f.html != "-" || f.svg != "" && f.svg != "-") {
		return nil, cli.Usagef("--sandbox forbids writing files: it excludes --html and --svg (but for - , standard output)")
	}
	if f.html == "-" && f.svg == "-" {
		return nil, cli.Usagef("--html - and --svg - both write to standard output: give one of them a file")
	}
	if f.html == "-" || f.svg == "-" {
		flag := "--html -"
		if f.svg == "-" {
			flag = "--svg -"
		}
		switch {
		case f.json:
			return nil, cli.Usagef("%s writes the picture to standard output: it excludes --json", flag)
		case f.csv:
			return nil, cli.Usagef("%s writes the picture to standard output: it excludes --csv", flag)
		case f.total:
			return nil, cli.Usagef("%s writes the picture to standard output: it excludes -t", flag)
		}
	}
	if privilege.Elevated() && (f.cpuprofile != "" || f.memprofile != "") {
		// A profile would be written by the privileged binary: keep
		// the code that runs with capabilities to reading /proc and
		// printing.
		return nil, cli.Usagef("--cpuprofile and --memprofile are not available in the privileged install; profile a build run as root or as yourself")
	}
	if !profile.Built {
		// The shipped build does not link runtime/pprof.
		if f.cpuprofile != "" {
			return nil, cli.Usagef("--cpuprofile: %v", profile.ErrNotBuilt)
		}
		if f.memprofile != "" {
			return nil, cli.Usagef("--memprofile: %v", profile.ErrNotBuilt)
		}
	}
	return p, nil
}

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := cli.NewFlagSet("memwho")
	var f reportFlags
	f.register(fs)
	if err := cli.Parse(fs, reportUsage(), args, stdout, reportHabits...); err != nil {
		return err
	}
	if err := cli.NoEmpty(fs, "p", "pid", "u", "user", "from", "proc", "html", "svg", "cpuprofile", "memprofile"); err != nil {
		return err
	}
	if err := excludesFrom(fs); err != nil {
		return err
	}
	for _, t := range []string{"t", "total"} {
		if err := cli.Excludes(fs, t, "it prints one number", "system", "split", "conns"); err != nil {
			return err
		}
	}
	// CSV is one row per group: the ledger has no rows there, and
	// --csv --system would drop it without a word.
	if err := cli.Excludes(fs, "csv", "CSV has no ledger; --json carries it", "system"); err != nil {
		return err
	}
	plan, err := f.plan()
	if err != nil {
		return err
	}
	if f.html != "" && f.html != "-" || f.svg != "" && f.svg != "-" || f.cpuprofile != "" || f.memprofile != "" {
		// Files to publish whole or remove: SIGINT and SIGTERM stop
		// the report cleanly. Without them they end it at once, as
		// they end ps: there is nothing to undo.
		var stop context.CancelFunc
		ctx, stop = cli.InterruptibleOnce(ctx, atomicfile.RemoveTemps)
		defer stop()
		// The table is written while they are open: a closed pipe
		// is an error that removes them, not a SIGPIPE that leaves
		// them.
		defer cli.CatchPipe()()
	}

	// Every file the user named is opened before the scan (only when
	// memwho is not elevated: see plan), so that a refused path costs
	// nothing and the --sandbox can forbid new opens.
	prof, err := profile.Start(f.cpuprofile, f.memprofile, atomicfile.CreateAsUser)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := prof.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	// The pictures too: opened with the user's rights, written after
	// the scan has dropped every capability.
	var pages [2]*atomicfile.File
	for i, path := range []string{f.html, f.svg} {
		if path == "" || path == "-" {
			// "-" is standard output, written in the table's place: a
			// file named "-" was created.
			continue
		}
		if pages[i], err = atomicfile.CreateAsUser(path); err != nil {
			return fmt.Errorf("--%s: %w", [2]string{"html", "svg"}[i], err)
		}
		defer pages[i].Abort()
	}

	var (
		snap      *sample.Snapshot
		fromAgent bool
		note      string
		zram      uint64
		zramErr   error
	)
	if f.system && f.from == "" {
		// Read before the scan, whose --sandbox allows only the procfs
		// tree: the zram devices of the host the tree is of.
		if root := container.RootFor(f.procDir); root != "" {
			zram, zramErr = proc.ZramUsed(filepath.Join(root, "sys"))
		}
	}
	if f.from != "" {
		// A snapshot file: nothing is walked, nothing kept.
		if snap, err = readSnapshotFile(ctx, f.from, stderr); err != nil {
			return err
		}
		fromAgent = true
		if f.conns && !snap.ConnsOK {
			// The column would be missing, and a reader by position
			// would take the next one for it.
			return fmt.Errorf("--conns: %s holds no TCP counts: take it with memwho snapshot --conns", cli.OneLine(f.from))
		}
	} else {
		need := agentNeeds{by: plan.By, conns: f.conns, system: f.system}
		if snap, fromAgent, note, err = f.agent.fetch(ctx, f.procDir, need, stderr); err != nil {
			return err
		}
	}
	if !fromAgent {
		var warnings []string
		if snap, warnings, err = f.scan(ctx, plan, stderr); err != nil {
			return err
		}
		warnings = append(warnings, note)
		for _, w := range warnings {
			if w != "" {
				fmt.Fprintln(stderr, w)
			}
		}
	}
	if ctx.Err() != nil {
		return cli.ErrInterrupted
	}
	if f.from == "" && snap.MeminfoOK && snap.Meminfo.Zram == 0 {
		snap.Meminfo.Zram = zram
	}
	if zramErr != nil {
		fmt.Fprintf(stderr, "memwho: zram: %v: its line of the ledger counts the devices read before it\n", zramErr)
	}

	var tmpfs []sample.TmpfsUse
	var tmpfsMore int
	if f.system && f.from == "" && snap.MeminfoOK {
		if tmpfs, tmpfsMore, err = tmpfsUsage(f.procDir); err != nil {
			fmt.Fprintf(stderr, "memwho: tmpfs mounts: %v: the ledger lists none\n", err)
		}
	}

	// The host's ledger (--system) counts every process, before -p, -u,
	// --filter and --top choose the rows.
	host := sample.SumProcs(snap.Procs)
	procs, missing := plan.Procs(snap.Procs)
	if err := report.MissingPIDs(stderr, missing, len(plan.PIDs)); err != nil {
		return err
	}
	plan.Names = &sample.Namer{Containers: container.NewNames(container.RootFor(f.procDir))}
	groups, total := plan.Groups(procs)
	format := report.FormatTable
	switch {
	case f.total:
		format = report.FormatTotal
	case f.json:
		format = report.FormatJSON
	case f.csv:
		format = report.FormatCSV
	}
	opt := report.Options{
		By:        plan.By.String(),
		KeyHeader: report.KeyHeader(plan.By),
		ShowCount: plan.By != sample.ByPID,
		Fast:      f.fast && !fromAgent,
		// Who scanned: this run (with or without the capabilities),
		// the agent (root), or whoever took a snapshot file.
		Scanner:   scanner(f.from, fromAgent),
		Color:     report.UseColor(stdout),
		System:    f.system,
		Host:      &host,
		Conns:     snap.ConnsOK && f.conns,
		Split:     f.split,
		Tmpfs:     tmpfs,
		TmpfsMore: tmpfsMore,
	}
	if f.html != "" || f.svg != "" {
		opt.Hidden, opt.HostName = f.pictureContext(plan, groups, procs)
	}
	if f.html == "-" || f.svg == "-" {
		// The picture in the table's place, with the warnings the
		// table has.
		popt := opt
		popt.Color = false
		var err error
		if f.html == "-" {
			err = report.HTML(stdout, groups, total, procs, snap, popt)
		} else {
			err = report.SVG(stdout, groups, total, procs, snap, popt)
		}
		if err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		report.Warn(stderr, snap, procs, groups, opt.Fast, opt.Scanner)
	} else if err := report.Write(stdout, stderr, format, groups, total, procs, snap, opt); err != nil {
		return err
	}
	if err := writePages(pages, groups, total, procs, snap, opt); err != nil {
		return err
	}
	if err := prof.WriteHeap(); err != nil {
		return err
	}
	if rss := total.Estimated - total.Paced; f.total && rss > 0 && !opt.Fast {
		// The number is printed, but a script must not take it for
		// exact: ps_mem refuses, memwho says so in its exit status.
		// Processes read page by page are within a bound the report
		// states, and do not count here.
		return &cli.EstimateError{Msg: fmt.Sprintf("--total: %d of the %d processes counted are RSS-based estimates (shared pages counted in full): exit status %d; exact as root or with CAP_SYS_PTRACE (the privileged install), or ask for an estimate with --fast", rss, total.Count, cli.ExitEstimate)}
	}
	if f.system && !f.total && !f.csv && !snap.MeminfoOK {
		// The figures printed are right; what was asked for is not all
		// there, and a script must not take the report for complete.
		if f.from != "" {
			return fmt.Errorf("--system: %s holds no meminfo (the walk it was taken from could not read it): the report above has no system section", cli.OneLine(f.from))
		}
		return fmt.Errorf("--system: cannot read %s/meminfo (%v): the report above has no system section", f.procDir, snap.MeminfoErr)
	}
	return nil
}

// writePages renders and publishes the --html and --svg files opened
// (pages[0] and pages[1], nil when not asked for).
func writePages(pages [2]*atomicfile.File, groups []sample.Group, total sample.Group, procs []sample.Process, snap *sample.Snapshot, opt report.Options) error {
	opt.Color = false
	for i, f := range pages {
		if f == nil {
			continue
		}
		var err error
		if i == 0 {
			err = report.HTML(f, groups, total, procs, snap, opt)
		} else {
			err = report.SVG(f, groups, total, procs, snap, opt)
		}
		if err == nil {
			err = f.Commit()
		}
		if err != nil {
			return fmt.Errorf("--%s: %w", [2]string{"html", "svg"}[i], err)
		}
	}
	return nil
}

// pictureContext returns what the pictures need beyond the rows: the
// groups --top left out (drawn in "other" and listed, so that the maps
// are of every process selected, and the swap of groups not shown is
// not missing), and the host's name when the figures are this host's.
func (f *reportFlags) pictureContext(plan *sample.Selection, shown []sample.Group, procs []sample.Process) ([]sample.Group, string) {
	var hidden []sample.Group
	if plan.Top > 0 {
		all := *plan
		all.Top = 0
		groups, _ := all.Groups(procs)
		kept := make(map[string]bool, len(shown))
		for i := range shown {
			kept[shown[i].Key] = true
		}
		for _, g := range groups {
			if !kept[g.Key] {
				hidden = append(hidden, g)
			}
		}
	}
	host := ""
	if f.from == "" && f.procDir == "/proc" {
		host, _ = os.Hostname()
	}
	return hidden, host
}

// scan walks the procfs tree for the report, holding the capabilities
// the policy grants only until the walk is done; warnings found meanwhile
// are returned for the caller to print after the drop (a write to stderr
// can block).
func (f *reportFlags) scan(ctx context.Context, plan *sample.Selection, stderr io.Writer) (*sample.Snapshot, []string, error) {
	return scanOnce(ctx, f.procDir, engine.Options{
		Fast:       f.fast,
		NeedUID:    plan.HasUID || plan.By == sample.ByUser,
		NeedCgroup: plan.By.NeedsCgroup(),
		// The pictures nest programs in the groups.
		NoNames: (plan.By == sample.ByUser || plan.By.NeedsCgroup()) && f.html == "" && f.svg == "",
		PIDs:    plan.ScanPIDs(f.system),
	}, f.conns, f.sandbox, stderr)
}

// tmpfsUsage lists the tmpfs mounts of memwho's mount namespace with
// what each holds (the ledger's informational sub-lines), when procDir
// is the kernel's procfs: the mount points of a captured tree are
// another host's. Every capability is given up first, so statfs runs
// with the user's rights: a mount beneath a directory the user may not
// search is left out. A mount point hostile users chose (they can in a
// user namespace of their own only, which is not this one) is only
// statfs'd, and its name is sanitised by the renderers.
func tmpfsUsage(procDir string) ([]sample.TmpfsUse, int, error) {
	if err := privilege.Drop(); err != nil {
		return nil, 0, err
	}
	fs, err := proc.Open(procDir)
	if err != nil {
		return nil, 0, err
	}
	defer fs.Close()
	if !fs.IsProcfsRoot() {
		return nil, 0, nil
	}
	mounts, more, err := proc.TmpfsMounts(fs)
	if err != nil {
		return nil, 0, err
	}
	// The statfs calls run apart, bounded in time: resolving a mount
	// point's path can still enter a FUSE mount that never answers (a
	// user who may rename a directory above a tmpfs mount point can
	// mount one of theirs in its place with fusermount). What has not
	// answered by then is counted with the mounts left out; the stuck
	// thread holds no capability and ends with the process.
	out := make([]sample.TmpfsUse, 0, len(mounts))
	type answer struct {
		use sample.TmpfsUse
		ok  bool
	}
	done := make(chan answer, 1)
	timer := time.NewTimer(tmpfsTimeout)
	defer timer.Stop()
	seen := make(map[string]bool, len(mounts))
	// Read once, here: a statfs goroutine the timer left behind may only
	// start after the caller has gone on (and a test has put the real
	// statfs back: go test -race).
	statfs := tmpfsUsed
	for i, m := range mounts {
		// A mount point mounted over is listed once: statfs sees the top
		// mount only. The same tmpfs bind-mounted elsewhere is listed
		// at each of its mount points, as df lists it.
		if seen[m] {
			continue
		}
		seen[m] = true
		go func() {
			used, err := statfs(m)
			done <- answer{sample.TmpfsUse{Mount: m, Used: used}, err == nil}
		}()
		select {
		case a := <-done:
			if a.ok {
				out = append(out, a.use)
			}
		case <-timer.C:
			return out, more + len(mounts) - i, nil
		}
	}
	return out, more, nil
}

// tmpfsTimeout bounds the statfs calls of tmpfsUsage, all together.
var tmpfsTimeout = 2 * time.Second

// tmpfsUsed is proc.TmpfsUsed; tests replace it with one that hangs.
var tmpfsUsed = proc.TmpfsUsed

// excludesFrom refuses, with --from FILE, the flags that choose what
// is read from /proc and how: they were silently ignored, the file
// shown. Those of the agent's lookup (--fresh, --agent-socket,
// --max-age) are left alone: no agent is asked, and an alias that
// always passes --fresh still reads files.
func excludesFrom(fs *flag.FlagSet) error {
	return cli.Excludes(fs, "from", "the file's figures are shown, nothing is read from /proc", "proc", "fast")
}

// scanner says who walked /proc for the figures, for the hint after
// refused walks: whoever took a snapshot file (--from), whoever reads
// it; the agent (root) when its figures were fetched from its socket;
// else this run, with the capabilities (the privileged install) or
// without. A snapshot file is never the agent, whatever it is called:
// a comparison of the source line with "from memwho-agent" would match
// "--from memwho-agent", a file of that name, too.
func scanner(from string, fromAgent bool) report.Scanner {
	switch {
	case from != "":
		return report.ScannerFile
	case privilege.Elevated() || fromAgent:
		return report.ScannerPrivileged
	}
	return report.ScannerSelf
}
