package snapshot

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/engine"
	"github.com/memwho/memwho/internal/proc/fstest"
	"github.com/memwho/memwho/internal/proc/proctest"
	"github.com/memwho/memwho/internal/sample"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden files")

// small is the snapshot of the golden file: every field set, so that
// a change to how any of them is written shows.
func small() *sample.Snapshot {
	return &sample.Snapshot{
		Time: time.Unix(1795000000, 123456789),
		Procs: []sample.Process{
			{PID: 1, PPID: 0, StartTime: 5, UID: 0, UIDKnown: true, Name: "systemd", Comm: "systemd", Exe: "systemd",
				Cgroup: "/init.scope", RAM: 12 << 20, Private: 8 << 20, Shared: 4 << 20, Swap: 1 << 20, Conns: 2},
			{PID: 812, PPID: 1, StartTime: 1200, UID: 1000, UIDKnown: true, Name: "app.py", Comm: "python3", Exe: "python3.12",
				ExeDeleted: true, Script: "app.py", Cgroup: "/system.slice/app.service", RAM: 300 << 20, Private: 290 << 20,
				Shared: 10 << 20, SwapPssMissing: true, Accuracy: sample.Estimate, Cause: sample.CauseDenied},
			{PID: 790, PPID: 812, StartTime: 1100, Name: "app.py", Comm: "python3", Exe: "python3.12", Script: "app.py",
				Cgroup: "/system.slice/app.service", RAM: 1, Accuracy: sample.Estimate, Cause: sample.CauseMalformed},
		},
		Meminfo: sample.Meminfo{MemTotal: 8 << 30, MemFree: 1 << 30, MemAvailable: 5 << 30, Buffers: 1 << 20, Cached: 2 << 30,
			Shmem: 64 << 20, SwapTotal: 2 << 30, SwapFree: 1 << 30, SwapCached: 4 << 20, Hugetlb: 0, Available: sample.AvailableEstimated},
		MeminfoOK: true, MeminfoErr: errors.New("zoneinfo: permission denied"),
		Gone: 1, Denied: 2, Kernel: 3, Broken: 4, Malformed: 5, ConnsOK: true,
	}
}

// hostile has names no sane program has: every byte, invalid UTF-8,
// terminal escapes, long strings, extreme numbers.
func hostile() *sample.Snapshot {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	return &sample.Snapshot{
		Time: time.Unix(-1, 999999999),
		Procs: []sample.Process{
			{PID: math.MaxInt, PPID: math.MinInt, StartTime: math.MaxUint64, UID: math.MaxUint32, Name: string(all),
				Comm: "\xff\xfe\n\x00evil", Exe: "\x1b]0;pwned\x07", Script: strings.Repeat("x", 300),
				Cgroup: "/a\nb", RAM: math.MaxUint64, Private: math.MaxUint64 - 1, Shared: 1, Swap: math.MaxUint64,
				Conns: math.MaxUint32},
			{PID: -5, PPID: -1, StartTime: 0, Name: "\x80", Comm: "\x80", Exe: "", Cgroup: "\x80"},
			{PID: 0, Name: "é", Comm: "e\u0301"},
		},
		Gone: -1, Denied: math.MaxInt, Kernel: math.MinInt,
		MeminfoErr: errors.New("\xff\x00"),
	}
}

