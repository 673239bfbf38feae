//go:build !nopostgres

package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/memwho/memwho/internal/store"
)

// How a sample is stored (schema version 3): one row of table samples,
// its usage rows as arrays in seq order, in the partition of its UTC day.
// A host's sample of 300 processes and their groups (about 400 rows)
// takes about 10 KB this way, TOAST-compressed, where a row per process
// and group took 70 KB (docs/fleet.md).

// dayMillis is the length of a partition, in milliseconds.
const dayMillis = 24 * 60 * 60 * 1000

// dayOf returns the day (since the epoch, UTC) of Unix milliseconds ts.
func dayOf(ts int64) int64 {
	d := ts / dayMillis
	if ts < 0 && ts%dayMillis != 0 {
		d--
	}
	return d
}

// partitionName names the partition of day d: samples_pYYYYMMDD.
func partitionName(d int64) string {
	return "samples_p" + time.UnixMilli(d*dayMillis).UTC().Format("20060102")
}

// partitionDay is the day partition name stands for, ok false for a name
// that is not a partition's.
func partitionDay(name string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, "samples_p")
	if !ok || len(rest) != 8 {
		return 0, false
	}
	t, err := time.Parse("20060102", rest)
	if err != nil {
		return 0, false
	}
	return dayOf(t.UnixMilli()), true
}

// partitionLock serialises the creation and dropping of partitions among
// recorders ("memwhp" in ASCII).
const partitionLock = 0x6d656d776870

// ensureDays makes sure the partitions of the day of ts and of the next
// day exist: the next day's is made a day ahead, so that a fleet does
// not meet at midnight to create it. Known days cost nothing.
func (d *DB) ensureDays(ctx context.Context, ts int64) error {
	day := dayOf(ts)
	for _, day := range []int64{day, day + 1} {
		if d.days[day] {
			continue
		}
		if err := d.ensureDay(ctx, day); err != nil {
			return err
		}
		if d.days == nil {
			d.days = map[int64]bool{}
		}
		d.days[day] = true
	}
	return nil
}

func (d *DB) ensureDay(ctx context.Context, day int64) error {
	name := partitionName(day)
	var exists bool
	if err := d.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&exists); err != nil {
		return fmt.Errorf("partition %s: %w", name, err)
	}
	if exists {
		return nil
	}
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(partitionLock)); err != nil {
		return err
	}
	// IF NOT EXISTS: another recorder may have made it while this one
	// waited for the lock.
	sql := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s PARTITION OF samples FOR VALUES FROM (%d) TO (%d)`,
		pgx.Identifier{name}.Sanitize(), day*dayMillis, (day+1)*dayMillis)
	if _, err := tx.Exec(ctx, sql); err != nil {
		return fmt.Errorf("create partition %s: %w", name, err)
	}
	return tx.Commit(ctx)
}

// columns are a sample's rows as the arrays of table samples.
type columns struct {
	kind                                            []int16
	key                                             []string
	pid, count, estimated                           []int32
	start, pss, private, shared, swap, lim, limFree []int64
}

func (c *columns) fill(rows []store.Row) {
	*c = columns{kind: c.kind[:0], key: c.key[:0], pid: c.pid[:0], count: c.count[:0], estimated: c.estimated[:0],
		start: c.start[:0], pss: c.pss[:0], private: c.private[:0], shared: c.shared[:0], swap: c.swap[:0], lim: c.lim[:0], limFree: c.limFree[:0]}
	for i := range rows {
		x := &rows[i]
		c.kind = append(c.kind, int16(x.Kind))
		c.key = append(c.key, x.Key)
		c.pid = append(c.pid, int32(x.PID))
		c.start = append(c.start, i64(x.StartTime))
		c.count = append(c.count, int32(x.Count))
		c.pss = append(c.pss, i64(x.PSS))
		c.private = append(c.private, i64(x.Private))
		c.shared = append(c.shared, i64(x.Shared))
		c.swap = append(c.swap, i64(x.Swap))
		c.estimated = append(c.estimated, int32(x.Estimated))
		c.lim = append(c.lim, i64(x.MemLimit))
		c.limFree = append(c.limFree, i64(x.MemLimitFree))
	}
}

// insertSample is the one statement that stores a sample. With $29 true
// (a spooled sample) it stores nothing when the host already has a sample
// at that time (one whose spool file could not be removed after its
// commit).
const insertSample = `INSERT INTO samples (ts, host, boot_id, mem_total, mem_free, mem_available, buffers, cached, shmem, swap_total, swap_free, hugetlb, procs, denied,
	nrows, kind, key, pid, start_time, count, pss, private, shared, swap, estimated, mem_limit, mem_limit_free)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27
WHERE NOT ($28::boolean AND EXISTS (SELECT 1 FROM samples WHERE host = $2 AND ts = $1))`

// write stores s: its day's partition first, then the one row. With
// dedupe a sample already there (same host and time) is not written
// again.
func (d *DB) write(ctx context.Context, s *store.Sample, dedupe bool) error {
	ts := store.Millis(s.Time)
	if err := d.ensureDays(ctx, ts); err != nil {
		return fmt.Errorf("write sample: %w", err)
	}
	err := d.insert(ctx, s, ts, dedupe)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23514" {
		// No partition for the row: the day was dropped since it was
		// seen (a spooled sample older than the retention): made again.
		delete(d.days, dayOf(ts))
		if err = d.ensureDays(ctx, ts); err == nil {
			err = d.insert(ctx, s, ts, dedupe)
		}
	}
	if err != nil {
		return fmt.Errorf("write sample: %w", err)
	}
	return nil
}

func (d *DB) insert(ctx context.Context, s *store.Sample, ts int64, dedupe bool) error {
	m := &s.Meminfo
	c := &d.cols
	c.fill(s.Rows)
	_, err := d.pool.Exec(ctx, insertSample,
		ts, s.Host, s.BootID, i64(m.MemTotal), i64(m.MemFree), i64(m.MemAvailable), i64(m.Buffers), i64(m.Cached),
		i64(m.Shmem), i64(m.SwapTotal), i64(m.SwapFree), i64(m.Hugetlb), s.Procs, s.Denied,
		len(s.Rows), c.kind, c.key, c.pid, c.start, c.count, c.pss, c.private, c.shared, c.swap, c.estimated, c.lim, c.limFree,
		dedupe)
	return err
}
