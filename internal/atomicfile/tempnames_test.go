package atomicfile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPlantedNames: temporary names come from the
// runtime's generator (math/rand/v2), not crypto/rand. An attacker who
// guessed every name Create tries (simulated by an OpenFunc that plants
// something at each before it is opened) gets only a failure: a symlink
// to a victim, a dangling symlink (which O_CREAT would otherwise follow
// to create a file where the attacker chose), a FIFO, a file of theirs.
// Nothing is written through them, none is removed, no target appears;
// with one free try left, Create succeeds.
func TestPlantedNames(t *testing.T) {
	kinds := []string{"symlink", "dangling", "fifo", "file"}
	for _, free := range []bool{false, true} {
		t.Run(fmt.Sprintf("free try %v", free), func(t *testing.T) {
			dir := t.TempDir()
			other := t.TempDir()
			victim := filepath.Join(other, "victim")
			os.WriteFile(victim, []byte("precious"), 0o644)
			var planted []string
			open := func(name string, flag int, perm os.FileMode) (*os.File, error) {
				if flag&os.O_CREATE != 0 && (!free || len(planted) < 7) {
					var err error
					switch kinds[len(planted)%len(kinds)] {
					case "symlink":
						err = os.Symlink(victim, name)
					case "dangling":
						err = os.Symlink(filepath.Join(other, "created-through-link"), name)
					case "fifo":
						err = syscall.Mkfifo(name, 0o666)
					case "file":
						err = os.WriteFile(name, []byte("theirs"), 0o644)
					}
					if err != nil {
						t.Fatal(err)
					}
					planted = append(planted, name)
				}
				return os.OpenFile(name, flag, perm)
			}
			target := filepath.Join(dir, "x")
			f, err := CreateWith(target, 0, open)
			if !free {
				if err == nil || !strings.Contains(err.Error(), "no free temporary name") {
					t.Fatalf("every name planted: err = %v, want no free temporary name", err)
				}
				if len(planted) != 8 {
					t.Errorf("%d names tried, want 8", len(planted))
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				f.Write([]byte("data"))
				if err := f.Commit(); err != nil {
					t.Fatal(err)
				}
				if got := readFile(t, target); got != "data" {
					t.Errorf("target = %q", got)
				}
			}
			if got := readFile(t, victim); got != "precious" {
				t.Errorf("victim = %q, want it untouched", got)
			}
			if _, err := os.Lstat(filepath.Join(other, "created-through-link")); err == nil {
				t.Error("a file was created through the dangling link")
			}
			for _, p := range planted {
				if _, err := os.Lstat(p); err != nil {
					t.Errorf("planted %s removed: %v", p, err)
				}
			}
			if _, err := os.Lstat(target); !free && err == nil {
				t.Error("target created although no name was free")
			}
		})
	}
}

// TestNamesDifferAcrossProcesses: the generator is
// seeded per process by the runtime, so two runs of the same binary (as
// two memwho runs are) never start from the same names.
func TestNamesDifferAcrossProcesses(t *testing.T) {
	if os.Getenv("ATOMICFILE_PRINT_TEMP_NAMES") != "" {
		for range 4 {
			fmt.Println(tempName("x"))
		}
		os.Exit(0)
	}
	seen := map[string]bool{}
	for range 4 {
		c := exec.Command(os.Args[0], "-test.run=^TestNamesDifferAcrossProcesses$")
		c.Env = append(os.Environ(), "ATOMICFILE_PRINT_TEMP_NAMES=1")
		out, err := c.Output()
		if err != nil {
			t.Fatal(err)
		}
		names := strings.Fields(string(out))
		if len(names) != 4 {
			t.Fatalf("child printed %q", out)
		}
		for _, n := range names {
			if seen[n] || !IsTemp(n) {
				t.Errorf("name %q repeated across processes, or not a temporary name", n)
			}
			seen[n] = true
		}
	}
}