// synthetic is a host of n processes: ascending PIDs with gaps, about
// 60 programs, a cgroup per service, figures of every size.
func synthetic(n int) *sample.Snapshot {
	progs := []string{"systemd", "sshd", "bash", "postgres", "nginx", "python3", "node", "java", "chrome", "firefox",
		"containerd-shim", "dockerd", "kworker", "rsyslogd", "cron", "dbus-daemon", "Xorg", "gnome-shell", "pulseaudio",
		"code", "go", "gopls", "memwho", "redis-server", "mysqld", "php-fpm", "apache2", "haproxy", "envoy", "kubelet"}
	s := &sample.Snapshot{Time: time.Unix(1795000000, 5), MeminfoOK: true, ConnsOK: true,
		Meminfo: sample.Meminfo{MemTotal: 64 << 30, MemFree: 10 << 30, MemAvailable: 30 << 30, Cached: 20 << 30}}
	x := uint64(88172645463325252)
	rnd := func() uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x }
	pid := 1
	for i := range n {
		prog := progs[rnd()%uint64(len(progs))]
		variant := rnd() % 2
		name := prog
		if variant == 1 {
			name = fmt.Sprintf("%s-%d", prog, rnd()%20)
		}
		p := sample.Process{
			PID: pid, PPID: max(1, pid-int(rnd()%50)), StartTime: uint64(100 + i*37), UID: []uint32{0, 1000, 33, 999}[rnd()%4], UIDKnown: true,
			Name: name, Comm: name[:min(len(name), 15)], Exe: prog,
			Cgroup:  fmt.Sprintf("/system.slice/%s.service", prog),
			RAM:     (rnd() % (512 << 10)) << 12,
			Private: (rnd() % (256 << 10)) << 12,
			Swap:    (rnd() % 1024) << 12,
			Conns:   uint32(rnd() % 8),
		}
		p.Shared = p.RAM / 3
		if prog == "python3" {
			p.Script = fmt.Sprintf("worker%d.py", rnd()%5)
		}
		if rnd()%10 == 0 {
			p.Accuracy, p.Cause = sample.Estimate, sample.CauseDenied
		}
		s.Procs = append(s.Procs, p)
		pid += 1 + int(rnd()%7)
	}
	return s
}

// same reports how a and b differ, "" when they do not: times by their
// instant, errors by their message, no processes as nil.
func same(a, b *sample.Snapshot) string {
	if !a.Time.Equal(b.Time) {
		return fmt.Sprintf("Time %v, want %v", a.Time, b.Time)
	}
	if (a.MeminfoErr == nil) != (b.MeminfoErr == nil) ||
		a.MeminfoErr != nil && a.MeminfoErr.Error() != b.MeminfoErr.Error() {
		return fmt.Sprintf("MeminfoErr %v, want %v", a.MeminfoErr, b.MeminfoErr)
	}
	if len(a.Procs) != len(b.Procs) {
		return fmt.Sprintf("%d processes, want %d", len(a.Procs), len(b.Procs))
	}
	for i := range a.Procs {
		if a.Procs[i] != b.Procs[i] {
			return fmt.Sprintf("process %d:\n %+v\nwant\n %+v", i, a.Procs[i], b.Procs[i])
		}
	}
	x, y := *a, *b
	x.Time, y.Time, x.MeminfoErr, y.MeminfoErr, x.Procs, y.Procs = time.Time{}, time.Time{}, nil, nil, nil, nil
	if !reflect.DeepEqual(x, y) {
		return fmt.Sprintf("%+v\nwant\n%+v", x, y)
	}
	return ""
}

