// Package privilege lets memwho run with more privilege than the user who
// starts it (file capabilities or a setuid-root install) without handing
// that privilege to the user.
//
// The model: memwho needs exactly two capabilities, and only to read.
// CAP_SYS_PTRACE lets it read another user's /proc/PID/smaps_rollup and
// exe link (the exact PSS figures); CAP_DAC_READ_SEARCH adds the
// /proc/PID/fd walks of the TCP and live features. Everything else the
// user asks for is done as the user:
//
//   - [Setup], called once before flags are parsed, switches a setuid or
//     setgid install to the real uid and gid on every thread, and leaves
//     every capability permitted but none effective. Until Enter, memwho
//     has exactly its user's rights. In the privileged install
//     ([Separated]) only the reader process ever raises one: the process
//     the user talks to gives them all up at its dispatch;
//   - the command parses its flags (and environment), opens what the
//     user named with those rights, and decides on that configuration
//     what to keep; [Scannable] says whether its procfs tree may be read
//     with privilege at all (only the root of a real procfs that hides
//     nothing from the user);
//   - [Enter] makes the kept capabilities effective, on every thread,
//     and drops the rest for good;
//   - [DropAll] clears every capability from every thread (through
//     libcap's all-thread capset) once the scan is done, before any output
//     is written;
//   - [OpenFile] opens a path the user named, and refuses to while a
//     capability is effective;
//   - [Sandbox] optionally confines the rest of the run with Landlock.
//
// When the process is not elevated (root, or an ordinary user running an
// ordinary binary) every function here is a no-op or the plain os call,
// so behaviour for those users is unchanged.
//
// Capabilities, credentials and fsuid are per thread on Linux; the Go
// runtime runs many threads. Whole-process changes therefore go through
// libcap (psx, which uses syscall.AllThreadsSyscall) or the syscall
// package's setres[ug]id (also all-thread since Go 1.16).
package privilege

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/cap"
)

// The capabilities memwho can use, and which reads need them (measured on
// Linux 6.18 with scripts/measure-caps.sh; see docs/safe.md).
var (
	// ScanCaps is what a memory scan needs: smaps_rollup, smaps, maps,
	// the exe link and ns/ links of another user's process need
	// CAP_SYS_PTRACE; pagemap (mode 0400), by which a large process is
	// read without stalling it, needs CAP_DAC_READ_SEARCH as well.
	// status, stat, cmdline, comm and cgroup need nothing.
	ScanCaps = []cap.Value{cap.SYS_PTRACE, cap.DAC_READ_SEARCH}
	// FDWalkCaps is what counting a process's sockets needs as well:
	// reading the /proc/PID/fd directory needs CAP_DAC_READ_SEARCH and
	// reading a link in it needs both.
	FDWalkCaps = []cap.Value{cap.SYS_PTRACE, cap.DAC_READ_SEARCH}
)

// State is the process's identity and capabilities.
type State struct {
	RUID, EUID, SUID, FSUID int
	RGID, EGID, SGID, FSGID int
	// Permitted, Effective and Inheritable are capability bit masks
	// (bit n is capability n) of the calling thread.
	Permitted, Effective, Inheritable uint64
}

// Elevated reports whether the process can do more than its real user:
// it runs setuid or setgid, or holds any capability, while the real user
// is not root. Root running memwho is not elevated: there is nobody to
// protect root from.
func (s State) Elevated() bool {
	if s.RUID == 0 {
		return false
	}
	return s.EUID != s.RUID || s.SUID != s.RUID || s.FSUID != s.RUID ||
		s.EGID != s.RGID || s.SGID != s.RGID || s.FSGID != s.RGID ||
		s.Permitted != 0 || s.Effective != 0
}

