package proc

import (
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/proc/proctest"
)

const kB = 1024

func openFixture(t *testing.T, name string) *FS {
	t.Helper()
	fs, err := Open(proctest.Root(t, "testdata/"+name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs
}

// TestFixtureRollup checks smaps_rollup figures of processes captured from
// a 6.18 kernel (the values are listed in testdata/README.md).
func TestFixtureRollup(t *testing.T) {
	for _, tc := range []struct {
		fixture                   string
		pid                       int
		pss, private, privHugetlb uint64
		swap, swapPss             uint64
		smapsOnly                 bool
		wantErr                   error
	}{
		{fixture: "basic", pid: 6570, pss: 667 * kB, private: 272 * kB},
		{fixture: "basic", pid: 6571, pss: 8456 * kB, private: 8240 * kB},
		{fixture: "basic", pid: 6572, pss: 2316 * kB, private: 52 * kB},
		{fixture: "basic", pid: 6573, pss: 2308 * kB, private: 44 * kB},
		{fixture: "no-smaps-rollup", pid: 6955, pss: 8454 * kB, private: 8240 * kB, smapsOnly: true},
		{fixture: "no-smaps-rollup", pid: 6956, pss: 2310 * kB, private: 48 * kB, smapsOnly: true},
		{fixture: "hugetlb", pid: 10006, pss: 684 * kB, private: 684 * kB, privHugetlb: 4096 * kB},
		{fixture: "swap", pid: 11742, pss: 532 * kB, private: 420 * kB, swap: 12332 * kB, swapPss: 8222 * kB},
		{fixture: "swap", pid: 11753, pss: 112 * kB, private: 0, swap: 8236 * kB, swapPss: 4126 * kB},
		{fixture: "truncated", pid: 9605, wantErr: ErrMalformed},
		{fixture: "truncated", pid: 9604, pss: 368 * kB, private: 48 * kB},
		{fixture: "zombie", pid: 7301, wantErr: ErrNotExist},
		{fixture: "kernel-thread", pid: 2, wantErr: ErrNotExist},
	} {
		t.Run(tc.fixture+"/"+itoa(tc.pid), func(t *testing.T) {
			fs := openFixture(t, tc.fixture)
			r := fs.NewReader()
			if err := r.Open(tc.pid); err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var ru Rollup
			err := r.SmapsRollup(&ru)
			if tc.smapsOnly {
				if err != ErrNotExist {
					t.Fatalf("SmapsRollup err = %v, want ErrNotExist", err)
				}
				err = r.Smaps(&ru)
			}
			if err != tc.wantErr {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got := ru.Pss; got != tc.pss {
				t.Errorf("Pss = %d, want %d", got, tc.pss)
			}
			if got := ru.PrivateClean + ru.PrivateDirty; got != tc.private {
				t.Errorf("Private = %d, want %d", got, tc.private)
			}
			if got := ru.PrivateHugetlb; got != tc.privHugetlb {
				t.Errorf("Private_Hugetlb = %d, want %d", got, tc.privHugetlb)
			}
			if got := ru.Swap; got != tc.swap {
				t.Errorf("Swap = %d, want %d", got, tc.swap)
			}
			if got := ru.SwapPss; got != tc.swapPss {
				t.Errorf("SwapPss = %d, want %d", got, tc.swapPss)
			}
		})
	}
}

// TestFixtureRollupMatchesSmaps is the differential test on fixtures: the
// per-VMA sum of smaps equals smaps_rollup, Pss within 1 kB a VMA.
func TestFixtureRollupMatchesSmaps(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		pids    []int
	}{
		{"basic", []int{6570, 6571, 6572, 6573}},
		{"hugetlb", []int{10006}},
		{"swap", []int{11742, 11753}},
		{"cgroup-v1", []int{10629, 10630}},
	} {
		fs := openFixture(t, tc.fixture)
		r := fs.NewReader()
		for _, pid := range tc.pids {
			t.Run(tc.fixture+"/"+itoa(pid), func(t *testing.T) {
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
				vmas := uint64(0)
				for i := 0; i+9 <= len(b); i++ {
					if string(b[i:i+9]) == "VmFlags: " {
						vmas++
					}
				}
				compareRollups(t, &roll, &sum, vmas)
			})
		}
	}
}

func TestFixtureStatAndNames(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		pid     int
		comm    string // raw bytes from stat and comm
		status  string // Name: as status shows it
		exe     string
		kthread bool
		state   byte
	}{
		{fixture: "names", pid: 8644, comm: "a b c", status: "a b c"},
		{fixture: "names", pid: 8645, comm: "x)y (z", status: "x)y (z"},
		{fixture: "names", pid: 8646, comm: "new\nline", status: `new\nline`},
		{fixture: "names", pid: 8651, comm: "\x1b[31mred", status: "\x1b[31mred"},
		{fixture: "names", pid: 8652, comm: "\xffbad\xfe", status: "\xffbad\xfe"},
		{fixture: "names", pid: 8661, comm: ") R 0 0 0", status: ") R 0 0 0"},
		{fixture: "names", pid: 9126, comm: "t\tb\\s", status: `t	b\\s`},
		{fixture: "names", pid: 8665, comm: "sleep copy", status: "sleep copy", exe: "/tmp/memwho-fx/sleep copy (deleted)"},
		{fixture: "name-escapes", pid: 4920, comm: `a\nb`, status: `a\\nb`},
		{fixture: "name-escapes", pid: 4921, comm: `\`, status: `\\`},
		{fixture: "name-escapes", pid: 4922, comm: `ab\`, status: `ab\\`},
		{fixture: "name-escapes", pid: 4925, comm: "\\\n", status: `\\\n`},
		{fixture: "name-escapes", pid: 4928, comm: "\nn", status: `\nn`},
		{fixture: "name-escapes", pid: 4945, comm: `\\n`, status: `\\\\n`},
		{fixture: "name-escapes", pid: 4946, comm: strings.Repeat(`\`, 15), status: strings.Repeat(`\`, 30)},
		{fixture: "name-escapes", pid: 4947, comm: "x\nUid:\t0\t0\t0", status: "x\\nUid:\t0\t0\t0"},
		{fixture: "name-escapes", pid: 4948, comm: "q\"\a\x1b\r\v\f", status: "q\"\a\x1b\r\v\f"},
		{fixture: "name-escapes", pid: 4949, comm: strings.Repeat("\n", 15), status: strings.Repeat(`\n`, 15)},
		{fixture: "kernel-thread", pid: 6, comm: "kworker/R-kvfree_rcu_reclaim", kthread: true},
		{fixture: "zombie", pid: 7301, comm: "helper", status: "helper", state: 'Z'},
	} {
		t.Run(tc.fixture+"/"+itoa(tc.pid), func(t *testing.T) {
			fs := openFixture(t, tc.fixture)
			r := fs.NewReader()
			if err := r.Open(tc.pid); err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var st Stat
			if err := r.Stat(&st); err != nil {
				t.Fatal(err)
			}
			if got := string(st.CommBytes()); got != tc.comm {
				t.Errorf("stat comm = %q, want %q", got, tc.comm)
			}
			if st.Kthread() != tc.kthread {
				t.Errorf("Kthread = %v, want %v", st.Kthread(), tc.kthread)
			}
			if tc.state != 0 && st.State != tc.state {
				t.Errorf("State = %c, want %c", st.State, tc.state)
			}
			comm, err := r.Comm()
			if err != nil || string(comm) != tc.comm {
				t.Errorf("Comm() = %q, %v, want %q", comm, err, tc.comm)
			}
			var ss Status
			if err := r.Status(&ss); err != nil {
				t.Fatal(err)
			}
			if tc.status != "" {
				if got := string(ss.NameBytes()); got != tc.status {
					t.Errorf("status Name = %q, want %q", got, tc.status)
				}
				if got := string(UnescapeName(nil, ss.NameBytes())); got != tc.comm {
					t.Errorf("UnescapeName = %q, want %q", got, tc.comm)
				}
			}
			if ss.HasMM == (tc.kthread || tc.state == 'Z') {
				t.Errorf("HasMM = %v for kthread=%v state=%c", ss.HasMM, tc.kthread, tc.state)
			}
			exe, err := r.Exe(nil)
			if tc.exe != "" && (err != nil || string(exe) != tc.exe) {
				t.Errorf("Exe = %q, %v, want %q", exe, err, tc.exe)
			}
		})
	}
}

func TestFixtureTruncated(t *testing.T) {
	fs := openFixture(t, "truncated")
	r := fs.NewReader()
	if err := r.Open(9605); err != nil {
		t.Fatal(err)
	}
	var ss Status
	if err := r.Status(&ss); err != ErrMalformed {
		t.Errorf("status cut before VmRSS: err = %v, want ErrMalformed", err)
	}
	if err := r.Open(9604); err != nil {
		t.Fatal(err)
	}
	var st Stat
	if err := r.Stat(&st); err != ErrMalformed {
		t.Errorf("stat cut short: err = %v, want ErrMalformed", err)
	}
	var ru Rollup
	if err := r.Smaps(&ru); err != ErrMalformed {
		t.Errorf("smaps cut in a header: err = %v, want ErrMalformed", err)
	}
}

func TestFixtureCgroup(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		pid     int
		want    string
		systemd string // "": want
	}{
		{"cgroup-v1", 10629, "/system.slice/nginx.service", ""},
		{"cgroup-v1", 10630, "/docker/300a4e177913e2ae68c2811ead790b9e0889ada88bce328fc5d9b627a39f3d53", ""},
		{"cgroup-v2", 11366, "/system.slice/nginx.service", ""},
		{"cgroup-v2", 11367, "/system.slice/docker-300a4e177913e2ae68c2811ead790b9e0889ada88bce328fc5d9b627a39f3d53.scope", ""},
		// Hybrid: the memory controller's path is not the unit's.
		{"cgroup-v2", 11368, "/process_api/e945dd35e2bff91edcf55b8a09aaf42d", "/system.slice/cron.service"},
		// Legacy v1: the unified hierarchy is listed at its root;
		// systemd's named hierarchy holds the unit.
		{"containers", 9926, "/process_api/aadcb5049e02165aff621b58dad4a56b", "/system.slice/ssh.service"},
		{"containers", 9903, "/process_api/aadcb5049e02165aff621b58dad4a56b", "/system.slice/docker-bae9bc2df07a1e918fa1ec026b1d3ff618affb334710107de813f66fee79cb63.scope"},
	} {
		t.Run(tc.fixture+"/"+itoa(tc.pid), func(t *testing.T) {
			fs := openFixture(t, tc.fixture)
			r := fs.NewReader()
			if err := r.Open(tc.pid); err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := r.Cgroup()
			if err != nil || string(got) != tc.want {
				t.Errorf("Cgroup = %q, %v, want %q", got, err, tc.want)
			}
			want := tc.systemd
			if want == "" {
				want = tc.want
			}
			_, sd, err := r.CgroupPaths()
			if err != nil || string(sd) != want {
				t.Errorf("CgroupPaths systemd = %q, %v, want %q", sd, err, want)
			}
		})
	}
}

func TestFixtureMeminfoAndPIDs(t *testing.T) {
	fs := openFixture(t, "hugetlb")
	var mi Meminfo
	if err := fs.NewReader().Meminfo(&mi); err != nil {
		t.Fatal(err)
	}
	if mi.MemTotal == 0 || mi.Hugetlb != 4*2048*kB {
		t.Errorf("Meminfo = %+v, want MemTotal > 0 and Hugetlb 8 MiB", mi)
	}
	pids, _, err := openFixture(t, "basic").PIDs(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) != 4 {
		t.Errorf("PIDs = %v, want the 4 captured processes", pids)
	}
}

// TestFixtureLeaderExited: the differential test of smaps_rollup against
// the per-mapping smaps sum, read through the live thread of a process
// whose main thread has exited; the leader itself has no address space.
func TestFixtureLeaderExited(t *testing.T) {
	fs := openFixture(t, "leader-exited")
	r := fs.NewReader()
	if n := r.Threads(5352); n != 2 {
		t.Errorf("Threads(5352) = %d, want 2 (the two task directories captured)", n)
	}
	tids, _, err := r.Tasks(5352, nil, nil)
	if err != nil || len(tids) != 2 {
		t.Fatalf("Tasks(5352) = %v, %v", tids, err)
	}
	var roll, sum Rollup
	r.Select(5352)
	if err := r.SmapsRollup(&roll); err != ErrNotExist {
		t.Errorf("leader's smaps_rollup: err = %v, want ErrNotExist (absent)", err)
	}
	if err := r.OpenTask(5352, 5354); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.SmapsRollup(&roll); err != nil {
		t.Fatal(err)
	}
	if err := r.Smaps(&sum); err != nil {
		t.Fatal(err)
	}
	b, _ := r.ReadFile("smaps\x00")
	compareRollups(t, &roll, &sum, uint64(strings.Count(string(b), "VmFlags: ")))
	var st Stat
	if err := r.LeaderStat(&st); err != nil || st.StartTime != 126271 || st.State != 'Z' {
		t.Errorf("LeaderStat = start %d state %c, %v; want the zombie leader's 126271", st.StartTime, st.State, err)
	}
}