func roundTrip(t *testing.T, s *sample.Snapshot) []byte {
	t.Helper()
	taken := time.Unix(1795000000, 42)
	b := EncodeMeta(nil, s, Meta{Taken: taken})
	var got sample.Snapshot
	m, err := DecodeMeta(b, &got)
	if err != nil {
		t.Fatal(err)
	}
	if d := same(&got, s); d != "" {
		t.Fatal(d)
	}
	if !m.Taken.Equal(taken) {
		t.Errorf("taken %v, want %v", m.Taken, taken)
	}
	// Into a snapshot that held something else: nothing of it is left.
	dirty := *hostile()
	dirty.Procs = append(make([]sample.Process, 0, len(s.Procs)+10), dirty.Procs...)
	if err := Decode(Encode(nil, s), &dirty); err != nil {
		t.Fatal(err)
	}
	if d := same(&dirty, s); d != "" {
		t.Fatal("decoded over another snapshot: " + d)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	for name, s := range map[string]*sample.Snapshot{
		"empty":     {},
		"small":     small(),
		"hostile":   hostile(),
		"synthetic": synthetic(3000),
		"paced":     paced(),
	} {
		t.Run(name, func(t *testing.T) { roundTrip(t, s) })
	}
}

// paced is a snapshot with a process read page by page: estimated, with
// its bounds, beside an exact one.
func paced() *sample.Snapshot {
	s := small()
	s.Procs = append(s.Procs[:1], sample.Process{PID: 900, PPID: 1, StartTime: 1300, Name: "redis-server", Comm: "redis-server",
		Exe: "redis-server", RAM: 8 << 30, Private: 7 << 30, Shared: 1 << 30, Swap: 64 << 20,
		Accuracy: sample.Estimate, Cause: sample.CausePaced, Bound: 512 << 20, SwapBound: 64 << 20})
	return s
}

// TestDecodePacedOld: an older decoder reads a paced process as an
// estimate by choice (its state byte's cause is none), and a bound on a
// process whose state says anything else is refused.
func TestDecodePacedOld(t *testing.T) {
	b := Encode(nil, paced())
	i := bytes.Index(b, []byte{tagState})
	if i < 0 {
		t.Fatal("no state section")
	}
	var got sample.Snapshot
	if err := Decode(b, &got); err != nil || got.Procs[1].Cause != sample.CausePaced {
		t.Fatalf("decode: %v, cause %v", err, got.Procs[1].Cause)
	}
	// The state byte of the paced process: estimate, cause none.
	ex := small()
	ex.Procs = ex.Procs[:1]
	ex.Procs = append(ex.Procs, paced().Procs[1])
	ex.Procs[1].Accuracy, ex.Procs[1].Cause = sample.Exact, sample.CauseNone
	if err := Decode(Encode(nil, ex), &got); err == nil || !strings.Contains(err.Error(), "bound on figures that are not estimates") {
		t.Errorf("a bound on exact figures: %v, want refused", err)
	}
}

// TestRoundTripScanned round-trips what the sampler reads from the
// captured trees and from this machine's /proc.
func TestRoundTripScanned(t *testing.T) {
	fixtures, err := filepath.Glob("../proc/testdata/*.txtar")
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	roots := map[string]string{"live": "/proc"}
	for _, f := range fixtures {
		roots[strings.TrimSuffix(filepath.Base(f), ".txtar")] = f
	}
	for name, root := range roots {
		t.Run(name, func(t *testing.T) {
			if root != "/proc" {
				root = proctest.Root(t, root)
			}
			e, err := engine.New(engine.Options{FS: fstest.Open(t, root), OneShot: true,
				NeedUID: true, NeedCgroup: true, NeedStartTime: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var s sample.Snapshot
			if err := e.Scan(&s); err != nil {
				t.Fatal(err)
			}
			if len(s.Procs) == 0 && name != "kernel-thread" && name != "zombie" {
				t.Logf("no processes in %s", name)
			}
			// What the sampler writes is plausible (TestCheck).
			if err := Check(&s); err != nil {
				t.Errorf("Check of the scan of %s: %v", name, err)
			}
			roundTrip(t, &s)
		})
	}
}

// TestEveryField fails when a field is added to sample.Snapshot or
// sample.Process and not encoded: it sets every field through
// reflection and expects each to come back.
func TestEveryField(t *testing.T) {
	var s sample.Snapshot
	s.Procs = make([]sample.Process, 2)
	seq := 0
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		for i := range v.NumField() {
			f := v.Field(i)
			seq++
			switch f.Kind() {
			case reflect.Bool:
				f.SetBool(true)
			case reflect.Int, reflect.Int64:
				f.SetInt(int64(seq) * 1000003)
			case reflect.Uint8:
				f.SetUint(1) // enums: 1 is valid for all
			case reflect.Uint32, reflect.Uint64:
				f.SetUint(uint64(seq) * 999983)
			case reflect.String:
				f.SetString(fmt.Sprintf("s%d\xff", seq))
			case reflect.Struct:
				switch f.Type() {
				case reflect.TypeFor[time.Time]():
					f.Set(reflect.ValueOf(time.Unix(int64(seq), int64(seq))))
				default:
					fill(f)
				}
			case reflect.Slice:
				for j := range f.Len() {
					fill(f.Index(j))
				}
			case reflect.Interface:
				f.Set(reflect.ValueOf(errors.New("meminfo broken")))
			default:
				t.Fatalf("field %s of kind %s: teach this test (and the encoder) about it", v.Type().Field(i).Name, f.Kind())
			}
		}
	}
	fill(reflect.ValueOf(&s).Elem())
	// Bounds go with estimates read page by page, the one cause they
	// are written with.
	for i := range s.Procs {
		s.Procs[i].Cause = sample.CausePaced
	}
	roundTrip(t, &s)
	// And every field false/zero in the second process, the first
	// being all set: flags do not leak from one to the other.
	s.Procs[1] = sample.Process{}
	roundTrip(t, &s)
}

func TestGolden(t *testing.T) {
	b := EncodeMeta(nil, small(), Meta{Taken: time.Unix(1795000000, 0)})
	file := filepath.Join("testdata", "small.golden")
	dump := []byte(hex.Dump(b))
	if *update {
		if err := os.WriteFile(file, dump, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(dump, want) {
		t.Errorf("the encoding of small() differs from %s: the format changed. A change that old decoders "+
			"read correctly (a new section) may update the file (go test -update); any other needs a new Version.\n got:\n%s\nwant:\n%s",
			file, dump, want)
	}
	// What was written once decodes the same forever.
	raw, err := undump(want)
	if err != nil {
		t.Fatal(err)
	}
	var got sample.Snapshot
	if err := Decode(raw, &got); err != nil {
		t.Fatal(err)
	}
	if d := same(&got, small()); d != "" {
		t.Error(d)
	}
}

// undump reverses hex.Dump.
func undump(d []byte) ([]byte, error) {
	var out []byte
	for line := range strings.Lines(string(d)) {
		if len(line) < 10 {
			continue
		}
		hexpart, _, _ := strings.Cut(line[10:], "|")
		b, err := hex.DecodeString(strings.ReplaceAll(hexpart, " ", ""))
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

type sec struct {
	tag uint64
	p   []byte
}

// split returns the sections of a well-formed message.
func split(t *testing.T, b []byte) []sec {
	t.Helper()
	var out []sec
	for off := headerLen; off < len(b); {
		tag, k := binary.Uvarint(b[off:])
		off += k
		n := int(binary.LittleEndian.Uint32(b[off:]))
		off += 4
		out = append(out, sec{tag, bytes.Clone(b[off : off+n])})
		off += n
	}
	return out
}

// join builds a message of secs, in their order.
func join(secs []sec) []byte {
	b := append([]byte(magic), Version, 0, 0, 0, 0)
	for _, s := range secs {
		b = binary.AppendUvarint(b, s.tag)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s.p)))
		b = append(b, s.p...)
	}
	binary.LittleEndian.PutUint32(b[headerLen-4:], uint32(len(b)-headerLen))
	return b
}

// edit returns good with f applied to its sections.
func editSections(t *testing.T, good []byte, f func(secs []sec) []sec) []byte {
	t.Helper()
	return join(f(split(t, good)))
}

func find(secs []sec, tag uint64) *sec {
	for i := range secs {
		if secs[i].tag == tag {
			return &secs[i]
		}
	}
	panic(fmt.Sprintf("no section %d", tag))
}

func TestDecodeRefuses(t *testing.T) {
	good := Encode(nil, small())
	if !bytes.Equal(join(split(t, good)), good) {
		t.Fatal("split and join do not give the message back")
	}
	edit := func(f func(b []byte)) []byte { b := bytes.Clone(good); f(b); return b }
	secs := func(f func(secs []sec) []sec) []byte { return editSections(t, good, f) }
	setByte := func(tag uint64, i int, v byte) []byte {
		return secs(func(s []sec) []sec {
			p := find(s, tag).p
			if i < 0 {
				i += len(p)
			}
			p[i] = v
			return s
		})
	}
	// info for 3 processes at time 0 with no counters: 0, 0, 3, 0*5, flags
	info := func(nprocs uint64) []byte {
		b := []byte{0, 0}
		b = binary.AppendUvarint(b, nprocs)
		return append(b, 0, 0, 0, 0, 0, 0)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "cut short: 0 bytes"},
		{"not-ours", []byte("HTTP/1.1 400 Bad Request\r\n"), "not a memwho snapshot"},
		{"short-magic", []byte("MWS"), "cut short"},
		{"version-0", edit(func(b []byte) { b[4] = 0 }), "version 0"},
		{"header-cut", good[:7], "cut short: 7 bytes"},
		{"trailing", append(bytes.Clone(good), 0), "1 bytes after the end"},
		{"cut", good[:len(good)-1], "cut short"},
		{"too-large", edit(func(b []byte) { binary.LittleEndian.PutUint32(b[5:], MaxSize) }), "more than the"},
		{"section-overruns", edit(func(b []byte) { b[headerLen+4] = 0xff }), "section 1: 42"},
		{"tag-0", secs(func(s []sec) []sec { return append([]sec{{0, nil}}, s...) }), "section tag 0"},
		{"duplicate", secs(func(s []sec) []sec { return append(s, s[len(s)-1]) }), "tags must ascend"},
		{"descending", secs(func(s []sec) []sec { s[0], s[1] = s[1], s[0]; return s }), "tags must ascend"},
		{"missing-info", secs(func(s []sec) []sec { return s[1:] }), "no info section"},
		{"missing-column", secs(func(s []sec) []sec {
			return slices.DeleteFunc(s, func(x sec) bool { return x.tag == tagComm })
		}), "no comm section"},
		{"unknown-flags", setByte(tagInfo, -1, 0x80), "info: unknown flags"},
		{"info-left-over", secs(func(s []sec) []sec { find(s, tagInfo).p = append(find(s, tagInfo).p, 0); return s }), "info: 1 bytes left over"},
		{"nanoseconds", secs(func(s []sec) []sec {
			p := binary.AppendVarint(nil, 0)
			p = binary.AppendUvarint(p, 1e9)
			find(s, tagInfo).p = append(p, find(s, tagInfo).p[2+4:]...)
			return s
		}), "info: 1000000000 nanoseconds"},
		{"state-bits", setByte(tagState, 0, 0x80), "state: unknown bits"},
		{"cause-3", setByte(tagState, 0, 3<<stCauseShift), "state: unknown bits"},
		{"available", setByte(tagMeminfo, -1, 3), "unknown available source 3"},
		{"string-index", setByte(tagName, 0, 100), "name: string 100 of"},
		{"string-empty", secs(func(s []sec) []sec { find(s, tagStrings).p[0] = 0; return s }), "strings: bad entry 1"},
		{"string-overruns", setByte(tagStrings, 0, 0x7f), "strings: bad entry 1"},
		{"column-short", secs(func(s []sec) []sec { p := &find(s, tagRAM).p; *p = (*p)[:len(*p)-1]; return s }), "ram: bad or missing number"},
		{"optional-column-short", secs(func(s []sec) []sec {
			i := slices.IndexFunc(s, func(x sec) bool { return x.tag == tagStrings })
			return slices.Insert(s, i, sec{tagPssAnon, []byte{10, 1}})
		}), "pss anon: 2 bytes for 3 processes"},
		{"kernel-short", secs(func(s []sec) []sec {
			i := slices.IndexFunc(s, func(x sec) bool { return x.tag == tagPID })
			return slices.Insert(s, i, sec{tagKernel, []byte{1, 2}})
		}), "kernel: bad or missing number"},
		{"column-long", secs(func(s []sec) []sec { p := &find(s, tagPPID).p; *p = append(*p, 0); return s }), "ppid: 1 bytes left over"},
		{"varint-overflow", secs(func(s []sec) []sec {
			find(s, tagSwap).p = append([]byte{0}, append(bytes.Repeat([]byte{0xff}, 10), 1, 0, 0)...)
			return s
		}), "swap: bad or missing number"},
		{"uid-range", secs(func(s []sec) []sec {
			find(s, tagUID).p = binary.AppendUvarint([]byte{0, 0}, math.MaxUint32+1)
			return s
		}), "uid: 4294967296 out of range"},
		{"conns-range", secs(func(s []sec) []sec {
			find(s, tagConns).p = binary.AppendUvarint([]byte{0, 0}, math.MaxUint32+1)
			return s
		}), "conns: 4294967296 out of range"},
		{"shift-range", secs(func(s []sec) []sec { find(s, tagRAM).p[0] = 64; return s }), "ram: shift 64"},
		{"shift-overflow", secs(func(s []sec) []sec {
			p := []byte{20}
			p = binary.AppendUvarint(p, 1<<44)
			find(s, tagRAM).p = append(p, 0, 0)
			return s
		}), "ram: 17592186044416<<20 out of range"},
		{"count-vs-state", secs(func(s []sec) []sec { find(s, tagState).p = []byte{0, 0}; return s }), "3 processes, state column of 2"},
		// A count no column pays for is refused before anything is
		// allocated for it.
		{"huge-count", secs(func(s []sec) []sec { find(s, tagInfo).p = info(MaxProcs); return s }), "4194304 processes, state column of 3"},
		{"huge-count-small-columns", secs(func(s []sec) []sec {
			find(s, tagInfo).p = info(100000)
			find(s, tagState).p = make([]byte, 100000)
			return s
		}), "pid: 4 bytes for 100000 processes"},
		{"too-many", secs(func(s []sec) []sec { find(s, tagInfo).p = info(MaxProcs + 1); return s }), "4194305 processes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s sample.Snapshot
			err := Decode(tc.b, &s)
			if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an ErrMalformed with %q", err, tc.want)
			}
		})
	}

	t.Run("future-version", func(t *testing.T) {
		for _, b := range [][]byte{good[:5], good, append(bytes.Clone(good), "a different layout"...)} {
			b = bytes.Clone(b)
			b[4] = Version + 1
			err := Decode(b, new(sample.Snapshot))
			if !errors.Is(err, ErrVersion) || errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "version 2 is newer") {
				t.Errorf("got %v, want ErrVersion", err)
			}
		}
	})
	t.Run("unknown-sections-skipped", func(t *testing.T) {
		b := secs(func(s []sec) []sec {
			i := slices.IndexFunc(s, func(x sec) bool { return x.tag == tagPID })
			s = slices.Insert(s, i, sec{15, []byte("between")})
			return append(s, sec{41, nil}, sec{1 << 40, []byte("a later field")})
		})
		var s sample.Snapshot
		if err := Decode(b, &s); err != nil {
			t.Fatal(err)
		}
		if d := same(&s, small()); d != "" {
			t.Error(d)
		}
	})
	t.Run("every-prefix", func(t *testing.T) {
		for i := range len(good) {
			if err := Decode(good[:i], new(sample.Snapshot)); err == nil {
				t.Fatalf("%d of %d bytes decoded", i, len(good))
			}
		}
	})
}