// Current reads the identity and the capabilities of the calling thread.
func Current() (State, error) {
	var s State
	s.RUID, s.EUID, s.SUID = unix.Getresuid()
	s.RGID, s.EGID, s.SGID = unix.Getresgid()
	// setfs[ug]id with an invalid id changes nothing and returns the
	// current value.
	fsuid, _ := unix.SetfsuidRetUid(-1)
	fsgid, _ := unix.SetfsgidRetGid(-1)
	s.FSUID, s.FSGID = fsuid, fsgid
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return s, fmt.Errorf("read capabilities: %w", err)
	}
	s.Permitted = uint64(data[0].Permitted) | uint64(data[1].Permitted)<<32
	s.Effective = uint64(data[0].Effective) | uint64(data[1].Effective)<<32
	s.Inheritable = uint64(data[0].Inheritable) | uint64(data[1].Inheritable)<<32
	return s, nil
}

// start is the state Setup found, before it changed anything.
var (
	startMu  sync.Mutex
	start    State
	setUp    bool
	elevated bool
	secure   bool
)

// Elevated reports whether the process started with more privilege than
// its real user (see [State.Elevated]). Before [Setup] it reads the
// current state.
func Elevated() bool {
	startMu.Lock()
	defer startMu.Unlock()
	if setUp {
		return elevated
	}
	s, err := Current()
	return err != nil || s.Elevated() // unreadable state counts as elevated: be careful
}

// Separated reports whether this process's privilege came with its exec
// (file capabilities or setuid: the kernel's AT_SECURE) while its real
// user is not root: the privileged install. Then only the reader, a
// process of its own that memwho starts from its own binary with an
// empty environment, keeps a capability; the process the user talks to
// gives up every one at its dispatch, before flags, files, the terminal
// or the environment are looked at (docs/safe.md). Privilege a caller
// already held (root, a unit's ambient capabilities) is not separated:
// there is nobody to keep it from. Before [Setup] it is false.
func Separated() bool {
	startMu.Lock()
	defer startMu.Unlock()
	return setUp && elevated && secure
}

// Start returns the state Setup found, and false before Setup.
func Start() (State, bool) {
	startMu.Lock()
	defer startMu.Unlock()
	return start, setUp
}

// Setup is called once at start-up, from an init function, before flags,
// the environment or files are looked at: it cannot know the command yet,
// so it leaves the process able to do no more than the most any command
// may need, and unable to use even that until [Enter]. When the process
// is elevated it:
//
//   - switches every uid and gid (real, effective, saved, fs) of every
//     thread to the real user's, so that a setuid-root install behaves
//     like a file-capability install from here on and nothing it writes
//     is owned by root;
//   - narrows the permitted set to [FDWalkCaps] and clears the effective
//     set, so that everything done before Enter (flag parsing, opening a
//     path the user named) runs with exactly the user's rights; clears
//     the inheritable and ambient sets;
//   - sets no_new_privs, so nothing executed later could gain privilege,
//     unless the process is [Separated]: there the dispatch gives up
//     every capability of the process the user talks to, which must
//     still be able to start the reader, whose exec of memwho's own
//     binary gains them again; the reader sets it itself (EnterReader),
//     and memwho before it executes memwho-agent ([NoNewPrivs]).
//
// It then checks every thread and fails if any kept more.
//
// The environment is left as it is: no process that keeps a capability
// uses it. A Separated process gives up every capability before it looks
// at it, and the reader refuses to start with any variable set
// ([RequireEmptyEnv]), so that the Go runtime's own copy (GOROOT for the
// time zones, GODEBUG) is empty too; an unseparated one runs with what
// its caller already had. What the runtime reads before Setup runs is in
// docs/safe.md.
func Setup() (State, error) {
	s, err := Current()
	// Asked only of an elevated process: reading /proc/self/auxv makes
	// the Go runtime's poller, which an open-file limit of 8 refuses
	// fatally, before a command could say so.
	sec := (err != nil || s.Elevated()) && SecureExec()
	startMu.Lock()
	start, setUp, elevated, secure = s, true, err != nil || s.Elevated(), sec
	startMu.Unlock()
	if err != nil {
		return s, err
	}
	if !s.Elevated() {
		return s, nil
	}
	if sec && settled(s) {
		// The install's +p exec: nothing to change. Every thread is
		// as this one: none existed before the exec, and nothing
		// has changed a capability since (the kernel clears the
		// ambient set at such an exec).
		return s, nil
	}
	if s.EGID != s.RGID || s.SGID != s.RGID || s.FSGID != s.RGID {
		if err := syscall.Setresgid(s.RGID, s.RGID, s.RGID); err != nil {
			return s, fmt.Errorf("switch to the real group id %d: %w", s.RGID, err)
		}
	}
	if s.EUID != s.RUID || s.SUID != s.RUID || s.FSUID != s.RUID {
		// libcap raises CAP_SETUID, keeps the permitted set across the
		// change (PR_SET_KEEPCAPS) and runs setuid on every thread.
		if err := cap.SetUID(s.RUID); err != nil {
			return s, fmt.Errorf("switch to the real user id %d: %w", s.RUID, err)
		}
	}
	if err := narrow(FDWalkCaps, false); err != nil {
		return s, err
	}
	if !sec {
		if err := NoNewPrivs(); err != nil {
			return s, err
		}
	}
	return s, verify(s, mask(FDWalkCaps), 0)
}

