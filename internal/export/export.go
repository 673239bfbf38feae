// Package export streams history rows out of a database as CSV, optionally
// gzip-compressed, with memory that does not grow with the number of rows.
//
// # Shape of the pipeline
//
// A [Source] writes the CSV bytes (header first) to an [io.Writer]: in
// memwho it is [History]: the SQLite store formats rows one at a time,
// neutralising text cells as it goes; PostgreSQL's COPY ... TO STDOUT
// writes into a [CellWriter], so that no row objects exist at all. [Run]
// sits between the source and the destination:
//
//	source ──► blocks of BlockSize bytes ──► gzip (own goroutine) ──► bufio ──► dst
//
// The source fills fixed-size blocks taken from a small free list; full
// blocks travel over a bounded channel to a goroutine that compresses
// them, so reading the database and compressing overlap on two cores.
// Peak memory is (Blocks + 1) × BlockSize plus the compressor's state and
// the output buffer, whatever the row count.
//
// # Determinism
//
// The same bytes from the source give the same output, byte for byte: the
// gzip header carries no name and no modification time (MTIME 0), the
// compressor sees the same byte stream however the source split its
// writes. Row order, column order and the formatting of values are the
// source's job (package store fixes them).
//
// # Restarting
//
// Run keeps no state between calls, and a Source must produce the same
// bytes each time it is called, so an upload that failed halfway can call
// Run again on a new destination (see package upload/sftp).
//
// The pipeline (Run) does not open databases or files and knows nothing
// of the schema. The rest of the package is memwho export's plumbing
// around it: History makes a Source of a history database, ToFile and
// PrepareUpload (SFTP, an optional part: see upload_absent.go) are the
// destinations.

package export

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/memwho/memwho/internal/progress"
)

// Source writes the export, header line first, to w. It must write the
// same bytes every time it is called on the same data, because a failed
// upload restarts the export from scratch. It must stop and return an
// error when a write to w fails or ctx is done.
type Source func(ctx context.Context, w io.Writer) error

// Options says how Run encodes the stream. The zero value writes plain
// CSV through a 256 KiB output buffer.
type Options struct {
	// Gzip compresses the output with gzip (klauspost/compress).
	Gzip bool
	// Level is the gzip compression level, 1 (fastest) to 9 (smallest);
	// 0 means DefaultLevel.
	Level int
	// BlockSize is the size in bytes of the blocks handed from the source
	// to the compressor; 0 means DefaultBlockSize.
	BlockSize int
	// Blocks is how many filled blocks may wait for the compressor; 0
	// means DefaultBlocks. With Blocks < 0 the source and the compressor
	// run in the caller's goroutine, one after the other (for comparison
	// in benchmarks).
	Blocks int
	// Progress, when not nil, counts the CSV's rows (its lines but the
	// header) as they pass; it starts again from 0 when Run does (an
	// upload's retry).
	Progress *progress.Meter
}

// Defaults for Options.
const (
	// DefaultLevel is gzip level 6: klauspost/compress compresses our CSV
	// at about 110 MB/s per core at this level, faster than PostgreSQL
	// produces it, at a third of its size.
	DefaultLevel = 6
	// DefaultBlockSize is 256 KiB: large enough that channel hand-offs
	// cost nothing next to compression, small enough that a few of them
	// stay well under the 64 MiB budget.
	DefaultBlockSize = 256 << 10
	// DefaultBlocks is how many filled blocks may queue for the
	// compressor.
	DefaultBlocks = 4
	// outputBufferSize is the buffer in bytes between the compressor (or
	// the source, uncompressed) and the destination.
	outputBufferSize = 256 << 10
)

// Stats counts what one Run moved.
type Stats struct {
	// CSVBytes is the number of bytes the source wrote (uncompressed).
	CSVBytes int64
	// OutBytes is the number of bytes written to the destination.
	OutBytes int64
}

