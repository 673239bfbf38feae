package proc

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// The reference parsers below are slow and obviously correct: they split
// strings the way a person reads the file. The fuzz targets check that the
// in-place parsers never panic and agree with them on every input.

func refKB(v string) (uint64, bool) {
	v = strings.TrimLeft(v, " \t")
	num, ok := strings.CutSuffix(v, " kB")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n > MaxBytes/1024 {
		return 0, false
	}
	return n * 1024, true
}

func refLines(s string) ([]string, bool) {
	if s == "" || !strings.HasSuffix(s, "\n") {
		return nil, false
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n"), true
}

func refRollup(s string) (Rollup, error) {
	var out Rollup
	if s == "" {
		return out, ErrNoMM
	}
	lines, ok := refLines(s)
	if !ok {
		return Rollup{}, ErrMalformed
	}
	fields := map[string]*uint64{
		"Rss": &out.Rss, "Pss": &out.Pss, "Pss_Anon": &out.PssAnon, "Pss_File": &out.PssFile,
		"Pss_Shmem": &out.PssShmem, "Shared_Clean": &out.SharedClean, "Shared_Dirty": &out.SharedDirty,
		"Private_Clean": &out.PrivateClean, "Private_Dirty": &out.PrivateDirty, "Anonymous": &out.Anonymous,
		"Shared_Hugetlb": &out.SharedHugetlb, "Private_Hugetlb": &out.PrivateHugetlb, "Swap": &out.Swap,
		"SwapPss": &out.SwapPss, "Locked": &out.Locked,
	}
	counts := map[string]int{}
	for _, line := range lines {
		key, val, found := strings.Cut(line, ":")
		if !found || key == "" {
			continue
		}
		f, known := fields[key]
		if !known {
			continue
		}
		v, ok := refKB(val)
		if !ok || *f+v > MaxBytes {
			return Rollup{}, ErrMalformed
		}
		*f += v
		counts[key]++
		switch key {
		case "Pss":
			out.HasPss = true
		case "SwapPss":
			out.HasSwapPss = true
		}
	}
	if !out.HasPss {
		return Rollup{}, ErrMalformed
	}
	// Every mapping (or the one rollup) must carry each counter memwho
	// needs, SwapPss on none or on all.
	for _, k := range []string{"Rss", "Shared_Clean", "Shared_Dirty", "Private_Clean", "Private_Dirty", "Swap", "Locked"} {
		if counts[k] != counts["Pss"] {
			return Rollup{}, ErrMalformed
		}
	}
	if n := counts["SwapPss"]; n != 0 && n != counts["Pss"] {
		return Rollup{}, ErrMalformed
	}
	return out, nil
}

// seeds adds every file named like one of names from the fixtures and
// from the live /proc/self to f's corpus.
func seeds(f *testing.F, names ...string) {
	archives, _ := filepath.Glob("testdata/*.txtar")
	for _, a := range archives {
		ar, err := txtar.ParseFile(a)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range ar.Files {
			for _, n := range names {
				if filepath.Base(file.Name) == n {
					f.Add(strings.ReplaceAll(string(file.Data), "NULLBYTE", "\x00"))
				}
			}
		}
	}
	for _, n := range names {
		for _, p := range []string{"/proc/self/" + n, "/proc/" + n} {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(string(b))
			}
		}
	}
}

func FuzzParseRollup(f *testing.F) {
	seeds(f, "smaps_rollup", "smaps")
	f.Add("Pss: 1 kB\n")
	f.Add("Pss: 18014398509481983 kB\n")
	f.Add("Pss: 4398046511104 kB\n")
	f.Add("Pss: 4398046511103 kB\nPss: 1 kB\n")
	f.Add("Pss: 4398046511104 kB\nPss: 1 kB\n")
	f.Add("Pss: 18014398509481984 kB\n")
	f.Add("Pss:   12")
	f.Fuzz(func(t *testing.T, s string) {
		var got Rollup
		err := ParseRollup([]byte(s), &got)
		want, werr := refRollup(s)
		if err != werr {
			t.Fatalf("ParseRollup(%q) err = %v, reference %v", s, err, werr)
		}
		if err == nil && got != want {
			t.Fatalf("ParseRollup(%q) = %+v, reference %+v", s, got, want)
		}
	})
}