// settled reports whether s is what Setup makes of an elevated process:
// the real user's ids throughout, nothing permitted beyond FDWalkCaps,
// nothing effective or inheritable.
func settled(s State) bool {
	return s.EUID == s.RUID && s.SUID == s.RUID && s.FSUID == s.RUID &&
		s.EGID == s.RGID && s.SGID == s.RGID && s.FSGID == s.RGID &&
		s.Permitted&^mask(FDWalkCaps) == 0 && s.Effective == 0 && s.Inheritable == 0
}

// NoNewPrivs sets no_new_privs: no program this process executes from
// now on gains privilege from its setuid bit or file capabilities.
func NoNewPrivs() error {
	if _, err := cap.Prctlw(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	return nil
}

// RequireEmptyEnv returns an error unless the process was executed with
// no environment at all: the reader's exec gives it none, and one
// started with some (by hand) would run with a Go runtime that read them
// (GOROOT for the time zones, GODEBUG) while holding capabilities. The
// one variable allowed is GOTRACEBACK=none, which the runtime itself
// puts in its copy after an exec that gained privilege (its secure mode,
// runtime/security_unix.go), whatever the exec gave. os.Environ is the
// runtime's copy as long as nothing called os.Setenv or os.Unsetenv,
// which memwho never does (the kernel's copy, /proc/self/environ, is
// root's in a process that gained privilege).
func RequireEmptyEnv() error {
	for _, kv := range os.Environ() {
		if kv == "GOTRACEBACK=none" {
			continue
		}
		k, _, _ := strings.Cut(kv, "=")
		return fmt.Errorf("started with environment variables (%s...): the reader runs with none", strings.ToValidUTF8(k[:min(len(k), 64)], "?"))
	}
	return nil
}

// Enter is the one place a capability becomes usable. The caller has
// decided, on its parsed configuration, what the rest of the run keeps:
// Enter narrows the permitted set of every thread to keep and makes those
// effective; with keep empty it is [DropAll]. It is a no-op when the
// process is not elevated.
func Enter(keep ...cap.Value) error {
	if !Elevated() {
		return nil
	}
	if len(keep) == 0 {
		return DropAll()
	}
	s, _ := Start()
	if err := narrow(keep, true); err != nil {
		return err
	}
	return verify(s, mask(keep), mask(keep))
}

// narrow sets permitted to keep (as far as the process has them) on
// every thread, effective to the same when effective is set and to
// nothing otherwise, and clears inheritable and ambient.
func narrow(keep []cap.Value, effective bool) error {
	have := cap.GetProc()
	want := cap.NewSet()
	for _, v := range keep {
		if ok, _ := have.GetFlag(cap.Permitted, v); !ok {
			continue // not granted by this install: nothing to keep
		}
		if err := want.SetFlag(cap.Permitted, true, v); err != nil {
			return fmt.Errorf("build capability set: %w", err)
		}
		if !effective {
			continue
		}
		if err := want.SetFlag(cap.Effective, true, v); err != nil {
			return fmt.Errorf("build capability set: %w", err)
		}
	}
	if err := cap.ResetAmbient(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	if err := want.SetProc(); err != nil {
		return fmt.Errorf("narrow capabilities to %s: %w", want, err)
	}
	return nil
}

// verify checks every thread of the process: all ids are the real ones,
// no permitted capability outside perm and no effective one outside eff.
func verify(s State, perm, eff uint64) error {
	return verifyTasks("/proc/self/task", s, perm, eff)
}

// verifyTasks is verify on the task directory dir.
func verifyTasks(dir string, s State, perm, eff uint64) error {
	tasks, err := os.ReadDir(dir)
	if err != nil {
		// Without /proc the calling thread is all we can check.
		cur, err := Current()
		if err != nil {
			return err
		}
		return checkState(cur, s, perm, eff, "this thread")
	}
	for _, t := range tasks {
		st, err := threadState(dir + "/" + t.Name() + "/status")
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue // the thread exited
		}
		if err != nil {
			// Not skipped like an exited thread: a status
			// parseStatus refuses (a second Uid line, a capability set
			// wider than 64 bits on some later kernel) said nothing of
			// the thread, and skipping every thread passed the check.
			return fmt.Errorf("privilege drop unverified: thread %s: %w", t.Name(), err)
		}
		if err := checkState(st, s, perm, eff, "thread "+t.Name()); err != nil {
			return err
		}
	}
	return nil
}

func checkState(got, start State, perm, eff uint64, who string) error {
	if got.RUID != start.RUID || got.EUID != start.RUID || got.SUID != start.RUID || got.FSUID != start.RUID {
		return fmt.Errorf("privilege drop failed: %s still has uids %d/%d/%d/%d (want %d)", who, got.RUID, got.EUID, got.SUID, got.FSUID, start.RUID)
	}
	if got.RGID != start.RGID || got.EGID != start.RGID || got.SGID != start.RGID || got.FSGID != start.RGID {
		return fmt.Errorf("privilege drop failed: %s still has gids %d/%d/%d/%d (want %d)", who, got.RGID, got.EGID, got.SGID, got.FSGID, start.RGID)
	}
	if extra := got.Permitted&^perm | got.Effective&^eff; extra != 0 {
		return fmt.Errorf("privilege drop failed: %s still holds capabilities %#x", who, extra)
	}
	return nil
}

// threadState parses the Uid, Gid, CapPrm and CapEff lines of a
// /proc/.../status file.
func threadState(path string) (State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return State{}, err
	}
	return parseStatus(string(b))
}

