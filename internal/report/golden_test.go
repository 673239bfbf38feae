package report

import (
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/memwho/memwho/internal/sample"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden files")

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
)

// longName is 300 bytes, far wider than any terminal column.
var longName = strings.Repeat("long-name-", 30)

// hostileGroups holds exact figures under names that try to break the
// output: newline, an ANSI colour sequence, tab, parentheses, invalid
// UTF-8, a 300-byte name, a bidi override, a C1 control, a backslash.
func hostileGroups() []sample.Group {
	return withSplit([]sample.Group{
		{Key: "(sd-pam)", Count: 1, PIDs: []int{900}, RAM: 312 * kib, Private: 200 * kib, Shared: 112 * kib},
		{Key: "evil\nname", Count: 1, PIDs: []int{4242}, RAM: 800 * kib, Private: 700 * kib, Shared: 100 * kib},
		{Key: "red\x1b[31mtext\x1b[0m", Count: 1, PIDs: []int{4243}, RAM: 1 * mib, Private: 900 * kib, Shared: 124 * kib, Swap: 4 * kib},
		{Key: "tab\there", Count: 2, PIDs: []int{10, 11}, RAM: 1536 * kib, Private: 1 * mib, Shared: 512 * kib},
		{Key: "bad\xffutf8", Count: 1, PIDs: []int{77}, RAM: 2 * mib, Private: 2 * mib},
		{Key: "rtl\u202egnp.exe", Count: 1, PIDs: []int{78}, RAM: 3 * mib, Private: 3 * mib},
		{Key: "c1\u009b31m\x7f", Count: 1, PIDs: []int{79}, RAM: 3*mib + 1, Private: 3 * mib, Shared: 1},
		{Key: `dev-disk-by\x2duuid`, Count: 1, PIDs: []int{80}, RAM: 5 * mib, Private: 5 * mib},
		{Key: longName, Count: 1, PIDs: []int{81}, RAM: 12 * mib, Private: 10 * mib, Shared: 2 * mib},
		{Key: "sshd", Count: 3, PIDs: []int{1200, 1201, 1305}, RAM: 9*mib + 300*kib, Private: 6 * mib, Shared: 3*mib + 300*kib, Swap: 164 * kib},
		{Key: "firefox", Count: 14, PIDs: []int{2000, 2001, 2002, 2003, 2004, 2005, 2006, 2007, 2008, 2009, 2010, 2011, 2012, 2013},
			RAM: 2*gib + 123*mib, Private: 1*gib + 900*mib, Shared: 247 * mib, Swap: 160 * mib},
	})
}

// withSplit splits the groups' RAM by kind of page as a kernel would:
// private pages anonymous, shared ones two thirds file-backed and a third
// shmem.
func withSplit(groups []sample.Group) []sample.Group {
	for i := range groups {
		g := &groups[i]
		g.PssAnon = g.Private
		g.PssFile = g.Shared / 3 * 2
		g.PssShmem = g.Shared - g.PssFile
	}
	return groups
}

// estimateGroups mixes exact groups with status-based estimates and swap
// counted in full.
func estimateGroups() []sample.Group {
	return withSplit([]sample.Group{
		{Key: "bash", Count: 2, PIDs: []int{1, 2}, RAM: 4 * mib, Private: 3 * mib, Shared: 1 * mib, Swap: 0},
		{Key: "dockerd", Count: 1, PIDs: []int{600}, RAM: 60 * mib, Private: 40 * mib, Shared: 20 * mib, Swap: 8 * mib, Estimated: 1},
		{Key: "java", Count: 1, PIDs: []int{700}, RAM: 900 * mib, Private: 880 * mib, Shared: 20 * mib, Swap: 100 * mib, SwapPssMissing: true},
		{Key: "postgres\n\x1b]0;pwned\x07", Count: 5, PIDs: []int{801, 802, 803, 804, 805}, RAM: 1 * gib, Private: 200 * mib, Shared: 824 * mib, Swap: 1 * mib, Estimated: 5},
	})
}