func refStat(s string) (Stat, error) {
	var out Stat
	open := strings.IndexByte(s, '(')
	close := strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return Stat{}, ErrMalformed
	}
	out.CommLen = copy(out.Comm[:], s[open+1:close])
	rest := s[close+1:]
	if !strings.HasPrefix(rest, " ") {
		return Stat{}, ErrMalformed
	}
	tok := strings.Split(rest[1:], " ")
	if len(tok) < 20 {
		return Stat{}, ErrMalformed
	}
	if len(tok[0]) != 1 {
		return Stat{}, ErrMalformed
	}
	out.State = tok[0][0]
	ppid, err := strconv.ParseUint(tok[1], 10, 64)
	if err != nil || ppid > 1<<31 {
		return Stat{}, ErrMalformed
	}
	out.PPid = int(ppid)
	if out.Flags, err = strconv.ParseUint(tok[6], 10, 64); err != nil {
		return Stat{}, ErrMalformed
	}
	if out.StartTime, err = strconv.ParseUint(strings.TrimSuffix(tok[19], "\n"), 10, 64); err != nil {
		return Stat{}, ErrMalformed
	}
	return out, nil
}

func FuzzParseStat(f *testing.F) {
	seeds(f, "stat")
	f.Add("1 (a) b) S 0 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 42\n")
	f.Fuzz(func(t *testing.T, s string) {
		var got Stat
		err := ParseStat([]byte(s), &got)
		want, werr := refStat(s)
		if err != werr {
			t.Fatalf("ParseStat(%q) err = %v, reference %v", s, err, werr)
		}
		if err == nil && got != want {
			t.Fatalf("ParseStat(%q) = %+v, reference %+v", s, got, want)
		}
	})
}

func refStatus(s string) (Status, error) {
	var out Status
	lines, ok := refLines(s)
	if !ok {
		return Status{}, ErrMalformed
	}
	var seenName, seenUID, seenVmSize bool
	for _, line := range lines {
		key, val, found := strings.Cut(line, ":")
		if !found || key == "" {
			continue
		}
		var f *uint64
		switch key {
		case "Name":
			out.NameLen = copy(out.Name[:], strings.TrimPrefix(val, "\t"))
			seenName = true
			continue
		case "State":
			v := strings.Trim(val, " \t")
			if v == "" {
				return Status{}, ErrMalformed
			}
			out.State = v[0]
			continue
		case "Threads":
			n, err := leadingUint(strings.Trim(val, " \t"))
			if err != nil || n > 1<<31 {
				return Status{}, ErrMalformed
			}
			out.Threads = int(n)
			// ParseStatus stops at the first Threads: line.
			goto end
		case "Tgid", "PPid":
			v := strings.Trim(val, " \t")
			n, err := leadingUint(v)
			if err != nil || n > 1<<31 {
				return Status{}, ErrMalformed
			}
			if key == "Tgid" {
				out.Tgid = int(n)
			} else {
				out.PPid = int(n)
			}
			continue
		case "Uid":
			m := uidLine.FindStringSubmatch(val)
			if m == nil {
				return Status{}, ErrMalformed
			}
			u, err1 := strconv.ParseUint(m[1], 10, 32)
			e, err2 := strconv.ParseUint(m[2], 10, 32)
			if err1 != nil || err2 != nil {
				return Status{}, ErrMalformed
			}
			out.UID, out.EUID = uint32(u), uint32(e)
			seenUID = true
			continue
		case "VmSize":
			seenVmSize = true
			continue
		case "VmRSS":
			f = &out.VmRSS
			out.HasMM = true
		case "RssAnon":
			f = &out.RssAnon
		case "RssFile":
			f = &out.RssFile
		case "RssShmem":
			f = &out.RssShmem
		case "VmSwap":
			f = &out.VmSwap
		case "HugetlbPages":
			f = &out.HugetlbPages
		default:
			continue
		}
		v, ok := refKB(val)
		if !ok {
			return Status{}, ErrMalformed
		}
		*f = v
	}
end:
	if !seenName || !seenUID || seenVmSize != out.HasMM {
		return Status{}, ErrMalformed
	}
	return out, nil
}

