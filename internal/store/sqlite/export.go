package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/memwho/memwho/internal/store"
)

// flushAt is the size in bytes at which the export hands its buffer to w.
const flushAt = 64 << 10

// ExportCSV streams table t of the samples matching q to w as CSV, text
// cells quoted but not neutralised (see ExportSafeCSV).
func (d *DB) ExportCSV(ctx context.Context, q store.Query, t store.Table, w io.Writer) error {
	return d.export(ctx, q, t, w, false)
}

// ExportSafeCSV streams table t of the samples matching q to w as CSV
// with its text cells neutralised (store.AppendSafeField) while the rows
// are formatted: the same bytes as ExportCSV through export.CellWriter,
// without parsing the CSV a second time.
func (d *DB) ExportSafeCSV(ctx context.Context, q store.Query, t store.Table, w io.Writer) error {
	return d.export(ctx, q, t, w, true)
}

var _ store.SafeExporter = (*DB)(nil)

// cellKind says how the export writes one column of its query.
type cellKind uint8

const (
	cellTime    cellKind = iota // Unix milliseconds, as store.TimeLayout
	cellText                    // text, quoted (and neutralised when safe)
	cellRowKind                 // a usage row's kind, as a store.Kind number
	cellInt                     // a Go int field (pid, count...): uint64(v), as store.AppendUsageCSV writes it
	cellUint                    // a uint64 field: negative reads as 0, as Samples reads it
)

// What the export queries select, in CSV order (store.UsageColumns and
// store.SampleColumns), and how each column is written. Only what the CSV
// holds is selected: every column read costs a few calls into SQLite,
// each taking the connection's mutex, and those calls are most of the
// export's CPU.
const (
	exportSampleCols = `s.ts, s.host, s.boot_id, s.mem_total, s.mem_free, s.mem_available, s.buffers, s.cached, s.shmem, s.swap_total, s.swap_free, s.hugetlb, s.procs, s.denied`
	// The usage table is read per sample: its time and host once, then
	// its rows by primary key (in seq order, no sort), without the two
	// repeated columns and without a join per row.
	exportSampleHead = `s.id, s.ts, s.host`
	exportRowCols    = `key, pid, start_time, count, pss, private, shared, swap, estimated, mem_limit, mem_limit_free`
)

var (
	exportSampleCells = []cellKind{cellTime, cellText, cellText,
		cellUint, cellUint, cellUint, cellUint, cellUint, cellUint, cellUint, cellUint, cellUint, cellInt, cellInt}
	exportHeadCells = []cellKind{cellTime, cellText}
	exportRowCells  = []cellKind{cellRowKind, cellText, cellInt, cellUint, cellInt,
		cellUint, cellUint, cellUint, cellUint, cellInt, cellUint, cellUint}
)

// exportQueries returns the SQL of the export of table t for q and its
// arguments: for TableSamples one query; for TableUsage the query of the
// samples (id, ts, host) and that of one sample's rows (its argument: the
// sample id). The order is that of query (ts, host, id, seq), which the
// indexes deliver without a sort (TestQueryPlan).
func exportQueries(q store.Query, t store.Table) (samples string, args []any, rows string) {
	w, args := where(q)
	if t == store.TableSamples {
		return `SELECT ` + exportSampleCols + ` FROM samples s` + w + orderSample, args, ""
	}
	// The kind as a number: an integer column costs fewer calls than a
	// text one, and no string.
	kind := `CASE kind`
	for k := store.Kind(0); k.String() != "unknown"; k++ {
		kind += fmt.Sprintf(` WHEN '%s' THEN %d`, k, k)
	}
	kind += ` END`
	return `SELECT ` + exportSampleHead + ` FROM samples s` + w + orderSample, args,
		`SELECT ` + kind + `, ` + exportRowCols + ` FROM usage WHERE sample_id = ? ORDER BY seq`
}

