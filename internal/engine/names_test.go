package engine

import (
	"os"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/memwho/memwho/internal/sample"
)

// snapshotOptions are the options of `memwho snapshot`'s walk
// (cmd/memwho/snapshot.go): uid and cgroups for every grouping, so that
// status is read and the task name taken from it instead of comm.
var snapshotOptions = Options{NeedUID: true, NeedCgroup: true}

// sameNames fails t unless every process of a (a default report's scan,
// names from comm) is in b (a snapshot's, names from status) with the
// same task name and program name, and the task name is the comm file's
// bytes under root.
func sameNames(t *testing.T, root string, a, b *sample.Snapshot) {
	t.Helper()
	if len(a.Procs) == 0 || len(a.Procs) != len(b.Procs) {
		t.Fatalf("%d processes from comm, %d from status", len(a.Procs), len(b.Procs))
	}
	for i, p := range a.Procs {
		q := b.Procs[i]
		if p.PID != q.PID || p.Comm != q.Comm || p.Name != q.Name {
			t.Errorf("pid %d: comm %q, name %q from comm; pid %d: %q, %q from status", p.PID, p.Comm, p.Name, q.PID, q.Comm, q.Name)
		}
		if root == "" {
			continue
		}
		raw, err := os.ReadFile(root + "/" + itoa(p.PID) + "/comm")
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSuffix(string(raw), "\n"); q.Comm != want {
			t.Errorf("pid %d: Comm %q, comm file %q", q.PID, q.Comm, want)
		}
	}
}

// TestSnapshotNamesFixtures: on captured trees of hostile task names
// (newlines, backslashes, escapes, invalid UTF-8, 15 backslashes, a
// forged Uid: line), the snapshot's walk names every process as the
// default report does.
func TestSnapshotNamesFixtures(t *testing.T) {
	for _, fx := range []string{"names", "name-escapes"} {
		t.Run(fx, func(t *testing.T) {
			root := proctest.Root(t, "../proc/testdata/"+fx+".txtar")
			a := scanTree(t, root, Options{})
			b := scanTree(t, root, snapshotOptions)
			sameNames(t, root, a, b)
		})
	}
}

// TestSnapshotNamesLive: this process, renamed with each hostile name,
// gets the same Comm and Name from the snapshot's walk as from the
// default report's, and both are its comm.
func TestSnapshotNamesLive(t *testing.T) {
	if proctest.Denied() {
		t.Skip("needs root: the walk of a process needs ptrace access to its smaps_rollup")
	}
	const self = "/proc/self/comm"
	old, err := os.ReadFile(self)
	if err != nil {
		t.Skip(err)
	}
	// Writing comm renames the thread-group leader, whose name is the
	// process's.
	t.Cleanup(func() { os.WriteFile(self, old[:len(old)-1], 0) })
	pid := os.Getpid()
	for _, name := range []string{`a\nb`, `\`, "\\\n", "\nn", `\\\\\\\\\\\\\\\`, "x\nUid:\t0\t0\t0", "q\"\a\x1b\r\v\f", "\xff\xfe bad", "é\u0301 ok"} {
		if err := os.WriteFile(self, []byte(name), 0); err != nil {
			t.Fatal(err)
		}
		opt := Options{PIDs: []int{pid}}
		a := scanTree(t, "/proc", opt)
		opt.NeedUID, opt.NeedCgroup = true, true
		b := scanTree(t, "/proc", opt)
		sameNames(t, "", a, b)
		if len(b.Procs) == 1 && b.Procs[0].Comm != name {
			t.Errorf("renamed %q: Comm %q", name, b.Procs[0].Comm)
		}
	}
}

// scanTree scans the tree at root once, as a report does.
func scanTree(t *testing.T, root string, opt Options) *sample.Snapshot {
	t.Helper()
	opt.FS = fstest.Open(t, root)
	opt.OneShot = true
	s, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var snap sample.Snapshot
	if err := s.Scan(&snap); err != nil {
		t.Fatal(err)
	}
	return &snap
}
