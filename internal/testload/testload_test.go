package testload

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	kiB = 1 << 10
	miB = 1 << 20
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0", 0, false},
		{"4096", 4096, false},
		{"4096B", 4096, false},
		{"1k", kiB, false},
		{"1KB", kiB, false},
		{"64KiB", 64 * kiB, false},
		{"8MiB", 8 * miB, false},
		{"8m", 8 * miB, false},
		{" 2 MiB ", 2 * miB, false},
		{"1GiB", 1 << 30, false},
		{"", 0, true},
		{"MiB", 0, true},
		{"-1MiB", 0, true},
		{"1.5MiB", 0, true},
		{"1TiB", 0, true},
		{"99999999999GiB", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestFormatSizeRoundTrip(t *testing.T) {
	for _, n := range []int64{0, 1, 4095, 4096, 3 * miB, 5 << 30, miB + 1} {
		s := FormatSize(n)
		got, err := ParseSize(s)
		if err != nil || got != n {
			t.Errorf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, s, got, err)
		}
	}
}

func TestParseChildSpec(t *testing.T) {
	spec := Spec{Private: 1, FileShared: 2, MemfdShared: 3, COW: 4}
	env := childEnviron(spec, true)
	enc := strings.TrimPrefix(env[0], childEnv+"=")
	got, err := parseChildSpec(enc)
	want := childSpec{private: 1, file: 2, memfd: 3, cow: 4, exit: true}
	if err != nil || got != want {
		t.Errorf("parseChildSpec(%q) = %+v, %v; want %+v", enc, got, err, want)
	}
	for _, bad := range []string{"private=x", "bogus=1", "private=-1", ""} {
		if _, err := parseChildSpec(bad); err == nil {
			t.Errorf("parseChildSpec(%q): no error", bad)
		}
	}
}

// start starts a group that the test stops when it ends.
func start(t *testing.T, n int, spec Spec) *Group {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := Start(ctx, n, spec)
	if err != nil {
		t.Fatalf("Start(%d, %+v): %v", n, spec, err)
	}
	t.Cleanup(func() { g.Stop() })
	return g
}

func rollup(t *testing.T, pid int) map[string]int64 {
	t.Helper()
	m, err := ProcKB(pid, "smaps_rollup")
	if err != nil {
		t.Fatalf("smaps_rollup of %d: %v", pid, err)
	}
	// Whether a page-cache page shows as clean or dirty depends on
	// writeback timing, so tests compare the sums.
	m["Private"] = m["Private_Clean"] + m["Private_Dirty"]
	m["Shared"] = m["Shared_Clean"] + m["Shared_Dirty"]
	return m
}

// near reports whether got is within 1% of want, plus slack bytes.
func near(got, want, slack int64) bool {
	return math.Abs(float64(got-want)) <= 0.01*float64(want)+float64(slack)
}

// runtimeNoise is how much an idle child's own private memory can differ
// from the baseline child's: the Go runtime starts threads on demand, and
// each costs a signal stack and some stack pages. Fields that include the
// runtime's memory but measure a small object get it as slack.
const runtimeNoise = 256 * kiB

// TestStartFigures checks each kind of memory against smaps_rollup as the
// kernel reports it, relative to a baseline child (no extra memory) read
// at the same moment, which cancels the child's own runtime footprint and
// its share of the executable's pages.
func TestStartFigures(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		spec  Spec
		field string // smaps_rollup field that holds the memory
		want  int64  // per child, over the baseline
		slack int64  // beyond 1%
	}{
		{"private", 1, Spec{Private: 64 * miB}, "Private_Dirty", 64 * miB, 0},
		{"private pss", 1, Spec{Private: 64 * miB}, "Pss_Anon", 64 * miB, 0},
		{"private unaligned", 1, Spec{Private: 10*miB + 1}, "Private_Dirty", 10*miB + 4*kiB, 0},
		{"file shared pss", 4, Spec{FileShared: 32 * miB}, "Pss_File", 8 * miB, 0},
		{"file shared", 4, Spec{FileShared: 32 * miB}, "Pss", 8 * miB, runtimeNoise},
		{"file shared rss", 4, Spec{FileShared: 32 * miB}, "Shared", 32 * miB, 0},
		{"file mapped by one", 1, Spec{FileShared: 8 * miB}, "Private", 8 * miB, runtimeNoise},
		{"memfd shared", 4, Spec{MemfdShared: 32 * miB}, "Pss_Shmem", 8 * miB, 0},
		{"memfd shared pss", 4, Spec{MemfdShared: 32 * miB}, "Pss", 8 * miB, runtimeNoise},
		{"memfd shared rss", 4, Spec{MemfdShared: 32 * miB}, "Shared", 32 * miB, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := start(t, 1, Spec{})
			g := start(t, tt.n, tt.spec)
			b := rollup(t, base.PIDs[0])
			for _, pid := range g.PIDs {
				got := rollup(t, pid)[tt.field] - b[tt.field]
				if !near(got, tt.want, tt.slack) {
					t.Errorf("pid %d: %s over baseline = %d kB, want %d kB ±1%%", pid, tt.field, got/kiB, tt.want/kiB)
				}
			}
		})
	}
}

