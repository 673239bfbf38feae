package sample

import (
	"math"
	"regexp"
	"slices"
	"testing"
)

func TestGroupSortTop(t *testing.T) {
	procs := []Process{
		{PID: 3, Name: "b", RAM: 30, Private: 10, Shared: 20, Swap: 1},
		{PID: 1, Name: "a", RAM: 10, Private: 5, Shared: 5},
		{PID: 2, Name: "b", RAM: 20, Private: 20, Shared: 0, Accuracy: Estimate},
		{PID: 4, Name: "c", RAM: 25, Private: 25, Swap: 7, SwapPssMissing: true},
	}
	var users Namer
	groups := GroupProcs(procs, ByProgram, &users)
	Sort(groups, SortRAM, false)
	var keys []string
	for _, g := range groups {
		keys = append(keys, g.Key)
	}
	if want := []string{"a", "c", "b"}; !slices.Equal(keys, want) {
		t.Fatalf("order = %v, want %v", keys, want)
	}
	b := groups[2]
	if b.Count != 2 || b.RAM != 50 || b.Private != 30 || b.Shared != 20 || b.Swap != 1 || b.Estimated != 1 {
		t.Errorf("group b = %+v", b)
	}
	if !slices.Equal(b.PIDs, []int{2, 3}) || b.Accuracy() != Estimate {
		t.Errorf("group b PIDs = %v, accuracy %v", b.PIDs, b.Accuracy())
	}
	tot := Total(groups)
	if tot.RAM != 85 || tot.Count != 4 || tot.Swap != 8 || !tot.SwapPssMissing || tot.Estimated != 1 {
		t.Errorf("total = %+v", tot)
	}
	if top := Top(groups, 1, false); len(top) != 1 || top[0].Key != "b" {
		t.Errorf("Top 1 = %+v", top)
	}
	Sort(groups, SortSwap, true)
	if groups[0].Key != "c" {
		t.Errorf("largest swap first = %q, want c", groups[0].Key)
	}
	if top := Top(groups, 2, true); len(top) != 2 || top[0].Key != "c" {
		t.Errorf("Top 2 reversed = %+v", top)
	}
	if f := Filter(groups, regexp.MustCompile("^[ab]$")); len(f) != 2 {
		t.Errorf("Filter kept %d groups, want 2", len(f))
	}
	byPID := GroupProcs(procs, ByPID, &users)
	if len(byPID) != 4 || byPID[0].Key != "b [3]" {
		t.Errorf("by pid = %+v", byPID)
	}
}

