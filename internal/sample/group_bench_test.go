package sample

import (
	"fmt"
	"testing"
)

// BenchmarkGroupProcs groups 3000 processes in 300 cgroups (a third
// docker scopes, a third services, a third sessions) by each grouping
// that reads the cgroup. Containers are keyed without a resolver.
func BenchmarkGroupProcs(b *testing.B) {
	procs := make([]Process, 3000)
	for i := range procs {
		var cg string
		switch i % 3 {
		case 0:
			cg = fmt.Sprintf("/system.slice/docker-%064x.scope", i%100)
		case 1:
			cg = fmt.Sprintf("/system.slice/svc%d.service", i%100)
		default:
			cg = fmt.Sprintf("/user.slice/user-%d.slice/session-%d.scope", 1000+i%10, i%100)
		}
		procs[i] = Process{PID: i + 1, Name: "p", Cgroup: cg, SystemdCgroup: cg, RAM: 4096}
	}
	for _, by := range []By{ByCgroup, ByUnit, BySlice, ByContainer} {
		b.Run(by.String(), func(b *testing.B) {
			var n Namer
			for b.Loop() {
				GroupProcs(procs, by, &n)
			}
		})
	}
}

// BenchmarkShortIDs compares the scan with the regular expression it
// replaced, over the cgroup paths of BenchmarkGroupProcs.
func BenchmarkShortIDs(b *testing.B) {
	paths := make([]string, 300)
	for i := range paths {
		switch i % 3 {
		case 0:
			paths[i] = fmt.Sprintf("/system.slice/docker-%064x.scope", i)
		case 1:
			paths[i] = fmt.Sprintf("/system.slice/svc%d.service", i)
		default:
			paths[i] = fmt.Sprintf("/user.slice/user-%d.slice/session-%d.scope", 1000+i%10, i)
		}
	}
	for _, f := range []struct {
		name string
		fn   func(string) string
	}{{"regexp", shortIDsRef}, {"scan", shortIDs}} {
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				for _, p := range paths {
					f.fn(p)
				}
			}
		})
	}
}