// TestCOW checks that a child and its raw-forked grandchild share the COW
// memory: each has half of it in Pss, and together they have it once.
func TestCOW(t *testing.T) {
	const size = 64 * miB
	base := start(t, 1, Spec{})
	g := start(t, 1, Spec{COW: size})
	if g.COWPIDs[0] <= 0 {
		t.Fatalf("no grandchild: COWPIDs = %v", g.COWPIDs)
	}
	b := rollup(t, base.PIDs[0])
	c, gc := rollup(t, g.PIDs[0]), rollup(t, g.COWPIDs[0])
	for _, r := range []map[string]int64{c, gc} {
		if r["Rss"] < size {
			t.Errorf("Rss %d kB, want at least %d kB", r["Rss"]/kiB, size/kiB)
		}
		if !near(r["Pss_Anon"], size/2+b["Pss_Anon"]/2, 0) {
			t.Errorf("Pss_Anon %d kB, want about %d kB", r["Pss_Anon"]/kiB, (size/2+b["Pss_Anon"]/2)/kiB)
		}
	}
	// The pair shares the child's runtime memory too, so together they
	// hold about one baseline's worth of it plus the COW memory.
	if sum := c["Pss_Anon"] + gc["Pss_Anon"] - b["Pss_Anon"]; !near(sum, size, 0) {
		t.Errorf("child + grandchild Pss_Anon over baseline = %d kB, want %d kB ±1%%", sum/kiB, size/kiB)
	}
	ppid, err := ppidOf(g.COWPIDs[0])
	if err != nil || ppid != g.PIDs[0] {
		t.Errorf("grandchild's parent = %d, %v; want %d", ppid, err, g.PIDs[0])
	}
}

func ppidOf(pid int) (int, error) {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("no PPid")
}

// gone waits until none of pids exists (zombies count as gone: they hold
// no memory and their reaper is init).
func gone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for {
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				break
			}
			if i := strings.LastIndexByte(string(st), ')'); i > 0 && strings.HasPrefix(string(st[i+1:]), " Z") {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("pid %d still alive: %s", pid, st)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestStopKillsEverything(t *testing.T) {
	g := start(t, 3, Spec{Private: miB, FileShared: miB, MemfdShared: miB, COW: miB})
	all := g.All()
	if len(all) != 6 {
		t.Fatalf("All() = %v, want 3 children and 3 grandchildren", all)
	}
	g.Stop()
	g.Stop() // idempotent
	gone(t, all)
}

func TestStartFailsCleanly(t *testing.T) {
	if _, err := Start(context.Background(), 0, Spec{}); err == nil {
		t.Error("Start with n=0: no error")
	}
	if _, err := Start(context.Background(), 1, Spec{Private: -1}); err == nil {
		t.Error("Start with a negative size: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, 2, Spec{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with a cancelled context = %v, want context.Canceled", err)
	}
	// An impossible mapping makes the children report an error.
	_, err := Start(context.Background(), 1, Spec{Private: 1 << 50})
	if err == nil || !strings.Contains(err.Error(), "mmap") {
		t.Errorf("Start with a 1 PiB mapping = %v, want an mmap error from the child", err)
	}
}

// helperEnv makes the test binary act as a process that starts a group and
// then waits to be killed (see TestHelperGroupParent).
const helperEnv = "MEMWHO_TESTLOAD_TEST_PARENT"

// TestHelperGroupParent is not a real test: TestParentDeath runs the test
// binary with only this test selected and helperEnv set.
func TestHelperGroupParent(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process for TestParentDeath")
	}
	g, err := Start(context.Background(), 3, Spec{Private: miB, COW: miB})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(strings.Trim(fmt.Sprint(g.All()), "[]"))
	select {} // killed by the test
}