func sum(groups []sample.Group) sample.Group {
	t := sample.Group{Key: "total"}
	for _, g := range groups {
		t.Count += g.Count
		t.PIDs = append(t.PIDs, g.PIDs...)
		t.RAM += g.RAM
		t.Private += g.Private
		t.Shared += g.Shared
		t.Swap += g.Swap
		t.PssAnon += g.PssAnon
		t.PssFile += g.PssFile
		t.PssShmem += g.PssShmem
		t.PrivateHugetlb += g.PrivateHugetlb
		t.Estimated += g.Estimated
		t.SwapPssMissing = t.SwapPssMissing || g.SwapPssMissing
		t.Conns += g.Conns
	}
	return t
}

// withConns gives groups ESTABLISHED TCP connection counts, one of them
// wide enough to widen the column.
func withConns(groups []sample.Group) []sample.Group {
	out := append([]sample.Group(nil), groups...)
	for i := range out {
		out[i].Conns = uint64(i * i * 7)
	}
	if len(out) > 1 {
		out[len(out)-1].Conns = 12345
	}
	return out
}

func snapshot(meminfo bool) *sample.Snapshot {
	s := &sample.Snapshot{
		Time:   time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("CET", 3600)),
		Gone:   2,
		Kernel: 131,
	}
	if meminfo {
		s.MeminfoOK = true
		s.Meminfo = sample.Meminfo{
			MemTotal:     16 * gib,
			MemFree:      2 * gib,
			MemAvailable: 10 * gib,
			Buffers:      300 * mib,
			Cached:       6 * gib,
			Shmem:        700 * mib,
			SwapTotal:    8 * gib,
			SwapFree:     8*gib - 200*mib,
			Hugetlb:      0,
			SReclaimable: 400 * mib,
			SUnreclaim:   150 * mib,
			KernelStack:  20 * mib,
			PageTables:   60 * mib,
			VmallocUsed:  50 * mib,
			Percpu:       10 * mib,
		}
	}
	return s
}

type renderFunc func(*bytes.Buffer, []sample.Group, sample.Group, *sample.Snapshot, Options) error

func tableFn(b *bytes.Buffer, g []sample.Group, t sample.Group, s *sample.Snapshot, o Options) error {
	return Table(b, g, t, s, o)
}

func jsonFn(b *bytes.Buffer, g []sample.Group, t sample.Group, s *sample.Snapshot, o Options) error {
	return JSON(b, g, t, s, o)
}

func csvFn(b *bytes.Buffer, g []sample.Group, t sample.Group, s *sample.Snapshot, o Options) error {
	return CSV(b, g, t, s, o)
}

type goldenCase struct {
	name   string
	render renderFunc
	groups []sample.Group
	total  sample.Group
	snap   *sample.Snapshot
	opt    Options
}