// parseStatus reads the Uid, Gid, CapPrm and CapEff lines of a status
// file. Each must be there exactly once: a status with two Gid lines and
// no Uid line was read as uid 0, which Elevated takes for root. Ids are
// four decimal numbers of 32 bits (the kernel prints them with %u) and
// the capability sets one hexadecimal number each, read with strconv:
// fmt.Sscan took "080 080" for the four ids 0 80 0 80, reading a leading
// 0 as a base prefix, and ignored anything after the fourth id.
// (FuzzParseStatus found both.)
func parseStatus(text string) (State, error) {
	var s State
	keys := []string{"Uid", "Gid", "CapPrm", "CapEff"}
	var seen [4]bool
	for line := range strings.Lines(text) {
		key, val, ok := strings.Cut(strings.TrimSuffix(line, "\n"), ":")
		if !ok {
			continue
		}
		k := slices.Index(keys, key)
		if k < 0 {
			continue
		}
		if seen[k] {
			return s, fmt.Errorf("status has two %s lines", key)
		}
		seen[k] = true
		switch key {
		case "Uid", "Gid":
			f := strings.Fields(val)
			if len(f) != 4 {
				return s, fmt.Errorf("parse %s line %q: want 4 ids", key, val)
			}
			var ids [4]int
			for i, x := range f {
				n, err := strconv.ParseUint(x, 10, 32)
				if err != nil {
					return s, fmt.Errorf("parse %s line %q: %w", key, val, err)
				}
				ids[i] = int(n)
			}
			if key == "Uid" {
				s.RUID, s.EUID, s.SUID, s.FSUID = ids[0], ids[1], ids[2], ids[3]
			} else {
				s.RGID, s.EGID, s.SGID, s.FSGID = ids[0], ids[1], ids[2], ids[3]
			}
		case "CapPrm", "CapEff":
			v, err := strconv.ParseUint(strings.TrimSpace(val), 16, 64)
			if err != nil {
				return s, fmt.Errorf("parse %s line %q: %w", key, val, err)
			}
			if key == "CapPrm" {
				s.Permitted = v
			} else {
				s.Effective = v
			}
		}
	}
	if seen != [4]bool{true, true, true, true} {
		return s, errors.New("status lacks Uid, Gid, CapPrm or CapEff")
	}
	return s, nil
}

