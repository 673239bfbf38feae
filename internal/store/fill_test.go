package store

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/memwho/memwho/internal/sample"
)

func TestBuilderFill(t *testing.T) {
	snap := &sample.Snapshot{
		Time: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
		Procs: []sample.Process{
			{PID: 30, StartTime: 3, Name: "web", UID: 0, UIDKnown: true, Cgroup: "/a", RAM: 30, Private: 20, Shared: 10, Swap: 1},
			{PID: 10, StartTime: 1, Name: "web", UID: 0, UIDKnown: true, Cgroup: "/b", RAM: 10, Private: 10, Accuracy: sample.Estimate},
			{PID: 20, StartTime: 2, Name: "bad\xff", UIDKnown: false, Cgroup: "/a", RAM: 5, Private: 5},
		},
		Meminfo: sample.Meminfo{MemTotal: 100, MemAvailable: 50}, MeminfoOK: true, Denied: 1,
	}
	limits := map[string]Limit{"/a": {Limit: 1000, Free: 400}}
	b := Builder{Host: "h", BootID: "boot", Kinds: []Kind{KindProgram, KindUser, KindCgroup},
		Limit: func(p *sample.Process) Limit { return limits[p.Cgroup] }}
	var got Sample
	got.Rows = make([]Row, 0, 1) // reused, grown
	b.Fill(&got, snap)
	want := Sample{
		Time: snap.Time, Host: "h", BootID: "boot", Meminfo: snap.Meminfo, Procs: 3, Denied: 1,
		Rows: []Row{
			{Kind: KindProcess, Key: `bad\xff`, PID: 20, StartTime: 2, Count: 1, PSS: 5, Private: 5, MemLimit: 1000, MemLimitFree: 400},
			{Kind: KindProcess, Key: "web", PID: 10, StartTime: 1, Count: 1, PSS: 10, Private: 10, Estimated: 1},
			{Kind: KindProcess, Key: "web", PID: 30, StartTime: 3, Count: 1, PSS: 30, Private: 20, Shared: 10, Swap: 1, MemLimit: 1000, MemLimitFree: 400},
			{Kind: KindProgram, Key: `bad\xff`, Count: 1, PSS: 5, Private: 5, MemLimit: 1000, MemLimitFree: 400},
			// Its processes are under different limits: none.
			{Kind: KindProgram, Key: "web", Count: 2, PSS: 40, Private: 30, Shared: 10, Swap: 1, Estimated: 1},
			{Kind: KindUser, Key: "?", Count: 1, PSS: 5, Private: 5, MemLimit: 1000, MemLimitFree: 400},
			{Kind: KindUser, Key: "root", Count: 2, PSS: 40, Private: 30, Shared: 10, Swap: 1, Estimated: 1},
			{Kind: KindCgroup, Key: "/a", Count: 2, PSS: 35, Private: 25, Shared: 10, Swap: 1, MemLimit: 1000, MemLimitFree: 400},
			{Kind: KindCgroup, Key: "/b", Count: 1, PSS: 10, Private: 10, Estimated: 1},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Fill (-want +got):\n%s", diff)
	}
	// Reuse: a second fill replaces everything.
	snap.Procs = snap.Procs[:1]
	b.Kinds = nil
	b.Fill(&got, snap)
	if len(got.Rows) != 1 || got.Procs != 1 {
		t.Errorf("second Fill: %d rows, procs %d; want 1, 1", len(got.Rows), got.Procs)
	}
}

func TestParseKinds(t *testing.T) {
	if k, err := ParseKinds("unit,slice,container"); err != nil || !cmp.Equal(k, []Kind{KindUnit, KindSlice, KindContainer}) {
		t.Errorf("ParseKinds(unit,slice,container) = %v, %v", k, err)
	}
	for _, k := range []Kind{KindUnit, KindSlice, KindContainer} {
		if p, err := ParseKind(k.String()); err != nil || p != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), p, err)
		}
	}
	if k, err := ParseKinds("program, cgroup"); err != nil || !cmp.Equal(k, []Kind{KindProgram, KindCgroup}) {
		t.Errorf("ParseKinds = %v, %v", k, err)
	}
	if k, err := ParseKinds("none"); err != nil || k != nil {
		t.Errorf("ParseKinds(none) = %v, %v", k, err)
	}
	for _, bad := range []string{"process", "tree", "program,"} {
		if _, err := ParseKinds(bad); err == nil {
			t.Errorf("ParseKinds(%q) succeeded", bad)
		}
	}
}

type fakeContainers map[string]string

func (f fakeContainers) Key(path string) string { return f[path] }

// TestBuilderFillContainers: unit, slice and container rows, named as the
// report names them, through Builder.Containers.
func TestBuilderFillContainers(t *testing.T) {
	const id = "300a4e177913e2ae68c2811ead790b9e0889ada88bce328fc5d9b627a39f3d53"
	docker := "/system.slice/docker-" + id + ".scope"
	snap := &sample.Snapshot{Procs: []sample.Process{
		{PID: 1, Name: "nginx", Cgroup: docker, SystemdCgroup: docker, RAM: 10},
		{PID: 2, Name: "sshd", Cgroup: "/", SystemdCgroup: "/system.slice/ssh.service", RAM: 5},
	}}
	b := Builder{Kinds: []Kind{KindUnit, KindSlice, KindContainer}, Containers: fakeContainers{docker: "web", "/system.slice/ssh.service": "host"}}
	var got Sample
	b.Fill(&got, snap)
	var keys []string
	for _, r := range got.Rows {
		if r.Kind != KindProcess {
			keys = append(keys, r.Kind.String()+" "+r.Key)
		}
	}
	want := []string{"unit docker-300a4e177913.scope", "unit ssh.service", "slice system.slice", "container host", "container web"}
	if !cmp.Equal(keys, want) {
		t.Errorf("group rows = %q, want %q", keys, want)
	}
}

// TestBuilderFillKeysApart: two programs whose names differ only in that
// one holds the byte 0xff and the other the four characters \xff were one
// history row, their figures summed, in export and diff --since (audit of
// 2026-11-26). Each keeps its row, and GroupsOf gives each its own name.
func TestBuilderFillKeysApart(t *testing.T) {
	snap := &sample.Snapshot{Procs: []sample.Process{
		{PID: 1, Name: "bad\xffutf8", RAM: 100},
		{PID: 2, Name: `bad\xffutf8`, RAM: 200},
	}}
	b := Builder{Kinds: []Kind{KindProgram}}
	var got Sample
	b.Fill(&got, snap)
	groups := GroupsOf(&got, KindProgram)
	if len(groups) != 2 {
		t.Fatalf("groups = %+v, want two", groups)
	}
	ram := map[string]uint64{}
	for _, g := range groups {
		ram[g.Key] = g.RAM
	}
	if ram["bad\xffutf8"] != 100 || ram[`bad\xffutf8`] != 200 {
		t.Errorf("groups by name = %v, want each program's own RAM", ram)
	}
}