func goldenCases() []goldenCase {
	hostile := hostileGroups()
	est := estimateGroups()
	denied := snapshot(true)
	denied.Denied = 6
	malformed := snapshot(false)
	malformed.Malformed = 1
	malformed.Broken = 1
	both := snapshot(false)
	both.Denied, both.Malformed = 5, 1
	// A host whose processes' PSS exceeds MemTotal - MemAvailable.
	negative := snapshot(true)
	negative.Meminfo.MemAvailable = 15 * gib
	byPID := []sample.Group{
		{Key: "1", Count: 1, PIDs: []int{1}, RAM: 11 * mib, Private: 9 * mib, Shared: 2 * mib},
		{Key: "4242", Count: 1, PIDs: []int{4242}, RAM: 30 * mib, Private: 25 * mib, Shared: 5 * mib, Swap: 3 * mib},
	}
	prog := Options{KeyHeader: "Program", By: "program", ShowCount: true}
	progSys := prog
	progSys.System = true
	progColor := prog
	progColor.Color = true
	progFast := prog
	progFast.Fast = true
	pid := Options{KeyHeader: "PID", By: "pid"}
	progConns := prog
	progConns.Conns = true
	pidConns := pid
	pidConns.Conns = true
	// --top 2 --system: the ledger is every process's, not the rows'.
	all := sum(hostile)
	// tmpfs mounts beside the full ledger: hostile mount points, one
	// empty (left out of the table), one left out of the list.
	progSysTmpfs := progSys
	progSysTmpfs.Tmpfs = []sample.TmpfsUse{
		{Mount: "/dev/shm", Used: 96 << 20},
		{Mount: "/run/user/1000", Used: 0},
		{Mount: "/home/eve/a b\nc\x1b[31m\xff", Used: 512 << 20},
	}
	progSysTmpfs.TmpfsMore = 1
	progSysTop := progSys
	progSysTop.Host = &all
	top2 := hostile[len(hostile)-2:]
	// A kernel without MemAvailable, with and without /proc/zoneinfo.
	noAvail := snapshot(true)
	noAvail.Meminfo.Available = sample.AvailableEstimated
	noAvail.Meminfo.SwapCached = 20 * mib
	noZones := snapshot(true)
	noZones.Meminfo.Available = sample.AvailableUpperBound
	// Every ledger line: huge pages mapped privately, zswap, zram.
	full := snapshot(true)
	full.Meminfo.Hugetlb, full.Meminfo.Zswap, full.Meminfo.Zram, full.Meminfo.SwapCached = 1*gib, 64*mib, 300*mib, 20*mib
	// The free pages on per-CPU lists, what zswap holds, the rest of
	// meminfo's lines, and the host read before the walk: 1 GiB was
	// freed, and the page cache grew, while the processes were read.
	full.Meminfo.PCPFree, full.Meminfo.Zswapped, full.Meminfo.KReclaimable = 148*mib, 139*mib, 410*mib
	full.Meminfo.HardwareCorrupted, full.Meminfo.Unaccepted = 4*mib, 256*mib
	full.Before, full.BeforeOK, full.BeforeSpan = full.Meminfo, true, 1234*time.Millisecond
	full.Before.MemFree -= 1 * gib
	full.Before.Cached -= 20 * mib
	full.Before.PCPFree -= 8 * mib
	fullGroups := hostileGroups()
	fullGroups[0].PrivateHugetlb = 512 * mib
	fullGroups[0].RAM += 512 * mib
	progSplit := prog
	progSplit.Split = true
	return []goldenCase{
		{"table_system_full", tableFn, fullGroups, sum(fullGroups), full, progSysTmpfs},
		{"json_system_full", jsonFn, fullGroups, sum(fullGroups), full, progSysTmpfs},
		{"table_split", tableFn, est, sum(est), denied, progSplit},
		{"table_system_top", tableFn, top2, sum(top2), snapshot(true), progSysTop},
		{"json_system_top", jsonFn, top2, sum(top2), snapshot(true), progSysTop},
		{"table_system_no_memavailable", tableFn, hostile, sum(hostile), noAvail, progSys},
		{"table_system_no_zoneinfo", tableFn, hostile, sum(hostile), noZones, progSys},
		{"json_system_no_memavailable", jsonFn, hostile, sum(hostile), noAvail, progSys},
		{"table_exact", tableFn, hostile, sum(hostile), snapshot(false), prog},
		{"table_estimate", tableFn, est, sum(est), denied, prog},
		{"table_fast", tableFn, est, sum(est), snapshot(false), progFast},
		{"table_malformed", tableFn, est, sum(est), malformed, prog},
		{"table_denied_malformed", tableFn, est, sum(est), both, prog},
		{"json_malformed", jsonFn, est, sum(est), malformed, prog},
		{"table_estimate_color", tableFn, est, sum(est), denied, progColor},
		{"table_system", tableFn, hostile, sum(hostile), snapshot(true), progSys},
		{"table_system_estimate", tableFn, est, sum(est), denied, progSys},
		{"table_system_negative", tableFn, hostile, sum(hostile), negative, progSys},
		{"table_pid", tableFn, byPID, sum(byPID), snapshot(false), pid},
		{"table_empty", tableFn, nil, sample.Group{}, nil, prog},
		{"json_exact", jsonFn, hostile, sum(hostile), snapshot(false), prog},
		{"json_system_estimate", jsonFn, est, sum(est), denied, progSys},
		{"csv_exact", csvFn, hostile, sum(hostile), snapshot(false), prog},
		{"csv_estimate", csvFn, est, sum(est), denied, prog},
		{"table_conns", tableFn, withConns(hostile), sum(withConns(hostile)), snapshot(false), progConns},
		{"table_conns_pid", tableFn, withConns(byPID), sum(withConns(byPID)), snapshot(false), pidConns},
		{"json_conns", jsonFn, withConns(est), sum(withConns(est)), denied, progConns},
		{"csv_conns", csvFn, withConns(est), sum(withConns(est)), denied, progConns},
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.render(&b, tc.groups, tc.total, tc.snap, tc.opt); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", tc.name+".golden"), b.Bytes())
		})
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		// Quote lines so a stray control byte shows in the diff.
		t.Errorf("%s mismatch (-want +got; go test -update rewrites it):\n%s",
			path, cmp.Diff(quoteLines(want), quoteLines(got)))
	}
}

