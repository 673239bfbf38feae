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
	cellRowKind                 // a usage row's kind, checked by store.ParseKind
	cellInt                     // a Go int field (pid, count...): uint64(v), as store.AppendUsageCSV writes it
	cellUint                    // a uint64 field: negative reads as 0, as Samples reads it
)

// Columns of the export queries, in CSV order (store.UsageColumns and
// store.SampleColumns), and how each is written. Only what the CSV holds
// is selected: every column read costs a few calls into SQLite, each
// taking the connection's mutex, which is most of the export's CPU.
const (
	exportUsageCols  = `s.ts, s.host, u.kind, u.key, u.pid, u.start_time, u.count, u.pss, u.private, u.shared, u.swap, u.estimated, u.mem_limit, u.mem_limit_free`
	exportSampleCols = `s.ts, s.host, s.boot_id, s.mem_total, s.mem_free, s.mem_available, s.buffers, s.cached, s.shmem, s.swap_total, s.swap_free, s.hugetlb, s.procs, s.denied`
)

var (
	exportUsageCells = []cellKind{cellTime, cellText, cellRowKind, cellText, cellInt, cellUint, cellInt,
		cellUint, cellUint, cellUint, cellUint, cellInt, cellUint, cellUint}
	exportSampleCells = []cellKind{cellTime, cellText, cellText,
		cellUint, cellUint, cellUint, cellUint, cellUint, cellUint, cellUint, cellUint, cellUint, cellInt, cellInt}
)

// exportQuery returns the SQL of the export of table t for q, its
// arguments and its columns' kinds. The order is that of query (ts,
// host, id, seq), which the indexes deliver without a sort
// (TestQueryPlan).
func exportQuery(q store.Query, t store.Table) (string, []any, []cellKind) {
	w, args := where(q)
	if t == store.TableSamples {
		return `SELECT ` + exportSampleCols + ` FROM samples s` + w + orderSample, args, exportSampleCells
	}
	return `SELECT ` + exportUsageCols + ` FROM samples s JOIN usage u ON u.sample_id = s.id` + w + orderSample + `, u.seq`, args, exportUsageCells
}

// export writes table t of q to w, neutralising text cells when safe.
//
// It reads rows through the driver's own Rows.Next rather than
// database/sql's Scan, whose per-column conversion (reflection, locks)
// cost as much CPU as SQLite itself, and formats each row straight into a
// reused buffer: the time and host of a sample are formatted once for
// all its rows.
func (d *DB) export(ctx context.Context, q store.Query, t store.Table, w io.Writer, safe bool) error {
	if t == store.TableUsage && q.NoRows {
		return errors.New("export: the usage table needs rows (Query.NoRows is set)")
	}
	text, args, cells := exportQuery(q, t)
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		qc, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("driver connection %T cannot query", dc)
		}
		nv := make([]driver.NamedValue, len(args))
		for i, a := range args {
			nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
		}
		rows, err := qc.QueryContext(ctx, text, nv)
		if err != nil {
			return err
		}
		defer rows.Close()
		f := formatter{cells: cells, safe: safe}
		return f.run(ctx, rows, store.AppendHeader(make([]byte, 0, flushAt+4096), t), w)
	})
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return err
		}
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// formatter turns driver rows into CSV lines.
type formatter struct {
	cells []cellKind
	safe  bool
	// The last time and text cells formatted, per column: the rows of a
	// sample repeat its time and host.
	last []lastCell
}

type lastCell struct {
	ok  bool
	ts  int64
	s   string
	out []byte
}

func (f *formatter) run(ctx context.Context, rows driver.Rows, buf []byte, w io.Writer) error {
	vals := make([]driver.Value, len(f.cells))
	f.last = make([]lastCell, len(f.cells))
	for {
		if err := rows.Next(vals); err != nil {
			if err == io.EOF {
				break
			}
			return err
		}
		var err error
		if buf, err = f.appendRow(buf, vals); err != nil {
			return err
		}
		if len(buf) >= flushAt {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	_, err := w.Write(buf)
	return err
}

func (f *formatter) appendRow(dst []byte, vals []driver.Value) ([]byte, error) {
	for i, k := range f.cells {
		if i > 0 {
			dst = append(dst, ',')
		}
		v := vals[i]
		switch k {
		case cellTime:
			ms, err := integer(v, false)
			if err != nil {
				return dst, fmt.Errorf("column %d: %w", i+1, err)
			}
			l := &f.last[i]
			if !l.ok || l.ts != ms {
				l.ok, l.ts = true, ms
				l.out = store.FromMillis(ms).AppendFormat(l.out[:0], store.TimeLayout)
			}
			dst = append(dst, l.out...)
		case cellRowKind:
			s, err := text(v)
			if err != nil {
				return dst, fmt.Errorf("column %d: %w", i+1, err)
			}
			kind, err := store.ParseKind(s)
			if err != nil {
				return dst, err
			}
			dst = append(dst, kind.String()...)
		case cellText:
			s, err := text(v)
			if err != nil {
				return dst, fmt.Errorf("column %d: %w", i+1, err)
			}
			l := &f.last[i]
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
	return append(dst, '\n'), nil
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