func TestCgroupName(t *testing.T) {
	for in, want := range map[string]string{
		"/system.slice/nginx.service": "/system.slice/nginx.service",
		"/docker/300a4e177913e2ae68c2811ead790b9e0889ada88bce328fc5d9b627a39f3d53":                     "/docker/300a4e177913",
		"/kubepods/burstable/pod1234/300a4e177913e2ae68c2811ead790b9e0889ada88bce328fc5d9b627a39f3d53": "/kubepods/burstable/pod1234/300a4e177913",
		"/system.slice/docker-300a4e177913e2ae68c2811ead790b9e0889ada88bce328fc5d9b627a39f3d53.scope":  "/system.slice/docker-300a4e177913.scope",
		"/": "/",
	} {
		if got := CgroupName(in); got != want {
			t.Errorf("CgroupName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	if b, err := ParseBy("cgroup"); err != nil || b != ByCgroup {
		t.Errorf("ParseBy(cgroup) = %v, %v", b, err)
	}
	if _, err := ParseBy("colour"); err == nil {
		t.Error("ParseBy(colour) succeeded")
	}
	if k, err := ParseSort("swap"); err != nil || k != SortSwap {
		t.Errorf("ParseSort(swap) = %v, %v", k, err)
	}
}

// TestTotalsSaturate: sums of bytes stop at the largest uint64 instead of
// wrapping to a small number (a fake tree of huge processes).
func TestTotalsSaturate(t *testing.T) {
	big := uint64(1) << 63
	procs := []Process{{PID: 1, Comm: "a", RAM: big, Swap: big}, {PID: 2, Comm: "a", RAM: big, Swap: 1}, {PID: 3, Comm: "b", RAM: big}}
	g := SumProcs(procs)
	if g.RAM != math.MaxUint64 || g.Swap != big+1 {
		t.Errorf("SumProcs: RAM %d swap %d, want %d and %d", g.RAM, g.Swap, uint64(math.MaxUint64), big+1)
	}
	var users Namer
	groups := GroupProcs(procs, ByPID, &users)
	if tot := Total(groups); tot.RAM != math.MaxUint64 {
		t.Errorf("Total: RAM %d, want saturated", tot.RAM)
	}
}

func TestParsePIDs(t *testing.T) {
	got, err := ParsePIDs("30, 1,30,2")
	if err != nil || !slices.Equal(got, []int{1, 2, 30}) {
		t.Errorf("ParsePIDs = %v, %v; want [1 2 30]", got, err)
	}
	for _, bad := range []string{"", "1,,2", "0", "-3", "x", "1 2", "+5", "1,+2"} {
		if got, err := ParsePIDs(bad); err == nil {
			t.Errorf("ParsePIDs(%q) = %v, want an error", bad, got)
		}
	}
}

type fakeContainers map[string]string

func (f fakeContainers) Key(path string) string { return f[path] }

func TestUnitSliceContainerKeys(t *testing.T) {
	const id = "300a4e177913e2ae68c2811ead790b9e0889ada88bce328fc5d9b627a39f3d53"
	docker := "/system.slice/docker-" + id + ".scope"
	for _, tc := range []struct {
		name                  string
		p                     Process
		unit, slice, cont, cg string
	}{
		{"v2 service", Process{Cgroup: "/system.slice/nginx.service", SystemdCgroup: "/system.slice/nginx.service"},
			"nginx.service", "system.slice", "host", "/system.slice/nginx.service"},
		{"docker, ids shortened", Process{Cgroup: docker, SystemdCgroup: docker},
			"docker-300a4e177913.scope", "system.slice", "300a4e177913", "/system.slice/docker-300a4e177913.scope"},
		// A v1 host: the memory controller's path says nothing of the
		// unit; systemd's hierarchy does.
		{"v1 memory path differs", Process{Cgroup: "/", SystemdCgroup: "/system.slice/cron.service"},
			"cron.service", "system.slice", "host", "/"},
		// Snapshots from before SystemdCgroup: Cgroup is used.
		{"no systemd path", Process{Cgroup: "/system.slice/cron.service"},
			"cron.service", "system.slice", "host", "/system.slice/cron.service"},
		{"no cgroup", Process{}, "?", "?", "?", "?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n Namer
			for by, want := range map[By]string{ByUnit: tc.unit, BySlice: tc.slice, ByContainer: tc.cont, ByCgroup: tc.cg} {
				if got := Key(&tc.p, by, &n); got != want {
					t.Errorf("Key(%v) = %q, want %q", by, got, want)
				}
			}
		})
	}
	n := Namer{Containers: fakeContainers{docker: "web"}}
	if got := Key(&Process{Cgroup: docker, SystemdCgroup: docker}, ByContainer, &n); got != "web" {
		t.Errorf("with a resolver: %q, want web", got)
	}
}

func TestNeedsCgroup(t *testing.T) {
	for by, want := range map[By]bool{ByProgram: false, ByPID: false, ByUser: false, ByCgroup: true, ByUnit: true, BySlice: true, ByContainer: true} {
		if by.NeedsCgroup() != want {
			t.Errorf("%v.NeedsCgroup() = %v", by, !want)
		}
		if b, err := ParseBy(by.String()); err != nil || b != by {
			t.Errorf("ParseBy(%q) = %v, %v", by.String(), b, err)
		}
	}
}

// shortIDsRef is the definition shortIDs implements.
func shortIDsRef(s string) string {
	return containerID().ReplaceAllStringFunc(s, func(id string) string { return id[:12] })
}

func TestShortIDs(t *testing.T) {
	const id = "300a4e177913e2ae68c2811ead790b9e0889ada88bce328fc5d9b627a39f3d53"
	for _, s := range []string{
		"", "docker-" + id + ".scope", id, id + id, id + id[:10], "x" + id[:63] + "y",
		"/a/" + id + "/b/" + id, id[:30] + "-" + id, "A" + id + "F", id + "0",
	} {
		if got, want := shortIDs(s), shortIDsRef(s); got != want {
			t.Errorf("shortIDs(%q) = %q, want %q", s, got, want)
		}
	}
}

func FuzzShortIDs(f *testing.F) {
	f.Add("docker-300a4e177913e2ae68c2811ead790b9e0889ada88bce328fc5d9b627a39f3d53.scope")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := shortIDs(s), shortIDsRef(s); got != want {
			t.Fatalf("shortIDs(%q) = %q, want %q", s, got, want)
		}
	})
}
