package snapshot

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

// FuzzDecode: Decode never panics and refuses with one of its errors;
// what it accepts encodes back to bytes that decode to the same
// snapshot, and encoding that again gives the same bytes.
func FuzzDecode(f *testing.F) {
	// The optional sections too: the RAM split and the kernel lines.
	split := small()
	split.Procs[0].PssAnon, split.Procs[0].PssFile, split.Procs[0].PssShmem = 8<<20, 3<<20, 1<<20
	split.Procs[1].PrivateHugetlb = 2 << 20
	split.Meminfo.SUnreclaim, split.Meminfo.Zram = 50<<20, 7<<20
	// The ledger's figures and those read before the walk.
	split.Meminfo.PCPFree, split.Meminfo.Zswapped = 12<<20, 3<<20
	split.Before, split.BeforeOK, split.BeforeSpan = split.Meminfo, true, 1500*time.Millisecond
	for _, s := range []*sample.Snapshot{{}, small(), hostile(), synthetic(20), split} {
		f.Add(Encode(nil, s))
	}
	if d, err := os.ReadFile("testdata/small.golden"); err == nil {
		if b, err := undump(d); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s sample.Snapshot
		m, err := DecodeMeta(b, &s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error wraps neither ErrMalformed nor ErrVersion: %v", err)
			}
			return
		}
		// Every process pays a byte in each of its 15 columns.
		if 15*len(s.Procs) > len(b) {
			t.Fatalf("%d processes from %d bytes", len(s.Procs), len(b))
		}
		b2 := EncodeMeta(nil, &s, m)
		var s2 sample.Snapshot
		m2, err := DecodeMeta(b2, &s2)
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if d := same(&s2, &s); d != "" {
			t.Fatal(d)
		}
		if !m2.Taken.Equal(m.Taken) {
			t.Fatalf("taken %v, want %v", m2.Taken, m.Taken)
		}
		if b3 := EncodeMeta(nil, &s2, m2); !bytes.Equal(b3, b2) {
			t.Fatal("encoding is not canonical")
		}
	})
}