func quoteLines(b []byte) []string {
	lines := strings.SplitAfter(string(b), "\n")
	for i, l := range lines {
		lines[i] = strconv.Quote(l)
	}
	return lines
}

// TestTableSafe checks that no table output, with any options, carries a
// control byte other than newline, except the dim/reset sequences Color
// asks for.
func TestTableSafe(t *testing.T) {
	for _, tc := range goldenCases() {
		if !strings.HasPrefix(tc.name, "table") {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Table(&b, tc.groups, tc.total, tc.snap, tc.opt); err != nil {
				t.Fatal(err)
			}
			out := strings.ReplaceAll(b.String(), dim, "")
			out = strings.ReplaceAll(out, reset, "")
			for _, r := range out {
				if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || unsafeRune(r)) {
					t.Fatalf("control %U in table output:\n%s", r, b.String())
				}
			}
			// One line per group, header, rule and total, plus legend
			// and footer lines: a name's newline must not add a line.
			if got, min := strings.Count(out, "\n"), len(tc.groups)+3; got < min {
				t.Errorf("got %d lines, want at least %d", got, min)
			}
		})
	}
}

// jsonReport mirrors the documented JSON schema.
type jsonReport struct {
	Schema string      `json:"schema"`
	Time   string      `json:"time"`
	By     string      `json:"by"`
	Groups []jsonGroup `json:"groups"`
	Total  jsonGroup   `json:"total"`
	// System holds numbers but for mem_available_source; int64 values
	// decode from the raw text.
	System  *map[string]json.RawMessage `json:"system"`
	Skipped struct {
		Gone   int `json:"gone"`
		Kernel int `json:"kernel"`
		Broken int `json:"broken"`
	} `json:"skipped"`
	Denied    int `json:"denied_processes"`
	Malformed int `json:"malformed_processes"`
	Estimated int `json:"estimated_processes"`
}

type jsonGroup struct {
	Key        string  `json:"key"`
	KeyBase64  *string `json:"key_base64"`
	Count      int     `json:"count"`
	PIDs       []int   `json:"pids"`
	RAM        uint64  `json:"ram_bytes"`
	Private    uint64  `json:"private_bytes"`
	Shared     uint64  `json:"shared_bytes"`
	Swap       uint64  `json:"swap_bytes"`
	PssAnon    uint64  `json:"pss_anon_bytes"`
	PssFile    uint64  `json:"pss_file_bytes"`
	PssShmem   uint64  `json:"pss_shmem_bytes"`
	Hugetlb    uint64  `json:"private_hugetlb_bytes"`
	Accuracy   string  `json:"accuracy"`
	SwapSource string  `json:"swap_source"`
}

// rawKey recovers the exact key as documented at JSON.
func (g *jsonGroup) rawKey(t *testing.T) string {
	if g.KeyBase64 == nil {
		return g.Key
	}
	b, err := base64.StdEncoding.DecodeString(*g.KeyBase64)
	if err != nil {
		t.Fatalf("key_base64 %q: %v", *g.KeyBase64, err)
	}
	if want := string(Sanitize(nil, string(b))); g.Key != want {
		t.Errorf("key = %q, want Sanitize form %q", g.Key, want)
	}
	return string(b)
}