// TestClaimsBounded: a message that claims many processes or strings
// allocates in proportion to its size, not to its claims.
func TestClaimsBounded(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless with -race")
	}
	s := synthetic(1000)
	b := Encode(nil, s)
	var got sample.Snapshot
	allocs := testing.AllocsPerRun(20, func() {
		got.Procs = nil
		if err := Decode(b, &got); err != nil {
			t.Fatal(err)
		}
	})
	// The process slice and the string table.
	if allocs > 3 {
		t.Errorf("%.0f allocations per decode, want at most 3", allocs)
	}
	allocs = testing.AllocsPerRun(20, func() {
		if err := Decode(b, &got); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("%.0f allocations per decode into a snapshot with room, want at most 2", allocs)
	}
}

func TestEncodeNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless with -race")
	}
	s := synthetic(3000)
	buf := Encode(nil, s)
	allocs := testing.AllocsPerRun(20, func() { buf = Encode(buf[:0], s) })
	if allocs > 0 {
		t.Errorf("%.1f allocations per encode, want 0", allocs)
	}
}

// TestCanonical: equal snapshots give equal bytes, so that a file's
// bytes can be compared.
func TestCanonical(t *testing.T) {
	a := Encode(nil, synthetic(500))
	b := Encode(nil, synthetic(500))
	if !bytes.Equal(a, b) {
		t.Error("two encodings of one snapshot differ")
	}
}

