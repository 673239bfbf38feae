package sockdiag

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/memwho/memwho/internal/proc"
	"github.com/memwho/memwho/internal/proc/fstest"
)

// TestReadlinkFaultHook: the fault hook sockdiag's descriptor
// readlink now asks (proc.Injected) costs nothing when no test set it
// (Sockets allocates nothing in steady state, as the tick's 0-alloc
// tests need), changes nothing when a set hook injects no error, and no
// program code sets it: only tests call proc.SetFault.
func TestReadlinkFaultHook(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := NewFDCounter(fstest.Open(t, "/proc"))
	buf := make([]uint64, 0, 1024)
	want, err := c.Sockets(os.Getpid(), buf[:0])
	if err != nil || len(want) == 0 {
		t.Fatalf("Sockets = %v, %v; want the listener", want, err)
	}
	want = slices.Clone(want)
	if n := testing.AllocsPerRun(50, func() { buf, _ = c.Sockets(os.Getpid(), buf[:0]) }); n != 0 {
		t.Errorf("Sockets without a fault hook: %v allocations, want 0", n)
	}
	var asked int
	restore := proc.SetFault(func(op, path string) syscall.Errno {
		if op == "readlink" {
			asked++
		}
		return 0
	})
	got, err := c.Sockets(os.Getpid(), nil)
	restore()
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("with a hook injecting nothing: Sockets = %v, %v; want %v", got, err, want)
	}
	if asked == 0 {
		t.Error("the hook was never asked for a readlink")
	}

	// No program code installs a fault: proc.SetFault is called from
	// tests alone.
	root := filepath.Join("..", "..")
	files := 0
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "test"+string(filepath.Separator)) {
			return nil
		}
		files++
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), "SetFault(") && !strings.HasSuffix(path, filepath.Join("internal", "proc", "fault.go")) {
			t.Errorf("%s calls SetFault outside a test", path)
		}
		return nil
	})
	if files < 50 {
		t.Errorf("only %d program files looked at under %s", files, root)
	}
}