func checkJSONGroup(t *testing.T, got jsonGroup, want *sample.Group) {
	t.Helper()
	if k := got.rawKey(t); k != want.Key {
		t.Errorf("key = %q, want %q", k, want.Key)
	}
	if got.Count != want.Count || got.RAM != want.RAM || got.Private != want.Private ||
		got.Shared != want.Shared || got.Swap != want.Swap || got.PssAnon != want.PssAnon ||
		got.PssFile != want.PssFile || got.PssShmem != want.PssShmem || got.Hugetlb != want.PrivateHugetlb {
		t.Errorf("figures of %q = %+v, want %+v", want.Key, got, *want)
	}
	if diff := cmp.Diff(want.PIDs, got.PIDs, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("pids of %q (-want +got):\n%s", want.Key, diff)
	}
	if got.Accuracy != want.Accuracy().String() {
		t.Errorf("accuracy of %q = %q, want %q", want.Key, got.Accuracy, want.Accuracy())
	}
	if ws := swapSource(want); got.SwapSource != ws {
		t.Errorf("swap_source of %q = %q, want %q", want.Key, got.SwapSource, ws)
	}
}

func TestJSONDecode(t *testing.T) {
	tests := []struct {
		name   string
		groups []sample.Group
		snap   *sample.Snapshot
		opt    Options
	}{
		{"hostile", hostileGroups(), snapshot(false), Options{By: "program"}},
		{"estimate system", estimateGroups(), snapshot(true), Options{By: "program", System: true}},
		{"nil snapshot", nil, nil, Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			total := sum(tt.groups)
			var b bytes.Buffer
			if err := JSON(&b, tt.groups, total, tt.snap, tt.opt); err != nil {
				t.Fatal(err)
			}
			if !json.Valid(b.Bytes()) {
				t.Fatalf("invalid JSON:\n%s", b.Bytes())
			}
			var r jsonReport
			dec := json.NewDecoder(&b)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r); err != nil {
				t.Fatal(err)
			}
			if r.Schema != Schema {
				t.Errorf("schema = %q, want %q", r.Schema, Schema)
			}
			if _, err := time.Parse(time.RFC3339, r.Time); err != nil || !strings.HasSuffix(r.Time, "Z") {
				t.Errorf("time = %q: want RFC 3339 UTC (%v)", r.Time, err)
			}
			if len(r.Groups) != len(tt.groups) {
				t.Fatalf("got %d groups, want %d", len(r.Groups), len(tt.groups))
			}
			for i := range tt.groups {
				checkJSONGroup(t, r.Groups[i], &tt.groups[i])
			}
			checkJSONGroup(t, r.Total, &total)
			if got, want := r.System != nil, tt.opt.System && tt.snap != nil && tt.snap.MeminfoOK; got != want {
				t.Errorf("system present = %v, want %v", got, want)
			}
			if r.System != nil {
				m := tt.snap.Meminfo
				sys := map[string]int64{}
				for k, v := range *r.System {
					if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
						sys[k] = n
					}
				}
				if got, want := sys["host_used_bytes"], int64(m.MemTotal-m.MemAvailable); got != want {
					t.Errorf("host_used_bytes = %d, want %d", got, want)
				}
				if got, want := sys["not_in_process_bytes"], int64(m.MemTotal-m.MemAvailable)-int64(total.RAM); got != want {
					t.Errorf("not_in_process_bytes = %d, want %d", got, want)
				}
				for name, want := range map[string]uint64{"ledger": m.MemTotal, "swap_ledger": m.SwapTotal} {
					var lines []struct {
						Name, Source string
						Bytes        int64
					}
					if err := json.Unmarshal((*r.System)[name], &lines); err != nil || len(lines) < 2 {
						t.Fatalf("%s: %v (%d lines)", name, err, len(lines))
					}
					var sum int64
					for _, l := range lines {
						sum += l.Bytes
						if l.Name == "" || l.Source == "" {
							t.Errorf("%s: line %+v has no name or source", name, l)
						}
					}
					if sum != int64(want) {
						t.Errorf("%s sums to %d, want %d", name, sum, want)
					}
				}
			}
			if r.Estimated != total.Estimated {
				t.Errorf("estimated_processes = %d, want %d", r.Estimated, total.Estimated)
			}
		})
	}
}

// TestJSONKeys checks that any key, valid UTF-8 or not, comes back exact.
func TestJSONKeys(t *testing.T) {
	keys := []string{"", `"quoted"`, `back\slash`, "\x00nul", "\u2028", "\u202e", "\u0085", "\xff\xfe", "ok\xc2", "<&>", "\ufffd"}
	for _, k := range keys {
		g := []sample.Group{{Key: k, Count: 1}}
		var b bytes.Buffer
		if err := JSON(&b, g, sum(g), nil, Options{}); err != nil {
			t.Fatal(err)
		}
		var r jsonReport
		if err := json.Unmarshal(b.Bytes(), &r); err != nil {
			t.Fatalf("key %q: %v\n%s", k, err, b.Bytes())
		}
		if got := r.Groups[0].rawKey(t); got != k {
			t.Errorf("key round trip: got %q, want %q", got, k)
		}
	}
}