// TestCheck: what no sampler writes is refused by the readers that show
// figures (a hand-edited file could print "13.0 MiB + 6.3 MiB = 12.0
// MiB", negative counts and a PID of -5).
func TestCheck(t *testing.T) {
	ok := func() *sample.Snapshot {
		return &sample.Snapshot{Procs: []sample.Process{{PID: 1, RAM: 10, Private: 4, Shared: 6}, {PID: 7, PPID: 1, RAM: 5, Private: 5}}}
	}
	if err := Check(ok()); err != nil {
		t.Fatalf("Check of a plausible snapshot: %v", err)
	}
	for name, spoil := range map[string]func(s *sample.Snapshot){
		"pid 0":            func(s *sample.Snapshot) { s.Procs[0].PID = 0 },
		"negative pid":     func(s *sample.Snapshot) { s.Procs[0].PID = -5 },
		"pids descend":     func(s *sample.Snapshot) { s.Procs[1].PID = 1 },
		"negative parent":  func(s *sample.Snapshot) { s.Procs[1].PPID = -1 },
		"private over ram": func(s *sample.Snapshot) { s.Procs[0].Private = 11 },
		"shared over ram":  func(s *sample.Snapshot) { s.Procs[0].Shared = 11 },
		"ram over 2^64":    func(s *sample.Snapshot) { s.Procs[0].RAM, s.Procs[1].RAM = math.MaxUint64, 1 },
		"negative gone":    func(s *sample.Snapshot) { s.Gone = -1 },
		"negative denied":  func(s *sample.Snapshot) { s.Denied = -1 << 40 },
		"negative broken":  func(s *sample.Snapshot) { s.Broken = -1 },
	} {
		s := ok()
		spoil(s)
		if err := Check(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Check = %v, want a malformed snapshot", name, err)
		}
	}
}