// Run calls src and writes what it produces to dst, compressed when
// opt.Gzip is set. It returns when src has returned and everything has
// been written to dst (it does not close dst), or at the first error. On
// error the output is incomplete and the caller must discard it.
func Run(ctx context.Context, dst io.Writer, opt Options, src Source) (Stats, error) {
	if opt.Level == 0 {
		opt.Level = DefaultLevel
	}
	if opt.BlockSize <= 0 {
		opt.BlockSize = DefaultBlockSize
	}
	if opt.Blocks == 0 {
		opt.Blocks = DefaultBlocks
	}
	opt.Progress.Set(-1) // the header is no row
	cw := &countWriter{w: dst}
	out := bufio.NewWriterSize(cw, outputBufferSize)
	var sink io.Writer = out
	var zw *gzip.Writer
	if opt.Gzip {
		var err error
		if zw, err = gzip.NewWriterLevel(out, opt.Level); err != nil {
			return Stats{}, fmt.Errorf("gzip level %d: %w", opt.Level, err)
		}
		// No file name and MTIME 0 ("no time stamp", RFC 1952): the
		// same data must give the same bytes. klauspost's writer would
		// otherwise store the zero time.Time as a nonsense timestamp.
		zw.Name = ""
		zw.ModTime = time.Unix(0, 0)
		sink = zw
	}

	var st Stats
	var err error
	if opt.Blocks < 0 || !opt.Gzip {
		// Without compression there is nothing worth a second goroutine:
		// the output buffer alone batches the source's small writes.
		sw := &countWriter{w: sink, lines: opt.Progress}
		err = src(ctx, sw)
		st.CSVBytes = sw.n
	} else {
		st.CSVBytes, err = runAsync(ctx, &countWriter{w: sink, lines: opt.Progress}, opt, src)
	}
	if err == nil && zw != nil {
		err = zw.Close()
	}
	if err == nil {
		err = out.Flush()
	}
	st.OutBytes = cw.n
	return st, err
}

// runAsync runs src in the calling goroutine and copies its output to
// sink in another, through a bounded queue of reusable blocks.
func runAsync(ctx context.Context, sink io.Writer, opt Options, src Source) (int64, error) {
	free := make(chan []byte, opt.Blocks+1)
	for range opt.Blocks + 1 {
		free <- make([]byte, 0, opt.BlockSize)
	}
	full := make(chan []byte, opt.Blocks)
	done := make(chan error, 1)
	stop := make(chan struct{}) // closed when the consumer fails
	go func() {
		var err error
		for b := range full {
			if err == nil {
				if _, err = sink.Write(b); err != nil {
					close(stop)
				}
			}
			free <- b[:0]
		}
		done <- err
	}()

	bw := &blockWriter{ctx: ctx, free: free, full: full, stop: stop}
	err := src(ctx, bw)
	if err == nil {
		err = bw.flush()
	}
	close(full)
	cerr := <-done
	if cerr != nil {
		// The consumer's error is the cause; the source only saw
		// errStopped.
		return bw.n, cerr
	}
	if err == nil {
		err = ctx.Err()
	}
	return bw.n, err
}

// errStopped is what the source's writes return once the consumer has
// failed; Run reports the consumer's error instead.
var errStopped = errors.New("export: output failed")

// blockWriter cuts the source's writes into blocks for the compressor.
type blockWriter struct {
	ctx        context.Context
	free, full chan []byte
	stop       chan struct{}
	cur        []byte
	n          int64
}

func (w *blockWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if w.cur == nil {
			// Stop at once when the consumer has failed: without this
			// check the select below picks a free block half the time.
			select {
			case <-w.stop:
				return written, errStopped
			default:
			}
			select {
			case w.cur = <-w.free:
			case <-w.stop:
				return written, errStopped
			case <-w.ctx.Done():
				return written, w.ctx.Err()
			}
		}
		k := copy(w.cur[len(w.cur):cap(w.cur)], p)
		w.cur = w.cur[:len(w.cur)+k]
		p = p[k:]
		written += k
		w.n += int64(k)
		if len(w.cur) == cap(w.cur) {
			if err := w.flush(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// flush hands the current block, if any, to the compressor.
func (w *blockWriter) flush() error {
	if len(w.cur) == 0 {
		return nil
	}
	select {
	case w.full <- w.cur:
		w.cur = nil
		return nil
	case <-w.stop:
		return errStopped
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
}

// countWriter counts the bytes written through it, and the lines when
// lines is set.
type countWriter struct {
	w     io.Writer
	n     int64
	lines *progress.Meter
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if c.lines != nil {
		c.lines.Add(int64(bytes.Count(p[:n], newline)))
	}
	return n, err
}

var newline = []byte{'\n'}
