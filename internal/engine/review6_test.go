package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/sample"
	"github.com/memwho/memwho/internal/testload"
)

// Review6 (docs/safe.md, "A sixth adversarial review"): memwho runs out
// of descriptors or memory (EMFILE, ENFILE, ENOMEM) at one given step of
// a read. A real kernel cannot be made to fail one given open on cue, so
// the step is failed through proc.SetFault, once, with the errno the
// kernel would give. Whatever the step, a process must be listed with
// its own figures and names, or counted skipped (Broken): never gone,
// never a kernel thread, never under another name or cgroup; and once
// descriptors are back, listed as before.

// onceFault fails the first call of op whose path a key of want
// matches, once per key: a key matches a path that ends with it, or with
// a "=" first, that path alone; with a "*" in it, one that starts with what precedes the star and ends with
// what follows. Op "statm" is a read of a held statm descriptor, whose
// path is "". It counts what it failed.
type onceFault struct {
	mu    sync.Mutex
	op    string
	want  []string
	errno syscall.Errno
	fired map[string]bool
	n     int
}

func (f *onceFault) fault(op, path string) syscall.Errno {
	if op != f.op {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.want {
		ok := strings.HasSuffix(path, w)
		if e, exact := strings.CutPrefix(w, "="); exact {
			ok = path == e
		}
		if pre, suf, star := strings.Cut(w, "*"); star {
			ok = strings.HasPrefix(path, pre) && strings.HasSuffix(path, suf)
		}
		if ok && !f.fired[w] {
			f.fired[w] = true
			f.n++
			return f.errno
		}
	}
	return 0
}

// review6Procs starts the processes the fault table reads: a sleep
// whose argv[0] names another program (what a name from the command
// line would show), a perl script (its script name comes from cmdline),
// and a process whose main thread has exited (read through a thread,
// after listing /proc/PID/task).
func review6Procs(t *testing.T) (pids []int, leader int) {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	cmd := exec.Command(sleep, "600")
	cmd.Args[0] = "/nowhere/sleepwalker"
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pids = append(pids, cmd.Process.Pid)
	if perl, err := exec.LookPath("perl"); err == nil {
		script := filepath.Join(t.TempDir(), "review6script.pl")
		if err := os.WriteFile(script, []byte("sleep 600;\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		pc := exec.Command(perl, script)
		if err := pc.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Process.Kill(); pc.Wait() })
		pids = append(pids, pc.Process.Pid)
	} else {
		t.Log("no perl: the script-name step is not tried")
	}
	g := startLoad(t, 1, testload.Spec{Private: 4 << 20, LeaderExit: true})
	leader = g.PIDs[0]
	if _, err := testload.WaitLeaderExited(leader, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	pids = append(pids, leader)
	// Wait until every exec is done (the names are the programs').
	for _, pid := range pids[:len(pids)-1] {
		for i := 0; ; i++ {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
			if c := strings.TrimSpace(string(b)); c == "sleep" || strings.HasPrefix(c, "perl") {
				break
			}
			if i == 500 {
				t.Fatalf("PID %d never exec'd", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return pids, leader
}

// TestReview6StarvedStep: the fault table. Each row fails one step of
// the first read of the processes once; the tick (or the one-shot scan)
// that meets it must list each process as the baseline does or count it
// skipped, and the next ticks must list all of them as the baseline.
func TestReview6StarvedStep(t *testing.T) {
	pids, leader := review6Procs(t)
	lp := strconv.Itoa(leader)
	var each []string
	for _, pid := range pids {
		each = append(each, strconv.Itoa(pid)+"/")
	}
	var exact []string
	for _, pid := range pids {
		exact = append(exact, "="+strconv.Itoa(pid))
	}
	suffixes := func(file string) []string {
		var s []string
		for _, p := range each {
			s = append(s, p+file)
		}
		return s
	}
	for _, row := range []struct {
		name  string
		op    string
		want  []string
		errno syscall.Errno
	}{
		// Held before this review.
		{"statm open EMFILE", "open", suffixes("statm"), syscall.EMFILE},
		{"smaps_rollup open EMFILE", "open", suffixes("smaps_rollup"), syscall.EMFILE},
		{"stat open ENFILE", "open", suffixes("stat"), syscall.ENFILE},
		{"status open EMFILE", "open", suffixes("status"), syscall.EMFILE},
		{"comm open EMFILE", "open", suffixes("comm"), syscall.EMFILE},
		{"process directory open EMFILE", "open", exact, syscall.EMFILE},
		// Broke before this review.
		{"held statm read ENOMEM", "statm", []string{""}, syscall.ENOMEM},
		{"task list open EMFILE (main thread exited)", "open", []string{lp + "/task"}, syscall.EMFILE},
		{"thread statm open EMFILE (main thread exited)", "open", []string{lp + "/task/*/statm"}, syscall.EMFILE},
		{"exe link ENOMEM", "readlink", suffixes("exe"), syscall.ENOMEM},
		{"cmdline open EMFILE", "open", suffixes("cmdline"), syscall.EMFILE},
		{"cgroup open ENFILE", "open", suffixes("cgroup"), syscall.ENFILE},
	} {
		fired := 0
		for _, mode := range []struct {
			name string
			opt  Options
		}{
			{"held", Options{}},
			{"by path", Options{MaxHeld: -1}},
			{"oneshot", Options{OneShot: true}},
			{"fast", Options{Fast: true}},
			{"fast by path", Options{Fast: true, MaxHeld: -1}},
			{"fast oneshot", Options{Fast: true, OneShot: true}},
		} {
			t.Run(row.name+"/"+mode.name, func(t *testing.T) {
				f := &onceFault{op: row.op, want: row.want, errno: row.errno, fired: map[string]bool{}}
				opt := mode.opt
				opt.FS, opt.PIDs, opt.NeedCgroup = fstest.Open(t, "/proc"), pids, true
				base := map[int]sample.Process{}
				{
					e := newEngine(t, opt)
					var snap sample.Snapshot
					if err := e.Scan(&snap); err != nil {
						t.Fatal(err)
					}
					if len(snap.Procs) != len(pids) {
						t.Fatalf("baseline: %d of %d processes (kernel %d, gone %d)", len(snap.Procs), len(pids), snap.Kernel, snap.Gone)
					}
					for _, p := range snap.Procs {
						if p.Cgroup == "" {
							t.Fatalf("baseline: PID %d has no cgroup", p.PID)
						}
						base[p.PID] = p
					}
				}
				e := newEngine(t, opt)
				restore := proc.SetFault(f.fault)
				scan := func(tick int) *sample.Snapshot {
					t.Helper()
					var snap sample.Snapshot
					if err := e.Scan(&snap); err != nil {
						t.Fatal(err)
					}
					return &snap
				}
				snap := scan(1)
				restore()
				fired += f.n
				check := func(tick int, snap *sample.Snapshot, skipOK bool) {
					t.Helper()
					if snap.Gone != 0 || snap.Kernel != 0 {
						t.Errorf("tick %d: %d gone, %d kernel threads; none is either", tick, snap.Gone, snap.Kernel)
					}
					if len(snap.Procs)+snap.Broken != len(pids) {
						t.Errorf("tick %d: %d listed + %d skipped, want %d", tick, len(snap.Procs), snap.Broken, len(pids))
					}
					if !skipOK && len(snap.Procs) != len(pids) {
						t.Errorf("tick %d: %d listed, want all %d (skipped %d)", tick, len(snap.Procs), len(pids), snap.Broken)
					}
					for _, p := range snap.Procs {
						b := base[p.PID]
						if p.Name != b.Name || p.Exe != b.Exe || p.Script != b.Script || p.Cgroup != b.Cgroup {
							t.Errorf("tick %d: PID %d shown as %q (exe %q, script %q, cgroup %q), want %q (%q, %q, %q)",
								tick, p.PID, p.Name, p.Exe, p.Script, p.Cgroup, b.Name, b.Exe, b.Script, b.Cgroup)
						}
						if p.RAM == 0 {
							t.Errorf("tick %d: PID %d shown without memory", tick, p.PID)
						}
					}
				}
				check(1, snap, true)
				for tick := 2; tick <= 3; tick++ {
					check(tick, scan(tick), false)
				}
				t.Logf("%d steps failed", f.n)
			})
		}
		if fired == 0 {
			t.Errorf("%s: the fault never fired in any mode: the row tests nothing", row.name)
		}
	}
}