// export writes table t of q to w, neutralising text cells when safe.
//
// It reads rows through the driver's own Rows.Next rather than
// database/sql's Scan, whose per-column conversion (reflection, locks)
// cost as much CPU as SQLite itself, and formats each row straight into a
// reused buffer. The usage rows' statement runs while the samples' one is
// open, on the same connection: both read the same snapshot.
func (d *DB) export(ctx context.Context, q store.Query, t store.Table, w io.Writer, safe bool) error {
	if t == store.TableUsage && q.NoRows {
		return errors.New("export: the usage table needs rows (Query.NoRows is set)")
	}
	text, args, rowsText := exportQueries(q, t)
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		qc, ok1 := dc.(driver.QueryerContext)
		pc, ok2 := dc.(driver.ConnPrepareContext)
		if !ok1 || !ok2 {
			return fmt.Errorf("driver connection %T cannot query", dc)
		}
		nv := make([]driver.NamedValue, len(args))
		for i, a := range args {
			nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
		}
		f := &formatter{ctx: ctx, w: w, safe: safe, buf: store.AppendHeader(make([]byte, 0, flushAt+4096), t)}
		rows, err := qc.QueryContext(ctx, text, nv)
		if err != nil {
			return err
		}
		defer rows.Close()
		if t == store.TableSamples {
			err = f.samples(rows)
		} else {
			err = f.usage(rows, pc, rowsText)
		}
		if err != nil {
			return err
		}
		_, err = w.Write(f.buf)
		return err
	})
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return err
		}
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// formatter turns driver rows into CSV lines in buf and hands buf to w
// when it holds flushAt bytes.
type formatter struct {
	ctx  context.Context
	w    io.Writer
	safe bool
	buf  []byte
}

// lastCell caches the CSV form of a column's last value: the same time,
// host or boot id comes back line after line, and comparing is cheaper
// than formatting again.
type lastCell struct {
	ok  bool
	ts  int64
	s   string
	out []byte
}

// flush hands buf to w once it is full.
func (f *formatter) flush() error {
	if len(f.buf) < flushAt {
		return nil
	}
	if _, err := f.w.Write(f.buf); err != nil {
		return err
	}
	f.buf = f.buf[:0]
	return f.ctx.Err()
}

// samples writes the lines of the samples table.
func (f *formatter) samples(rows driver.Rows) error {
	vals := make([]driver.Value, len(exportSampleCells))
	last := make([]lastCell, len(vals))
	for {
		if err := rows.Next(vals); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		var err error
		if f.buf, err = f.appendCells(f.buf, exportSampleCells, vals, last); err != nil {
			return err
		}
		f.buf = append(f.buf, '\n')
		if err := f.flush(); err != nil {
			return err
		}
	}
}

// usage writes the lines of the usage table: for each sample of samples,
// its time and host then each of its rows, read by the statement
// rowsText.
//
// Reading (SQLite, most of the CPU) and formatting overlap: a goroutine
// reads rows into batches of driver values, this one formats them and
// writes, so that on two cores the formatting (and, with --gzip, the
// compressor's goroutine) no longer waits for SQLite. The values the
// driver returns are copies (strings, boxed integers), safe to keep after
// the next Next. The connection is only ever used by the reading
// goroutine, which has ended when usage returns.
func (f *formatter) usage(samples driver.Rows, pc driver.ConnPrepareContext, rowsText string) error {
	st, err := pc.PrepareContext(f.ctx, rowsText)
	if err != nil {
		return err
	}
	defer st.Close()
	sq, ok := st.(driver.StmtQueryContext)
	if !ok {
		return fmt.Errorf("driver statement %T cannot query", st)
	}
	free := make(chan *batch, batches)
	for range batches {
		free <- &batch{vals: make([]driver.Value, batchRows*len(exportRowCells)), head: make([]int32, batchRows)}
	}
	full := make(chan *batch, batches)
	stop := make(chan struct{})
	rerr := make(chan error, 1)
	go func() {
		defer close(full)
		rerr <- readUsage(f.ctx, samples, sq, free, full, stop)
	}()
	werr := f.formatUsage(full, free)
	if werr != nil {
		close(stop)
		for range full {
		}
	}
	err = <-rerr
	if werr != nil {
		return werr
	}
	return err
}

// Batches between the reading goroutine and the formatting one: batches
// of batchRows rows each, about 40 bytes a value (an interface and a
// short string or an integer): under 1 MiB in all.
const (
	batches   = 4
	batchRows = 512
)

// batch is up to batchRows usage rows with the time and host of their
// samples.
type batch struct {
	vals  []driver.Value // n rows of len(exportRowCells) values
	n     int
	head  []int32        // per row, its sample: heads[2*head[i]:][:2]
	heads []driver.Value // ts, host of each sample of the batch
	ids   []int64        // id of each sample of the batch
}

