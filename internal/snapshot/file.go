package snapshot

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

// A snapshot file (memwho snapshot -o FILE) is one message, as the agent
// sends it, compressed with gzip: version and sections as in
// docs/snapshot.md, so that a newer memwho reads older files and an older
// memwho refuses newer ones with ErrVersion.

// fileLevel is the gzip level of snapshot files. The compression runs
// after the walk, on one core, while the user waits: at 3000 processes
// gzip.BestCompression took 4.9 ms and BestSpeed 0.7-1.4 ms, for a file
// 0-13% larger (docs/snapshot.md), and far under issue 14's 1 MiB either
// way. Any level reads back the same.
const fileLevel = gzip.BestSpeed

// WriteFile writes s, taken at taken, as a snapshot file to w.
func WriteFile(w io.Writer, s *sample.Snapshot, taken time.Time) error {
	msg := EncodeMeta(nil, s, Meta{Taken: taken})
	// The compressor hands out its output 240 bytes at a time: a write
	// system call each to a file, 250 for a 60 KB snapshot, without the
	// buffer.
	bw := bufio.NewWriterSize(w, 64<<10)
	zw, err := gzip.NewWriterLevel(bw, fileLevel)
	if err != nil {
		return err
	}
	if _, err := zw.Write(msg); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// ReadFile reads a snapshot file from r into s and returns when its
// figures were taken. The file is another user's input: it is
// decompressed to at most MaxSize bytes, and decoded as a socket answer
// is (Decode's checks).
func ReadFile(r io.Reader, s *sample.Snapshot) (time.Time, error) {
	zr, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: not a gzip stream: %v", ErrMalformed, err)
	}
	msg, err := io.ReadAll(io.LimitReader(zr, MaxSize+1))
	if err != nil {
		if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) {
			return time.Time{}, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		return time.Time{}, err
	}
	if len(msg) > MaxSize {
		return time.Time{}, fmt.Errorf("%w: more than %d bytes once decompressed", ErrMalformed, MaxSize)
	}
	m, err := DecodeMeta(msg, s)
	if err != nil {
		return time.Time{}, err
	}
	if m.Taken.IsZero() {
		return s.Time, nil
	}
	return m.Taken, nil
}