func mask(vs []cap.Value) uint64 {
	var m uint64
	for _, v := range vs {
		m |= 1 << uint(v)
	}
	return m
}

// DropAll clears the permitted, effective, inheritable and ambient
// capability sets of every thread, and (if Setup was not called) switches
// a setuid process to its real ids first. Nothing in this process can
// raise them again; only an exec of memwho's own binary gains them anew,
// which the privileged install's process does for its reader alone
// ([Separated]; every other exec follows no_new_privs). It is a no-op
// when the process is not elevated, so that root keeps its powers for
// the rest of its run.
func DropAll() error {
	if !Elevated() {
		return nil
	}
	s, err := Current()
	if err != nil {
		return err
	}
	if s.EGID != s.RGID || s.SGID != s.RGID || s.FSGID != s.RGID {
		if err := syscall.Setresgid(s.RGID, s.RGID, s.RGID); err != nil {
			return fmt.Errorf("switch to the real group id %d: %w", s.RGID, err)
		}
	}
	if s.EUID != s.RUID || s.SUID != s.RUID || s.FSUID != s.RUID {
		if err := syscall.Setresuid(s.RUID, s.RUID, s.RUID); err != nil {
			return fmt.Errorf("switch to the real user id %d: %w", s.RUID, err)
		}
	}
	if err := narrow(nil, false); err != nil {
		return err
	}
	return verify(s, 0, 0)
}

// atSecure is the auxiliary vector key of the kernel's secure-exec flag
// (linux/auxvec.h).
const atSecure = 23

// SecureExec reports whether the kernel flagged this exec as gaining
// privilege (AT_SECURE in the auxiliary vector): a setuid or setgid
// binary, or file capabilities beyond the ambient set. When the vector
// cannot be read it answers true, the careful choice.
func SecureExec() bool {
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return true
	}
	v, ok := auxvValue(b, atSecure, int(unsafe.Sizeof(uintptr(0))))
	return !ok || v != 0
}

// auxvValue finds key in an auxiliary vector of native-endian word pairs.
func auxvValue(b []byte, key uint64, word int) (uint64, bool) {
	get := func(p []byte) uint64 {
		if word == 4 {
			return uint64(binary.NativeEndian.Uint32(p))
		}
		return binary.NativeEndian.Uint64(p)
	}
	for len(b) >= 2*word {
		k, v := get(b), get(b[word:])
		b = b[2*word:]
		if k == key {
			return v, true
		}
		if k == 0 { // AT_NULL ends the vector
			break
		}
	}
	return 0, false
}