// readUsage reads the samples and their rows into batches, sent on full,
// until the end, an error, or stop.
func readUsage(ctx context.Context, samples driver.Rows, sq driver.StmtQueryContext, free chan *batch, full chan<- *batch, stop <-chan struct{}) error {
	var b *batch
	get := func() bool {
		select {
		case b = <-free:
			b.n, b.heads, b.ids = 0, b.heads[:0], b.ids[:0]
			return true
		case <-stop:
			return false
		}
	}
	put := func() bool {
		select {
		case full <- b:
			b = nil
			return true
		case <-stop:
			return false
		}
	}
	if !get() {
		return nil
	}
	cols := len(exportRowCells)
	head := make([]driver.Value, 3)
	arg := []driver.NamedValue{{Ordinal: 1}}
	for {
		if err := samples.Next(head); err != nil {
			if err == io.EOF {
				put()
				return nil
			}
			return err
		}
		id, err := integer(head[0], false)
		if err != nil {
			return fmt.Errorf("sample id: %w", err)
		}
		h := int32(len(b.ids))
		b.ids, b.heads = append(b.ids, id), append(b.heads, head[1], head[2])
		arg[0].Value = id
		rows, err := sq.QueryContext(ctx, arg)
		if err != nil {
			return err
		}
		for {
			if b.n == batchRows {
				if !put() || !get() {
					rows.Close()
					return nil
				}
				h = 0
				b.ids, b.heads = append(b.ids, id), append(b.heads, head[1], head[2])
			}
			if err = rows.Next(b.vals[b.n*cols : (b.n+1)*cols]); err != nil {
				break
			}
			b.head[b.n] = h
			b.n++
		}
		if cerr := rows.Close(); err == io.EOF {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}

// formatUsage writes the lines of the batches of full and gives each
// batch back on free.
func (f *formatter) formatUsage(full <-chan *batch, free chan<- *batch) error {
	cols := len(exportRowCells)
	headLast := make([]lastCell, 2)
	last := make([]lastCell, cols)
	var prefix []byte
	for b := range full {
		h := int32(-1)
		for i := range b.n {
			var err error
			if b.head[i] != h {
				h = b.head[i]
				if prefix, err = f.appendCells(prefix[:0], exportHeadCells, b.heads[2*h:2*h+2], headLast); err != nil {
					return fmt.Errorf("sample %d: %w", b.ids[h], err)
				}
				prefix = append(prefix, ',')
			}
			f.buf = append(f.buf, prefix...)
			if f.buf, err = f.appendCells(f.buf, exportRowCells, b.vals[i*cols:(i+1)*cols], last); err != nil {
				return fmt.Errorf("sample %d: %w", b.ids[h], err)
			}
			f.buf = append(f.buf, '\n')
			if err := f.flush(); err != nil {
				return err
			}
		}
		free <- b
	}
	return nil
}

// appendCells appends vals, written as cells says, separated by commas.
// last caches each column's last text or time.
func (f *formatter) appendCells(dst []byte, cells []cellKind, vals []driver.Value, last []lastCell) ([]byte, error) {
	for i, k := range cells {
		if i > 0 {
			dst = append(dst, ',')
		}
		v := vals[i]
		switch k {
		case cellTime:
			ms, err := integer(v, false)
			if err != nil {
				return dst, fmt.Errorf("time: %w", err)
			}
			l := &last[i]
			if !l.ok || l.ts != ms {
				l.ok, l.ts = true, ms
				l.out = store.FromMillis(ms).AppendFormat(l.out[:0], store.TimeLayout)
			}
			dst = append(dst, l.out...)
		case cellRowKind:
			n, ok := v.(int64)
			kind := store.Kind(n)
			if !ok || n < 0 || kind.String() == "unknown" {
				return dst, errors.New("unknown row kind")
			}
			dst = append(dst, kind.String()...)
		case cellText:
			s, err := text(v)
			if err != nil {
				return dst, fmt.Errorf("column %d: %w", i+1, err)
			}
			l := &last[i]
			if !l.ok || l.s != s {
				l.ok, l.s = true, s
				if f.safe {
					l.out = store.AppendSafeField(l.out[:0], s)
				} else {
					l.out = store.AppendCSVField(l.out[:0], s)
				}
			}
			dst = append(dst, l.out...)
		case cellInt, cellUint:
			n, err := integer(v, true)
			if err != nil {
				return dst, fmt.Errorf("column %d: %w", i+1, err)
			}
			if k == cellUint && n < 0 {
				n = 0
			}
			dst = strconv.AppendUint(dst, uint64(n), 10)
		}
	}
	return dst, nil
}

// integer converts a driver value of an integer column as database/sql's
// Scan into an int64 would (a NULL reads as 0 when null is allowed, as a
// sql.NullInt64 would).
func integer(v driver.Value, null bool) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case nil:
		if null {
			return 0, nil
		}
		return 0, errors.New("NULL where an integer was expected")
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
			return int64(v), nil
		}
	}
	s, err := text(v)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	return n, nil
}

// text converts a driver value of a text column as database/sql's Scan
// into a string would (a NULL reads as "", as a sql.NullString would).
func text(v driver.Value) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case nil:
		return "", nil
	}
	return "", fmt.Errorf("unexpected value of type %T", v)
}
