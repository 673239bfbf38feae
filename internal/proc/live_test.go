package proc

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// startSleeper starts a child that does nothing, so that its memory is
// stable while several files of it are read.
func startSleeper(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Wait until the child has exec'd sleep: before that it is a copy of
	// the test binary whose memory is changing.
	pid := cmd.Process.Pid
	for i := 0; i < 500; i++ {
		exe, _ := os.Readlink("/proc/" + itoa(pid) + "/exe")
		if strings.HasSuffix(exe, "/sleep") {
			time.Sleep(20 * time.Millisecond)
			return pid
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("child did not exec sleep")
	return 0
}

func openLive(t testing.TB) *FS {
	t.Helper()
	fs, err := Open("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs
}

// TestLiveAgainstProcfs compares our parsers with prometheus/procfs on the
// same live process.
func TestLiveAgainstProcfs(t *testing.T) {
	fs := openLive(t)
	pid := startSleeper(t)
	r := fs.NewReader()
	if err := r.Open(pid); err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	pfs, err := procfs.NewFS("/proc")
	if err != nil {
		t.Fatal(err)
	}
	pp, err := pfs.Proc(pid)
	if err != nil {
		t.Fatal(err)
	}

	var st Status
	if err := r.Status(&st); err != nil {
		t.Fatal(err)
	}
	ps, err := pp.NewStatus()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.VmRSS, ps.VmRSS; got != want {
		t.Errorf("VmRSS = %d, want %d", got, want)
	}
	if got, want := st.RssAnon, ps.RssAnon; got != want {
		t.Errorf("RssAnon = %d, want %d", got, want)
	}
	if got, want := st.RssFile, ps.RssFile; got != want {
		t.Errorf("RssFile = %d, want %d", got, want)
	}
	if got, want := st.VmSwap, ps.VmSwap; got != want {
		t.Errorf("VmSwap = %d, want %d", got, want)
	}
	if got, want := string(st.NameBytes()), ps.Name; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
	if got, want := uint64(st.UID), ps.UIDs[0]; got != want {
		t.Errorf("UID = %d, want %d", got, want)
	}

	var ru Rollup
	if err := r.SmapsRollup(&ru); err != nil {
		t.Fatal(err)
	}
	pr, err := pp.ProcSMapsRollup()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"Rss", ru.Rss, pr.Rss},
		{"Pss", ru.Pss, pr.Pss},
		{"SharedClean", ru.SharedClean, pr.SharedClean},
		{"PrivateClean", ru.PrivateClean, pr.PrivateClean},
		{"PrivateDirty", ru.PrivateDirty, pr.PrivateDirty},
		{"Swap", ru.Swap, pr.Swap},
		{"SwapPss", ru.SwapPss, pr.SwapPss},
	} {
		if c.got != c.want {
			t.Errorf("smaps_rollup %s = %d, want %d", c.name, c.got, c.want)
		}
	}

	var sa Stat
	if err := r.Stat(&sa); err != nil {
		t.Fatal(err)
	}
	pst, err := pp.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sa.StartTime, pst.Starttime; got != want {
		t.Errorf("StartTime = %d, want %d", got, want)
	}
	if got, want := sa.PPid, pst.PPID; got != want {
		t.Errorf("PPid = %d, want %d", got, want)
	}
	if got, want := string(sa.CommBytes()), pst.Comm; got != want {
		t.Errorf("Comm = %q, want %q", got, want)
	}

	exe, err := r.Exe(nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.Readlink("/proc/" + itoa(pid) + "/exe")
	if string(exe) != want {
		t.Errorf("Exe = %q, want %q", exe, want)
	}
	cl, err := r.Cmdline()
	if err != nil || !bytes.HasPrefix(cl, []byte("sleep\x00600\x00")) {
		t.Errorf("Cmdline = %q, %v", cl, err)
	}
}

// TestLiveRollupMatchesSmaps is the differential test on a live process:
// smaps_rollup must equal the per-VMA sum of smaps. Pss fields may differ
// by less than 1 kB per VMA, because the kernel rounds each VMA's Pss down
// to whole kB in smaps but rounds only the total in smaps_rollup.
func TestLiveRollupMatchesSmaps(t *testing.T) {
	fs := openLive(t)
	pid := startSleeper(t)
	r := fs.NewReader()
	if err := r.Open(pid); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var roll, sum Rollup
	if err := r.SmapsRollup(&roll); err != nil {
		t.Fatal(err)
	}
	if err := r.Smaps(&sum); err != nil {
		t.Fatal(err)
	}
	b, _ := r.ReadFile("smaps\x00")
	vmas := uint64(bytes.Count(b, []byte("\nVmFlags:")))
	compareRollups(t, &roll, &sum, vmas)
}

func compareRollups(t *testing.T, roll, sum *Rollup, vmas uint64) {
	t.Helper()
	exact := []struct {
		name      string
		got, want uint64
	}{
		{"Rss", sum.Rss, roll.Rss},
		{"SharedClean", sum.SharedClean, roll.SharedClean},
		{"SharedDirty", sum.SharedDirty, roll.SharedDirty},
		{"PrivateClean", sum.PrivateClean, roll.PrivateClean},
		{"PrivateDirty", sum.PrivateDirty, roll.PrivateDirty},
		{"PrivateHugetlb", sum.PrivateHugetlb, roll.PrivateHugetlb},
		{"Swap", sum.Swap, roll.Swap},
	}
	for _, c := range exact {
		if c.got != c.want {
			t.Errorf("smaps sum %s = %d, smaps_rollup %d", c.name, c.got, c.want)
		}
	}
	for _, c := range []struct {
		name     string
		sum, rol uint64
	}{{"Pss", sum.Pss, roll.Pss}, {"SwapPss", sum.SwapPss, roll.SwapPss}} {
		if c.sum > c.rol || c.rol-c.sum > vmas*1024 {
			t.Errorf("smaps sum %s = %d, smaps_rollup %d: differ by more than 1 kB for each of %d VMAs", c.name, c.sum, c.rol, vmas)
		}
	}
}

// TestLivePIDReuseSafe shows why Reader.Open holds a directory descriptor:
// once the process it names has exited, reads through it fail with ErrGone
// even if the PID is handed to a new process.
func TestLivePIDReuseSafe(t *testing.T) {
	fs := openLive(t)
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	r := fs.NewReader()
	if err := r.Open(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd.Process.Kill()
	cmd.Wait()
	var st Stat
	if err := r.Stat(&st); err != ErrGone {
		t.Errorf("Stat after exit: err = %v, want ErrGone", err)
	}
	var ru Rollup
	if err := r.SmapsRollup(&ru); err != ErrGone && err != ErrNotExist && err != ErrNoMM {
		t.Errorf("SmapsRollup after exit: err = %v, want ErrGone", err)
	}
}

// TestLiveHeldAfterReuse is the guarantee Hold gives: once the process a
// held file was opened for is reaped, reading the file fails, even when
// another process has taken its PID and reads by path see that one.
func TestLiveHeldAfterReuse(t *testing.T) {
	fs := openLive(t)
	a := exec.Command("sleep", "600")
	if err := a.Start(); err != nil {
		t.Skip(err)
	}
	pid := a.Process.Pid
	r := fs.NewReader()
	defer r.Close()
	r.Select(pid)
	if err := r.Hold("smaps_rollup\x00"); err != nil {
		t.Fatal(err)
	}
	a.Process.Kill()
	a.Wait()

	// Give the PID to a new process when root may steer the next PID;
	// other forks on the host race for it, so try a few times.
	reused := false
	if os.Geteuid() == 0 {
		for try := 0; try < 50 && !reused; try++ {
			if os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(itoa(pid-1)), 0) != nil {
				break
			}
			b := exec.Command("sleep", "600")
			if err := b.Start(); err != nil {
				t.Fatal(err)
			}
			if b.Process.Pid == pid {
				reused = true
				t.Cleanup(func() { b.Process.Kill(); b.Wait() })
			} else {
				b.Process.Kill()
				b.Wait()
			}
		}
	}
	if reused {
		var st Stat
		if err := r.Stat(&st); err != nil {
			t.Fatalf("by path, the new process with pid %d: %v", pid, err)
		}
	} else {
		t.Logf("pid %d not reused (not root, or taken by others): checking the reaped case only", pid)
	}
	var ru Rollup
	switch err := r.RollupHeld(&ru); err {
	case ErrGone, ErrNoMM:
	default:
		t.Errorf("held smaps_rollup after the process was reaped (reused %v): err = %v, figures %+v", reused, err, ru)
	}
}

func TestLiveKernelThread(t *testing.T) {
	fs := openLive(t)
	r := fs.NewReader()
	if err := r.Open(2); err != nil {
		t.Skip("no pid 2")
	}
	defer r.Close()
	var st Stat
	if err := r.Stat(&st); err != nil {
		t.Fatal(err)
	}
	if !st.Kthread() {
		t.Skip("pid 2 is not a kernel thread here (container?)")
	}
	var ru Rollup
	if err := r.SmapsRollup(&ru); err != ErrNoMM {
		t.Errorf("SmapsRollup of kthreadd: err = %v, want ErrNoMM", err)
	}
	var ss Status
	if err := r.Status(&ss); err != nil || ss.HasMM {
		t.Errorf("Status of kthreadd: HasMM = %v, err = %v", ss.HasMM, err)
	}
}

func TestNoAllocs(t *testing.T) {
	fs := openLive(t)
	pid := startSleeper(t)
	r := fs.NewReader()
	var (
		st   Status
		sa   Stat
		ru   Rollup
		mi   Meminfo
		link = make([]byte, 0, 4096)
		pids = make([]int, 0, 4096)
		dbuf = make([]byte, 32768)
	)
	// Warm up: let the buffer grow to its steady size, and the Pacer
	// make its entry buffer (and, as root, its lookups and their
	// sample).
	r.Open(pid)
	r.Smaps(&ru)
	var pc Pacer
	paced := func() {
		r.Select(pid)
		r.HoldPagemap()
		r.Paced(&ru, &pc, Statm{})
		r.Close()
	}
	paced()
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"Open+Close", func() { r.Open(pid); r.Close() }},
		{"Status", func() { r.Open(pid); r.Status(&st); r.Close() }},
		{"Stat", func() { r.Open(pid); r.Stat(&sa); r.Close() }},
		{"SmapsRollup", func() { r.Open(pid); r.SmapsRollup(&ru); r.Close() }},
		{"Smaps", func() { r.Open(pid); r.Smaps(&ru); r.Close() }},
		{"Exe", func() { r.Open(pid); r.Exe(link); r.Close() }},
		{"Hold+Comm+Exe+RollupHeld", func() {
			r.Select(pid)
			r.Hold("smaps_rollup\x00")
			r.Comm()
			r.Exe(link)
			r.RollupHeld(&ru)
			r.Close()
		}},
		{"Cgroup", func() { r.Open(pid); r.Cgroup(); r.Close() }},
		{"CgroupPaths", func() { r.Open(pid); r.CgroupPaths(); r.Close() }},
		{"Threads", func() { r.Threads(pid) }},
		{"SelectTask+Hold+RollupHeld", func() {
			r.SelectTask(pid, pid)
			r.Hold("smaps_rollup\x00")
			r.RollupHeld(&ru)
			r.Close()
		}},
		{"Meminfo", func() { r.Meminfo(&mi) }},
		{"HoldPagemap+Paced", paced},
		{"PIDs", func() { pids, dbuf, _ = fs.PIDs(pids, dbuf) }},
		{"Gone", func() { r.Open(1 << 30) }},
	} {
		if n := testing.AllocsPerRun(100, c.f); n != 0 {
			t.Errorf("%s allocs = %v, want 0", c.name, n)
		}
	}
}

func itoa(v int) string { return string(AppendInt(nil, v)) }

func TestLiveSelect(t *testing.T) {
	fs := openLive(t)
	pid := startSleeper(t)
	r := fs.NewReader()
	r.Select(pid)
	var st Status
	if err := r.Status(&st); err != nil || !st.HasMM || st.Tgid != pid {
		t.Errorf("Status via Select: Tgid %d, HasMM %v, err %v", st.Tgid, st.HasMM, err)
	}
	exe, err := r.Exe(nil)
	if err != nil || !strings.HasSuffix(string(exe), "/sleep") {
		t.Errorf("Exe via Select = %q, %v", exe, err)
	}
	r.Select(1 << 30)
	if err := r.Status(&st); err != ErrGone {
		t.Errorf("Status of a missing pid via Select: err = %v, want ErrGone", err)
	}
	if n := testing.AllocsPerRun(100, func() { r.Select(pid); r.Status(&st); r.Exe(nil) }); n > 1 {
		t.Errorf("Select+Status+Exe allocs = %v", n)
	}
}