// TestParentDeath kills a group's parent with SIGKILL, which runs no Stop,
// and checks that the kernel takes the children and grandchildren down.
func TestParentDeath(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperGroupParent$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(line) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("helper said %q", line)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 6 {
		t.Fatalf("helper started %v, want 6 processes", pids)
	}
	cmd.Process.Kill()
	cmd.Wait()
	gone(t, pids)
}

func TestChurn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	wait := Churn(ctx, 2, 256*kiB)
	<-ctx.Done()
	n, err := wait()
	if err != nil || n == 0 {
		t.Errorf("Churn started %d processes, error %v", n, err)
	}
	t.Logf("churn: %d processes in 500ms", n)
}

func TestStartTime(t *testing.T) {
	g := start(t, 1, Spec{})
	st, err := StartTime(g.PIDs[0])
	if err != nil || st == 0 {
		t.Errorf("StartTime = %d, %v", st, err)
	}
	self, err := StartTime(os.Getpid())
	if err != nil || self > st {
		t.Errorf("own StartTime %d (%v) after the child's %d", self, err, st)
	}
}

// TestPushToSwap pushes a child's private memory to swap: the kernel must
// then report it as Swap, and SwapPss equal to Swap since nothing is shared.
func TestPushToSwap(t *testing.T) {
	const size = 64 * miB
	EnsureSwap(t, 512*miB)
	cg := NewMemCgroup(t)
	g := start(t, 1, Spec{Private: size, Cgroup: cg.Path})
	cg.PushToSwap(t, size, g.PIDs...)
	r := rollup(t, g.PIDs[0])
	t.Logf("after push: Rss %d kB, Swap %d kB, SwapPss %d kB", r["Rss"]/kiB, r["Swap"]/kiB, r["SwapPss"]/kiB)
	if r["Swap"] < size || r["SwapPss"] != r["Swap"] {
		t.Errorf("Swap %d kB, SwapPss %d kB; want both at least %d kB and equal", r["Swap"]/kiB, r["SwapPss"]/kiB, size/kiB)
	}
}

// TestPushToSwapCOW swaps memory shared copy-on-write: each process has
// all of it in Swap, but their SwapPss adds up to it once.
func TestPushToSwapCOW(t *testing.T) {
	const size = 64 * miB
	EnsureSwap(t, 512*miB)
	cg := NewMemCgroup(t)
	g := start(t, 1, Spec{COW: size, Cgroup: cg.Path})
	pair := g.All()
	cg.PushToSwap(t, size, pair...)
	var swapPss int64
	for _, pid := range pair {
		r := rollup(t, pid)
		t.Logf("pid %d: Rss %d kB, Swap %d kB, SwapPss %d kB", pid, r["Rss"]/kiB, r["Swap"]/kiB, r["SwapPss"]/kiB)
		if r["Swap"] < size {
			t.Errorf("pid %d: Swap %d kB, want at least %d kB", pid, r["Swap"]/kiB, size/kiB)
		}
		swapPss += r["SwapPss"]
	}
	// Beyond the COW memory only the child's runtime pages (a few
	// hundred kB, also shared) can be in swap.
	if swapPss < size || swapPss > size+4*miB {
		t.Errorf("SwapPss of the pair = %d kB, want %d kB (+ at most 4 MiB of runtime)", swapPss/kiB, size/kiB)
	}
}

func TestNewMemCgroupSkipsWithoutRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("skipping: runs only as non-root")
	}
	t.Run("inner", func(t *testing.T) {
		NewMemCgroup(t)
		t.Error("NewMemCgroup returned without root")
	})
}
