package proc

import (
	"os"
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// hostileNames are task names around status's two escapes (a newline is
// printed as `\n`, a backslash as `\\`): the escapes' own bytes next to
// each other and to the letter n, at the ends of a name, repeated up to
// the 15-byte limit (30 bytes escaped), a name forging a Uid: line, and
// the bytes a wider escaping (ESCAPE_SPACE, ESCAPE_SPECIAL without the
// kernel's "\n\\" filter) would also touch.
var hostileNames = []string{
	`a\nb`, `\`, `ab\`, `\n`, "\\\n", "\n\\", "\nn", `\\n`, "\\\\\n", "\n\n\n",
	"\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\", "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n",
	"x\nUid:\t0\t0\t0", "q\"\a\x1b\r\v\f\t",
	"\x1b[31mred\x1b[0m", "\xff\xfe\x80bad", "a b\tc", "é\u0301",
	"0123456789abcdefXYZ", // cut to 15 bytes
}

// setThreadName names the calling thread as prctl(PR_SET_NAME) does:
// the kernel keeps the first 15 bytes, up to a NUL.
func setThreadName(t *testing.T, name string) {
	t.Helper()
	b := append([]byte(name), 0)
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_NAME, uintptr(unsafe.Pointer(&b[0])), 0); e != 0 {
		t.Fatalf("prctl(PR_SET_NAME, %q): %v", name, e)
	}
}

// TestLiveStatusNameIsComm: reads that need status anyway (a snapshot's,
// for the uid) take the task name from its Name: line, unescaped, rather
// than read comm too. On the running kernel, for names made of every
// byte a name may hold, every byte between two backslashes, and
// hostileNames, the unescaped Name: must be comm byte for byte, and the
// forged Uid: line must not be believed. The names are set on a thread
// of this test, read through /proc/PID/task/TID.
func TestLiveStatusNameIsComm(t *testing.T) {
	fs := openLive(t)
	names := append([]string(nil), hostileNames...)
	// Every byte but NUL, which ends a name, 15 at a time.
	var all []byte
	for c := 1; c < 256; c++ {
		all = append(all, byte(c))
	}
	for len(all) > 0 {
		n := min(15, len(all))
		names = append(names, string(all[:n]))
		all = all[n:]
	}
	for c := 1; c < 256; c++ {
		names = append(names, string([]byte{'\\', byte(c), '\\'}), string([]byte{byte(c), '\\', byte(c)}))
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid, tid := os.Getpid(), syscall.Gettid()
	r := fs.NewReader()
	r.SelectTask(pid, tid)
	old, err := r.Comm()
	if err != nil {
		t.Fatal(err)
	}
	defer setThreadName(t, string(old))

	var st Status
	var got []byte
	for _, name := range names {
		setThreadName(t, name)
		want := name[:min(15, len(name))]
		r.SelectTask(pid, tid)
		comm, err := r.Comm()
		if err != nil || string(comm) != want {
			t.Errorf("comm of a thread named %q = %q, %v; want the name", name, comm, err)
			continue
		}
		if err := r.Status(&st); err != nil {
			t.Errorf("status of a thread named %q: %v", name, err)
			continue
		}
		got = UnescapeName(got[:0], st.NameBytes())
		if string(got) != want {
			t.Errorf("name %q: status Name: %q unescapes to %q, comm is %q", name, st.NameBytes(), got, want)
		}
		if st.UID != uint32(os.Getuid()) || st.Tgid != pid {
			t.Errorf("name %q: status Uid %d, Tgid %d; want %d, %d", name, st.UID, st.Tgid, os.Getuid(), pid)
		}
	}
}
