package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

// rowsSource writes a header and n rows shaped like history rows, one
// write per row (as PostgreSQL's COPY delivers them).
func rowsSource(n int) Source {
	return func(ctx context.Context, w io.Writer) error {
		if _, err := io.WriteString(w, "time,host,key,pid,pss\n"); err != nil {
			return err
		}
		t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		line := make([]byte, 0, 128)
		for i := range n {
			if i%4096 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			line = t0.Add(time.Duration(i)*time.Second).AppendFormat(line[:0], "2006-01-02T15:04:05.000Z")
			line = append(line, ",host-a,prog-"...)
			line = strconv.AppendInt(line, int64(i%37), 10)
			line = append(line, ',')
			line = strconv.AppendInt(line, int64(1000+i%5000), 10)
			line = append(line, ',')
			line = strconv.AppendUint(line, uint64(i)*4096, 10)
			line = append(line, '\n')
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
		return nil
	}
}

// rawSource writes data in pieces of the given size.
func rawSource(data []byte, piece int) Source {
	return func(ctx context.Context, w io.Writer) error {
		for len(data) > 0 {
			k := min(piece, len(data))
			if _, err := w.Write(data[:k]); err != nil {
				return err
			}
			data = data[k:]
		}
		return nil
	}
}

func run(t *testing.T, opt Options, src Source) []byte {
	t.Helper()
	var buf bytes.Buffer
	st, err := Run(context.Background(), &buf, opt, src)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st.OutBytes != int64(buf.Len()) {
		t.Errorf("Stats.OutBytes = %d, want %d", st.OutBytes, buf.Len())
	}
	return buf.Bytes()
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("gzip.NewReader: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	return out
}

func TestRunPlainAndGzip(t *testing.T) {
	plain := run(t, Options{}, rowsSource(20_000))
	if !bytes.HasPrefix(plain, []byte("time,host,key,pid,pss\n2026-03-01T12:00:00.000Z,host-a,prog-0,1000,0\n")) {
		t.Fatalf("plain output starts %q", plain[:100])
	}
	for _, opt := range []Options{
		{Gzip: true},
		{Gzip: true, Blocks: -1},
		{Gzip: true, Level: 1, BlockSize: 1000, Blocks: 1},
		{Gzip: true, Level: 9},
	} {
		t.Run(fmt.Sprintf("%+v", opt), func(t *testing.T) {
			z := run(t, opt, rowsSource(20_000))
			if got := gunzip(t, z); !bytes.Equal(got, plain) {
				t.Errorf("gunzipped output differs from the plain export (%d vs %d bytes)", len(got), len(plain))
			}
		})
	}
}

// TestRunDeterministic: the same bytes from the source give the same
// compressed bytes, however the source split its writes and whether the
// compressor ran in its own goroutine.
func TestRunDeterministic(t *testing.T) {
	data := run(t, Options{}, rowsSource(30_000))
	want := sha256.Sum256(run(t, Options{Gzip: true}, rawSource(data, len(data))))
	for _, tc := range []struct {
		name  string
		piece int
		opt   Options
	}{
		{"rows again", 0, Options{Gzip: true}},
		{"1-byte writes", 1, Options{Gzip: true}},
		{"odd writes", 4093, Options{Gzip: true}},
		{"synchronous", 100, Options{Gzip: true, Blocks: -1}},
		{"small blocks", 70_000, Options{Gzip: true, BlockSize: 4096, Blocks: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := rawSource(data, tc.piece)
			if tc.piece == 0 {
				src = rowsSource(30_000)
			}
			if got := sha256.Sum256(run(t, tc.opt, src)); got != want {
				t.Errorf("sha256 = %x, want %x", got, want)
			}
		})
	}
}

func TestGzipHeader(t *testing.T) {
	z := run(t, Options{Gzip: true}, rowsSource(10))
	if len(z) < 10 {
		t.Fatalf("output is %d bytes", len(z))
	}
	if got := binary.LittleEndian.Uint32(z[4:8]); got != 0 {
		t.Errorf("MTIME = %d, want 0", got)
	}
	if flg := z[3]; flg != 0 {
		t.Errorf("FLG = %#x, want 0 (no name, comment or extra field)", flg)
	}
}

type failWriter struct {
	after int
	n     int
}

var errDisk = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.after {
		return 0, errDisk
	}
	w.n += len(p)
	return len(p), nil
}

func TestRunErrors(t *testing.T) {
	errDB := errors.New("database went away")
	t.Run("destination fails", func(t *testing.T) {
		for _, opt := range []Options{{}, {Gzip: true}, {Gzip: true, Blocks: -1}} {
			rows := 0
			src := func(ctx context.Context, w io.Writer) error {
				line := make([]byte, 0, 64)
				for {
					line = strconv.AppendInt(line[:0], int64(rows), 10)
					line = append(line, ',')
					line = strconv.AppendUint(line, uint64(rows)*2654435761%1000003, 10)
					line = append(line, '\n')
					rows++
					if _, err := w.Write(line); err != nil {
						return err
					}
					if rows > 10_000_000 {
						return errors.New("the source was never stopped")
					}
				}
			}
			_, err := Run(context.Background(), &failWriter{after: 0}, opt, src)
			if !errors.Is(err, errDisk) {
				t.Errorf("%+v: Run error = %v, want %v", opt, err, errDisk)
			}
		}
	})
	t.Run("source fails", func(t *testing.T) {
		for _, opt := range []Options{{}, {Gzip: true}} {
			src := func(ctx context.Context, w io.Writer) error {
				w.Write([]byte("a,b\n"))
				return errDB
			}
			if _, err := Run(context.Background(), io.Discard, opt, src); !errors.Is(err, errDB) {
				t.Errorf("%+v: Run error = %v, want %v", opt, err, errDB)
			}
		}
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := Run(ctx, io.Discard, Options{Gzip: true}, rowsSource(1_000_000)); !errors.Is(err, context.Canceled) {
			t.Errorf("Run error = %v, want %v", err, context.Canceled)
		}
	})
	t.Run("bad level", func(t *testing.T) {
		if _, err := Run(context.Background(), io.Discard, Options{Gzip: true, Level: 42}, rowsSource(1)); err == nil {
			t.Error("Run with level 42 succeeded")
		}
	})
}

// TestRunMemoryBounded: what Run allocates does not depend on how much
// passes through it. (The benchmark script measures peak RSS of the whole
// command on 25 million rows.)
func TestRunMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 64 MiB")
	}
	block := bytes.Repeat([]byte("2026-03-01T12:00:00.000000Z,host-a,prog-17,1234,56789012\n"), 1000)
	alloc := func(mib int) uint64 {
		total := mib << 20
		src := func(ctx context.Context, w io.Writer) error {
			for n := 0; n < total; n += len(block) {
				if _, err := w.Write(block); err != nil {
					return err
				}
			}
			return nil
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := Run(context.Background(), io.Discard, Options{Gzip: true, Level: 1}, src); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, big := alloc(4), alloc(64)
	t.Logf("allocated %d KiB for 4 MiB, %d KiB for 64 MiB", small>>10, big>>10)
	if big > small+(1<<20) {
		t.Errorf("Run allocated %d KiB for 64 MiB of CSV but %d KiB for 4 MiB: allocation grows with the data", big>>10, small>>10)
	}
}

func BenchmarkRun(b *testing.B) {
	var data bytes.Buffer
	if _, err := Run(context.Background(), &data, Options{}, rowsSource(400_000)); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"plain", Options{}},
		{"gzip-sync", Options{Gzip: true, Blocks: -1}},
		{"gzip-async", Options{Gzip: true}},
		{"gzip1-sync", Options{Gzip: true, Level: 1, Blocks: -1}},
		{"gzip1-async", Options{Gzip: true, Level: 1}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(data.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Run(context.Background(), io.Discard, tc.opt, rawSource(data.Bytes(), 100)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// A source that does work of its own (formatting rows, as the SQLite
	// store does): here the compressor's own goroutine can overlap.
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"rows-plain", Options{}},
		{"rows-gzip-sync", Options{Gzip: true, Blocks: -1}},
		{"rows-gzip-async", Options{Gzip: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(data.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Run(context.Background(), io.Discard, tc.opt, rowsSource(400_000)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