// TestCSVColumnsFixed: with --conns or without, every column is where
// it always is; tcp_established, last, is empty when not counted. With
// --conns it was inserted before the split, whose columns shifted.
func TestCSVColumnsFixed(t *testing.T) {
	groups := withConns(estimateGroups())
	var plain, conns bytes.Buffer
	if err := CSV(&plain, groups, sum(groups), nil, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := CSV(&conns, groups, sum(groups), nil, Options{Conns: true}); err != nil {
		t.Fatal(err)
	}
	a, _ := csv.NewReader(&plain).ReadAll()
	b, _ := csv.NewReader(&conns).ReadAll()
	if len(a) != len(b) || len(a) < 2 {
		t.Fatalf("%d and %d records", len(a), len(b))
	}
	for i := range a {
		last := len(a[i]) - 1
		if len(a[i]) != len(b[i]) || !slices.Equal(a[i][:last], b[i][:last]) {
			t.Errorf("record %d: %q without --conns, %q with", i, a[i], b[i])
		}
		if i > 0 && (a[i][last] != "" || b[i][last] == "") {
			t.Errorf("record %d: tcp_established %q without --conns, %q with", i, a[i][last], b[i][last])
		}
	}
}

func TestCSVRoundTrip(t *testing.T) {
	for _, groups := range [][]sample.Group{hostileGroups(), estimateGroups(), nil} {
		total := sum(groups)
		var b bytes.Buffer
		if err := CSV(&b, groups, total, nil, Options{}); err != nil {
			t.Fatal(err)
		}
		// Sanitized keys keep every record on one line.
		if got, want := strings.Count(b.String(), "\n"), len(groups)+2; got != want {
			t.Errorf("got %d lines, want %d", got, want)
		}
		recs, err := csv.NewReader(&b).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(groups)+2 {
			t.Fatalf("got %d records, want %d", len(recs), len(groups)+2)
		}
		if diff := cmp.Diff(append(append(CSVHeader, CSVSplitColumns...), CSVConnsColumn), recs[0]); diff != "" {
			t.Errorf("header (-want +got):\n%s", diff)
		}
		check := func(rec []string, kind string, g *sample.Group) {
			t.Helper()
			want := []string{kind, g.Key, strconv.Itoa(g.Count),
				strconv.FormatUint(g.RAM, 10), strconv.FormatUint(g.Private, 10),
				strconv.FormatUint(g.Shared, 10), strconv.FormatUint(g.Swap, 10),
				g.Accuracy().String(), swapSource(g),
				strconv.FormatUint(g.PssAnon, 10), strconv.FormatUint(g.PssFile, 10),
				strconv.FormatUint(g.PssShmem, 10), strconv.FormatUint(g.PrivateHugetlb, 10), ""}
			key, err := unescape(rec[1])
			if err != nil {
				t.Errorf("key %q: %v", rec[1], err)
			}
			got := append([]string(nil), rec...)
			got[1] = key
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
		}
		for i := range groups {
			check(recs[i+1], "group", &groups[i])
		}
		check(recs[len(recs)-1], "total", &total)
	}
}

func BenchmarkTable(b *testing.B) {
	groups := make([]sample.Group, 1000)
	for i := range groups {
		n := uint64(i+1) * 123457
		groups[i] = sample.Group{
			Key:     "program-" + strconv.Itoa(i),
			Count:   1 + i%7,
			RAM:     n * 3,
			Private: n * 2,
			Shared:  n,
			Swap:    n / 3,
		}
	}
	groups[10].Key = "evil\x1b[31m\n"
	groups[20].Estimated = 1
	total := sum(groups)
	snap := snapshot(true)
	opt := Options{KeyHeader: "Program", ShowCount: true, System: true}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := Table(&buf, groups, total, snap, opt); err != nil {
			b.Fatal(err)
		}
	}
}