// leadingUint parses the decimal digits at the start of s.
func leadingUint(s string) (uint64, error) {
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	return strconv.ParseUint(s[:end], 10, 64)
}

var uidLine = regexp.MustCompile(`^[ \t]*([0-9]+)[ \t]+([0-9]+)`)

func FuzzParseStatus(f *testing.F) {
	seeds(f, "status")
	f.Fuzz(func(t *testing.T, s string) {
		var got Status
		err := ParseStatus([]byte(s), &got)
		want, werr := refStatus(s)
		if err != werr {
			t.Fatalf("ParseStatus(%q) err = %v, reference %v", s, err, werr)
		}
		if err == nil && got != want {
			t.Fatalf("ParseStatus(%q) = %+v, reference %+v", s, got, want)
		}
	})
}

func refMeminfo(s string) (Meminfo, error) {
	var out Meminfo
	lines, ok := refLines(s)
	if !ok {
		return Meminfo{}, ErrMalformed
	}
	fields := map[string]*uint64{
		"MemTotal": &out.MemTotal, "MemFree": &out.MemFree, "MemAvailable": &out.MemAvailable,
		"Buffers": &out.Buffers, "Cached": &out.Cached, "Shmem": &out.Shmem, "SwapTotal": &out.SwapTotal,
		"SwapFree": &out.SwapFree, "Hugetlb": &out.Hugetlb, "Hugepagesize": &out.Hugepagesize,
		"SwapCached": &out.SwapCached, "Active(file)": &out.ActiveFile, "Inactive(file)": &out.InactiveFile,
		"SReclaimable": &out.SReclaimable, "KReclaimable": &out.KReclaimable, "Mapped": &out.Mapped,
		"SUnreclaim": &out.SUnreclaim, "KernelStack": &out.KernelStack, "PageTables": &out.PageTables,
		"SecPageTables": &out.SecPageTables, "VmallocUsed": &out.VmallocUsed, "Percpu": &out.Percpu,
		"Zswap": &out.Zswap, "Zswapped": &out.Zswapped, "AnonPages": &out.AnonPages,
		"HardwareCorrupted": &out.HardwareCorrupted, "Unaccepted": &out.Unaccepted,
	}
	for _, line := range lines {
		key, val, found := strings.Cut(line, ":")
		if !found || key == "" {
			continue
		}
		if key == "HugePages_Total" {
			n, err := strconv.ParseUint(strings.Trim(val, " \t"), 10, 64)
			if err != nil {
				return Meminfo{}, ErrMalformed
			}
			out.HugePagesTotal = n
			continue
		}
		f, known := fields[key]
		if !known {
			continue
		}
		v, ok := refKB(val)
		if !ok {
			return Meminfo{}, ErrMalformed
		}
		*f = v
		if key == "MemAvailable" {
			out.HasMemAvailable = true
		}
		if key == "Mapped" {
			out.HasMapped = true
		}
	}
	if out.MemTotal == 0 {
		return Meminfo{}, ErrMalformed
	}
	if out.Hugetlb == 0 {
		out.Hugetlb = out.HugePagesTotal * out.Hugepagesize
	}
	return out, nil
}

