package snapshot

import (
	"bytes"
	"compress/gzip"
	"errors"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

func TestFileRoundTrip(t *testing.T) {
	taken := time.Unix(1763900000, 123456789)
	in := &sample.Snapshot{Time: taken.Add(-time.Second), Procs: []sample.Process{
		{PID: 1, Name: "a\x1b[31m\xff", UID: 7, UIDKnown: true, Cgroup: "/x", SystemdCgroup: "/y.service", RAM: 4096, Private: 4096},
	}}
	var buf bytes.Buffer
	if err := WriteFile(&buf, in, taken); err != nil {
		t.Fatal(err)
	}
	var out sample.Snapshot
	got, err := ReadFile(&buf, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(taken) || len(out.Procs) != 1 || out.Procs[0] != in.Procs[0] {
		t.Errorf("round trip: %v %+v, want %v %+v", got, out.Procs, taken, in.Procs)
	}
}

// TestFileHostile: a file is another user's input. Not gzip, gzip of
// garbage, a cut-off stream and a decompression bomb are errors that
// wrap ErrMalformed, and the bomb is not decompressed past MaxSize.
func TestFileHostile(t *testing.T) {
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	var good bytes.Buffer
	WriteFile(&good, &sample.Snapshot{Time: time.Unix(1, 0)}, time.Time{})
	bomb := func() []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zeros := make([]byte, 1<<20)
		for range MaxSize>>20 + 2 {
			zw.Write(zeros)
		}
		zw.Close()
		return buf.Bytes()
	}()
	for name, b := range map[string][]byte{
		"empty":    nil,
		"not gzip": []byte("MWSN\x01\x00\x00\x00\x00"),
		"garbage":  gz([]byte("not a snapshot at all")),
		"cut":      good.Bytes()[:good.Len()/2],
		"bomb":     bomb,
	} {
		var s sample.Snapshot
		if _, err := ReadFile(bytes.NewReader(b), &s); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

// countWriter counts the writes it is given.
type countWriter struct {
	n     int
	bytes int
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.n++
	w.bytes += len(p)
	return len(p), nil
}

// TestFileWrites: WriteFile hands a file its bytes in 64 KiB pieces, not
// the compressor's 240-byte ones (a system call each), and files written
// at BestCompression, as memwho did before fileLevel, still read back.
func TestFileWrites(t *testing.T) {
	s := synthetic(3000)
	taken := time.Unix(1795000000, 0)
	var w countWriter
	if err := WriteFile(&w, s, taken); err != nil {
		t.Fatal(err)
	}
	if want := w.bytes/(64<<10) + 1; w.n > want {
		t.Errorf("%d writes for %d bytes, want at most %d", w.n, w.bytes, want)
	}

	var old bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&old, gzip.BestCompression)
	zw.Write(EncodeMeta(nil, s, Meta{Taken: taken}))
	zw.Close()
	var got sample.Snapshot
	when, err := ReadFile(&old, &got)
	if err != nil {
		t.Fatal(err)
	}
	if !when.Equal(taken) {
		t.Errorf("taken %v, want %v", when, taken)
	}
	if d := same(&got, s); d != "" {
		t.Error(d)
	}
}
