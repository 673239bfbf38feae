//go:build !nopostgres

package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/memwho/memwho/internal/store"
)

func i64(n uint64) int64 {
	if n > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

func u64(n int64) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}

// where builds the WHERE clause of q over samples s, with literal values
// (COPY takes no parameters). Hosts are quoted as SQL string literals.
func where(q store.Query) string {
	since, until := int64(math.MinInt64), int64(math.MaxInt64)
	if !q.Since.IsZero() {
		since = store.Millis(q.Since)
	}
	if !q.Until.IsZero() {
		until = store.Millis(q.Until)
	}
	w := ` WHERE s.ts >= ` + strconv.FormatInt(since, 10) + ` AND s.ts < ` + strconv.FormatInt(until, 10)
	if q.Host != "" {
		w += ` AND s.host = ` + quoteLiteral(q.Host)
	}
	return w
}

// quoteLiteral quotes s as a standard SQL string literal. memwho's
// connections run with standard_conforming_strings on (set in
// ExportCSV), so a backslash is an ordinary character. Text PostgreSQL
// refuses (invalid UTF-8, NUL) is cleaned first: no stored host holds it,
// so it matches nothing instead of failing the query.
func quoteLiteral(s string) string {
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		s = store.CleanKey(s)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

const (
	sampleCols = `s.id, s.ts, s.host, s.boot_id, s.mem_total, s.mem_free, s.mem_available, s.buffers, s.cached, s.shmem, s.swap_total, s.swap_free, s.hugetlb, s.procs, s.denied`
	rowCols    = `s.kind, s.key, s.pid, s.start_time, s.count, s.pss, s.private, s.shared, s.swap, s.estimated, s.mem_limit, s.mem_limit_free`
	// growthCols are the arrays a growth ranking reads (store.Query.Growth):
	// the server's cost is sending arrays, element by element.
	growthCols = `s.kind, s.key, s.pid, s.start_time, s.count, s.pss, s.swap, s.mem_limit, s.mem_limit_free`
	// order is the export order; the index samples_ts_host gives it
	// without a sort.
	order = ` ORDER BY s.ts, s.host COLLATE "C", s.id`
	// csvTime formats Unix milliseconds as store.TimeLayout, in SQL.
	csvTime = `to_char(timestamp 'epoch' + s.ts * interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS time`
)

// SamplesSQL returns the query Samples runs for q, with extra added to
// its WHERE clause.
func SamplesSQL(q store.Query, extra string) string {
	cols := sampleCols
	switch {
	case q.NoRows:
	case q.Growth:
		cols += `, ` + growthCols
	default:
		cols += `, ` + rowCols
	}
	return `SELECT ` + cols + ` FROM samples s` + where(q) + extra + order
}

// growthReaders is how many connections read a fleet's samples at once
// for a growth ranking: the server spends most of the time sending the
// arrays (an element at a time), on one core per connection.
const growthReaders = 2

// Samples calls fn for each sample matching q, in export order, rows in
// seq order. It reads the server's binary results straight from the
// connection (pgconn): a sample is one result row whose arrays are
// decoded into the reused Rows, with no per-value reflection; keys are
// interned, so that a reader of a fleet's hour (24 million rows) does not
// allocate a string per row.
//
// With q.Growth and no host, the hosts are split over growthReaders
// connections (by a hash of the name), each read in time order; fn is
// called under a lock.
func (d *DB) Samples(ctx context.Context, q store.Query, fn func(s *store.Sample) error) error {
	if !q.Growth || q.NoRows || q.Host != "" {
		return d.samples(ctx, q, "", fn)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs = make([]error, growthReaders)
	)
	for k := range growthReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			extra := fmt.Sprintf(` AND hashtext(s.host) & %d = %d`, growthReaders-1, k)
			errs[k] = d.samples(ctx, q, extra, func(s *store.Sample) error {
				mu.Lock()
				defer mu.Unlock()
				return fn(s)
			})
			if errs[k] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	// The first error that is not another reader's cancellation.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errors.Join(errs...)
}

func (d *DB) samples(ctx context.Context, q store.Query, extra string, fn func(s *store.Sample) error) error {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	defer conn.Release()
	rr := conn.Conn().PgConn().ExecParams(ctx, SamplesSQL(q, extra), nil, nil, nil, []int16{1})
	var (
		cur store.Sample
		dec decoder
	)
	want := 15
	switch {
	case q.NoRows:
	case q.Growth:
		want += 9
		dec.growth = true
	default:
		want += 12
	}
	for rr.NextRow() {
		v := rr.Values()
		if len(v) != want {
			rr.Close()
			return fmt.Errorf("read samples: %d columns, want %d", len(v), want)
		}
		if err := dec.sample(&cur, v); err != nil {
			rr.Close()
			return fmt.Errorf("read samples: %w", err)
		}
		if err := fn(&cur); err != nil {
			rr.Close()
			return err
		}
	}
	if _, err := rr.Close(); err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	return nil
}

// decoder turns binary result values into samples, reusing its arrays.
type decoder struct {
	growth                                          bool // the columns of store.Query.Growth
	kind                                            []int16
	key                                             []string
	pid, count, estimated                           []int32
	start, pss, private, shared, swap, lim, limFree []int64
	intern                                          map[string]string
	// keys are each host's keys of its last sample: the next sample of
	// the host mostly has the same keys at the same places, compared
	// instead of looked up.
	keys map[string][]string
}

// maxInterned bounds the interned keys of one read.
const maxInterned = 1 << 17

func (d *decoder) sample(s *store.Sample, v [][]byte) error {
	var err error
	num := func(b []byte) int64 {
		switch len(b) {
		case 8:
			return int64(binary.BigEndian.Uint64(b))
		case 4:
			return int64(int32(binary.BigEndian.Uint32(b)))
		}
		if err == nil {
			err = fmt.Errorf("a number of %d bytes", len(b))
		}
		return 0
	}
	s.ID, s.Time = num(v[0]), store.FromMillis(num(v[1]))
	s.Host, s.BootID = d.str(v[2]), d.str(v[3])
	m := &s.Meminfo
	m.MemTotal, m.MemFree, m.MemAvailable, m.Buffers, m.Cached = u64(num(v[4])), u64(num(v[5])), u64(num(v[6])), u64(num(v[7])), u64(num(v[8]))
	m.Shmem, m.SwapTotal, m.SwapFree, m.Hugetlb = u64(num(v[9])), u64(num(v[10])), u64(num(v[11])), u64(num(v[12]))
	s.Procs, s.Denied = int(num(v[13])), int(num(v[14]))
	s.Rows = s.Rows[:0]
	if err != nil || len(v) == 15 {
		return err
	}
	a := v[15:]
	if d.kind, err = int16s(a[0], d.kind[:0]); err != nil {
		return err
	}
	n := len(d.kind)
	prev := d.keys[s.Host]
	if d.key, err = d.texts(a[1], d.key[:0], prev); err == nil {
		d.pid, err = int32s(a[2], d.pid[:0])
	}
	if err == nil {
		d.start, err = int64s(a[3], d.start[:0])
	}
	if err == nil {
		d.count, err = int32s(a[4], d.count[:0])
	}
	arrays := []*[]int64{&d.pss, &d.private, &d.shared, &d.swap}
	if d.growth {
		arrays = []*[]int64{&d.pss, &d.swap}
	}
	for i, dst := range arrays {
		if err == nil {
			*dst, err = int64s(a[5+i], (*dst)[:0])
		}
	}
	rest := a[5+len(arrays):]
	if d.growth {
		d.private, d.shared, d.estimated = zeros(d.private, n), zeros(d.shared, n), zeros32(d.estimated, n)
	} else if err == nil {
		d.estimated, err = int32s(rest[0], d.estimated[:0])
		rest = rest[1:]
	}
	if err == nil {
		d.lim, err = int64s(rest[0], d.lim[:0])
	}
	if err == nil {
		d.limFree, err = int64s(rest[1], d.limFree[:0])
	}
	if err != nil {
		return fmt.Errorf("sample %d: %w", s.ID, err)
	}
	for _, l := range []int{len(d.key), len(d.pid), len(d.start), len(d.count), len(d.pss), len(d.private), len(d.shared), len(d.swap), len(d.estimated), len(d.lim), len(d.limFree)} {
		if l != n {
			return fmt.Errorf("sample %d: arrays of %d and %d rows", s.ID, n, l)
		}
	}
	if d.keys == nil {
		d.keys = map[string][]string{}
	}
	d.keys[s.Host] = append(prev[:0], d.key...)
	s.Rows = growRows(s.Rows, n)
	for i := range n {
		k := d.kind[i]
		if k < 0 || int(k) > int(store.KindContainer) {
			return fmt.Errorf("sample %d: unknown row kind %d", s.ID, k)
		}
		s.Rows[i] = store.Row{Kind: store.Kind(k), Key: d.key[i], PID: int(d.pid[i]), StartTime: u64(d.start[i]), Count: int(d.count[i]),
			PSS: u64(d.pss[i]), Private: u64(d.private[i]), Shared: u64(d.shared[i]), Swap: u64(d.swap[i]),
			Estimated: int(d.estimated[i]), MemLimit: u64(d.lim[i]), MemLimitFree: u64(d.limFree[i])}
	}
	return nil
}

func growRows(r []store.Row, n int) []store.Row {
	if cap(r) < n {
		return make([]store.Row, n, n+n/8)
	}
	return r[:n]
}

// str returns b as an interned string.
func (d *decoder) str(b []byte) string {
	if s, ok := d.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if d.intern == nil {
		d.intern = map[string]string{}
	}
	if len(d.intern) < maxInterned {
		d.intern[s] = s
	}
	return s
}

// arrayHeader checks a one-dimensional binary array without NULLs (or an
// empty one) and returns its element count and the elements' bytes.
func arrayHeader(b []byte) (int, []byte, error) {
	if len(b) < 12 {
		return 0, nil, errors.New("short array")
	}
	ndim := binary.BigEndian.Uint32(b)
	if ndim == 0 {
		return 0, nil, nil
	}
	if ndim != 1 || len(b) < 20 {
		return 0, nil, fmt.Errorf("array of %d dimensions", ndim)
	}
	if binary.BigEndian.Uint32(b[4:]) != 0 {
		return 0, nil, errors.New("array with NULLs")
	}
	n := int(int32(binary.BigEndian.Uint32(b[12:])))
	if n < 0 || n > len(b) {
		return 0, nil, errors.New("bad array length")
	}
	return n, b[20:], nil
}

// elem cuts one element off b: its bytes and the rest.
func elem(b []byte, size int) ([]byte, []byte, error) {
	if len(b) < 4 {
		return nil, nil, errors.New("array cut short")
	}
	l := int(int32(binary.BigEndian.Uint32(b)))
	if l < 0 || l > len(b)-4 || (size > 0 && l != size) {
		return nil, nil, errors.New("bad array element")
	}
	return b[4 : 4+l], b[4+l:], nil
}

// ints decodes an array of integers of size bytes (2, 4 or 8) into dst.
func ints[T int16 | int32 | int64](b []byte, dst []T, size int) ([]T, error) {
	n, b, err := arrayHeader(b)
	for i := 0; i < n && err == nil; i++ {
		var e []byte
		if e, b, err = elem(b, size); err != nil {
			break
		}
		switch size {
		case 2:
			dst = append(dst, T(int16(binary.BigEndian.Uint16(e))))
		case 4:
			dst = append(dst, T(int32(binary.BigEndian.Uint32(e))))
		default:
			dst = append(dst, T(int64(binary.BigEndian.Uint64(e))))
		}
	}
	return dst, err
}

func int64s(b []byte, dst []int64) ([]int64, error) { return ints(b, dst, 8) }
func int32s(b []byte, dst []int32) ([]int32, error) { return ints(b, dst, 4) }
func int16s(b []byte, dst []int16) ([]int16, error) { return ints(b, dst, 2) }

// texts decodes a text array; an element equal to prev's at the same
// place is prev's string.
func (d *decoder) texts(b []byte, dst, prev []string) ([]string, error) {
	n, b, err := arrayHeader(b)
	for i := 0; i < n && err == nil; i++ {
		var e []byte
		if e, b, err = elem(b, 0); err == nil {
			if i < len(prev) && prev[i] == string(e) {
				dst = append(dst, prev[i])
			} else {
				dst = append(dst, d.str(e))
			}
		}
	}
	return dst, err
}

func zeros(s []int64, n int) []int64 {
	s = s[:0]
	for range n {
		s = append(s, 0)
	}
	return s
}

func zeros32(s []int32, n int) []int32 {
	s = s[:0]
	for range n {
		s = append(s, 0)
	}
	return s
}

// Count returns how many samples and usage rows q selects (one indexed
// pass over table samples, no arrays read): what a progress line counts
// towards.
func (d *DB) Count(ctx context.Context, q store.Query) (samples, rows int64, err error) {
	err = d.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(s.nrows), 0) FROM samples s`+where(q)).Scan(&samples, &rows)
	if err != nil {
		return 0, 0, fmt.Errorf("count samples: %w", err)
	}
	return samples, rows, nil
}

// ExportSQL returns the COPY statement ExportCSV runs for q and t: the
// same columns, quoting and order as the SQLite store's export. A
// sample's arrays become its rows with unnest ... WITH ORDINALITY, in
// their order: the server sorts nothing but each sample's rows by seq
// (an incremental sort on the index order, checked by TestExportPlan).
func ExportSQL(q store.Query, t store.Table) string {
	if t == store.TableSamples {
		return `COPY (SELECT ` + csvTime + `, s.host, s.boot_id, s.mem_total, s.mem_free, s.mem_available, s.buffers, s.cached, s.shmem, s.swap_total, s.swap_free, s.hugetlb, s.procs, s.denied FROM samples s` +
			where(q) + order + `) TO STDOUT WITH (FORMAT csv, HEADER)`
	}
	return `COPY (` + usageSelect(q) + `) TO STDOUT WITH (FORMAT csv, HEADER)`
}

// usageSelect is the SELECT of the usage export.
func usageSelect(q store.Query) string {
	return `SELECT ` + csvTime + `, s.host, (` + store.KindNames + `)[u.kind + 1] AS kind, u.key, u.pid, u.start_time, u.count, u.pss, u.private, u.shared, u.swap, u.estimated, u.mem_limit, u.mem_limit_free
FROM samples s CROSS JOIN LATERAL unnest(` + rowCols + `) WITH ORDINALITY
	AS u(kind, key, pid, start_time, count, pss, private, shared, swap, estimated, mem_limit, mem_limit_free, seq)` +
		where(q) + order + `, u.seq`
}

// ExportCSV streams table t of the samples matching q to w with a
// server-side COPY TO STDOUT.
func (d *DB) ExportCSV(ctx context.Context, q store.Query, t store.Table, w io.Writer) error {
	if t == store.TableUsage && q.NoRows {
		return errors.New("export: the usage table needs rows (Query.NoRows is set)")
	}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET standard_conforming_strings = on`); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if _, err := conn.Conn().PgConn().CopyTo(ctx, w, ExportSQL(q, t)); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}