func FuzzParseMeminfo(f *testing.F) {
	seeds(f, "meminfo")
	f.Fuzz(func(t *testing.T, s string) {
		var got Meminfo
		err := ParseMeminfo([]byte(s), &got)
		want, werr := refMeminfo(s)
		if err != werr {
			t.Fatalf("ParseMeminfo(%q) err = %v, reference %v", s, err, werr)
		}
		if err == nil && got != want {
			t.Fatalf("ParseMeminfo(%q) = %+v, reference %+v", s, got, want)
		}
	})
}

func refCgroup(s string) (string, error) {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return "", ErrMalformed
	}
	var unified, systemd *string
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[1] == "" && parts[0] == "0":
			unified = &parts[2]
		case parts[1] == "name=systemd":
			systemd = &parts[2]
		case contains(strings.Split(parts[1], ","), "memory"):
			return parts[2], nil
		}
	}
	if unified != nil {
		return *unified, nil
	}
	if systemd != nil {
		return *systemd, nil
	}
	return "", ErrMalformed
}

// refCgroupSystemd is the reference for CgroupPaths' systemd path.
func refCgroupSystemd(s string) (string, error) {
	mem, err := refCgroup(s)
	if err != nil {
		return "", err
	}
	var unified, named *string
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[1] == "" && parts[0] == "0":
			unified = &parts[2]
		case parts[1] == "name=systemd":
			named = &parts[2]
		}
	}
	switch {
	case unified != nil && *unified != "/":
		return *unified, nil
	case named != nil:
		return *named, nil
	case unified != nil:
		return *unified, nil
	}
	return mem, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func FuzzCgroupPath(f *testing.F) {
	seeds(f, "cgroup")
	f.Add("0::/system.slice/docker-0123.scope\n")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := CgroupPath([]byte(s))
		want, werr := refCgroup(s)
		if err != werr {
			t.Fatalf("CgroupPath(%q) err = %v, reference %v", s, err, werr)
		}
		if err == nil && string(got) != want {
			t.Fatalf("CgroupPath(%q) = %q, reference %q", s, got, want)
		}
		_, sd, err := CgroupPaths([]byte(s))
		wantSD, werr := refCgroupSystemd(s)
		if err != werr || err == nil && string(sd) != wantSD {
			t.Fatalf("CgroupPaths(%q) systemd = %q, %v, reference %q, %v", s, sd, err, wantSD, werr)
		}
	})
}

// FuzzParseZoneinfo: no input makes the parser panic, and an accepted
// file never yields watermarks larger than its own page counts allow.
func FuzzParseZoneinfo(f *testing.F) {
	seeds(f, "zoneinfo")
	f.Add("Node 0, zone   Normal\n  pages free     1000\n        min      10\n        low      20\n        high     30\n")
	f.Add("Node 0, zone   Normal\n        low      99999999999999999999\n")
	f.Fuzz(func(t *testing.T, s string) {
		var z Zoneinfo
		ParseZoneinfo([]byte(s), &z, 4096)
	})
}

// FuzzCutKey: the shared "Key: value" scanner splits every input the way
// strings.Cut does, line by line, and colonIndex agrees with IndexByte.
func FuzzCutKey(f *testing.F) {
	seeds(f, "status", "meminfo", "smaps")
	f.Add("Rss:   4 kB\n:x\nno colon\n0123456789abcdef:long key\nlast")
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		for len(b) > 0 {
			line, rest, _ := strings.Cut(string(b), "\n")
			if got, want := colonIndex([]byte(line)), strings.IndexByte(line, ':'); got != want {
				t.Fatalf("colonIndex(%q) = %d, want %d", line, got, want)
			}
			var key, val []byte
			key, val, b = cutKey(b)
			wantKey, wantVal, ok := strings.Cut(line, ":")
			if !ok || wantKey == "" {
				wantKey, wantVal = "", ""
			}
			if string(key) != wantKey || string(val) != wantVal || string(b) != rest {
				t.Fatalf("cutKey(%q) = %q, %q, %q; want %q, %q, %q", s, key, val, b, wantKey, wantVal, rest)
			}
		}
	})
}
