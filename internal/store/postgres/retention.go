//go:build !nopostgres

package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/memwho/memwho/internal/store"
)

// Retention in a shared history (schema version 3). Deleting a fleet's
// samples row by row costs as much as writing them, and leaves dead rows
// that VACUUM must find in tables that only grow; dropping a day's
// partition costs the same whatever the history holds. But recorders
// may keep different spans (--keep), and one recorder's day is every
// host's. So each recorder records its --keep in table retention
// (host, keep_ms, seen_ms), and:
//
//   - a day is dropped, by whichever recorder looks first, once it ended
//     longer ago than the longest keep of any host still recording (a
//     host counts while it was seen within its own keep; one with keep
//     0, "everything", keeps every day until its row is deleted);
//   - a host that keeps less than that longest deletes its own older
//     samples itself, one row per sample, as before version 3;
//   - so a fleet whose recorders keep the same span deletes nothing row
//     by row: its samples live between --keep and --keep plus a day.

// announceEvery is how often a recorder records its keep again (seen_ms),
// and dropEvery how often it looks for days to drop, in sample time.
const (
	announceEvery = 10 * time.Minute
	dropEvery     = 10 * time.Minute
)

// dropLockTimeout bounds the wait for the lock a DROP takes on the
// partitioned table: a long export holds it; the drop is tried again
// later rather than queueing writers behind it.
const dropLockTimeout = "5s"

// Prune applies retention r (see the top of this file). MaxSize is not
// supported on PostgreSQL (the database is shared; size it with the
// server's own tools) and is an error.
func (d *DB) Prune(ctx context.Context, r store.Retention) (store.Pruned, error) {
	var p store.Pruned
	if r.MaxSize > 0 {
		return p, errors.New("prune: a size bound is not supported on PostgreSQL")
	}
	if !r.Now.IsZero() && r.Host != "" {
		if err := d.announce(ctx, r); err != nil {
			return p, fmt.Errorf("prune: %w", err)
		}
	}
	if r.Before.IsZero() {
		return p, nil
	}
	var longest time.Duration = -1 // unknown: Before alone decides
	if !r.Now.IsZero() {
		// Read again every dropEvery: retention then costs no query at
		// most samples.
		if d.longestAt.IsZero() || r.Now.Sub(d.longestAt) >= dropEvery || r.Now.Before(d.longestAt) {
			l, err := d.longestKeep(ctx, r.Now)
			if err != nil {
				return p, fmt.Errorf("prune: %w", err)
			}
			d.longest, d.longestAt = l, r.Now
		}
		longest = d.longest
	}
	if longest < 0 || longest == 0 || r.Keep < longest || r.Host == "" {
		tag, err := d.pool.Exec(ctx, `DELETE FROM samples WHERE ($1 = '' OR host = $1) AND ts < $2`, r.Host, store.Millis(r.Before))
		if err != nil {
			return p, fmt.Errorf("prune: %w", err)
		}
		p.Samples += tag.RowsAffected()
	}
	if longest > 0 && (d.dropped.IsZero() || r.Now.Sub(d.dropped) >= dropEvery) {
		d.dropped = r.Now
		n, err := d.dropDays(ctx, store.Millis(r.Now.Add(-longest)))
		p.Samples += n
		if err != nil {
			return p, fmt.Errorf("prune: %w", err)
		}
	}
	return p, nil
}

// announce records this host's keep, at most every announceEvery unless
// it changed.
func (d *DB) announce(ctx context.Context, r store.Retention) error {
	keep := r.Keep.Milliseconds()
	if !d.announced.IsZero() && d.announcedKeep == keep && r.Now.Sub(d.announced) < announceEvery {
		return nil
	}
	_, err := d.pool.Exec(ctx, `INSERT INTO retention (host, keep_ms, seen_ms) VALUES ($1, $2, $3)
		ON CONFLICT (host) DO UPDATE SET keep_ms = excluded.keep_ms, seen_ms = excluded.seen_ms`, r.Host, keep, store.Millis(r.Now))
	if err != nil {
		return fmt.Errorf("record the keep of %s: %w", r.Host, err)
	}
	d.announced, d.announcedKeep = r.Now, keep
	return nil
}

// longestKeep returns the longest keep of the hosts still recording at
// now, 0 when one keeps everything.
func (d *DB) longestKeep(ctx context.Context, now time.Time) (time.Duration, error) {
	var forever bool
	var ms int64
	err := d.pool.QueryRow(ctx, `SELECT coalesce(bool_or(keep_ms = 0), false), coalesce(max(keep_ms), 0) FROM retention
		WHERE keep_ms = 0 OR seen_ms >= $1 - keep_ms`, store.Millis(now)).Scan(&forever, &ms)
	if err != nil {
		return 0, fmt.Errorf("read the keeps of the hosts: %w", err)
	}
	if forever {
		return 0, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// dropDays drops the day partitions that end at or before cutoff (Unix
// milliseconds) and returns how many samples they held. Another recorder
// dropping at the same time makes this one skip; a lock it cannot get
// within dropLockTimeout leaves the day for a later try.
func (d *DB) dropDays(ctx context.Context, cutoff int64) (int64, error) {
	rows, err := d.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = to_regclass('samples') ORDER BY c.relname`)
	if err != nil {
		return 0, fmt.Errorf("list partitions: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("list partitions: %w", err)
	}
	var dropped int64
	for _, name := range names {
		day, ok := partitionDay(name)
		if !ok || (day+1)*dayMillis > cutoff {
			continue
		}
		n, done, err := d.dropDay(ctx, name)
		if err != nil || !done {
			return dropped, err
		}
		dropped += n
		delete(d.days, day)
	}
	return dropped, nil
}

func (d *DB) dropDay(ctx context.Context, name string) (n int64, done bool, err error) {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return 0, false, err
	}
	defer tx.Rollback(context.Background())
	var locked bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, int64(partitionLock)).Scan(&locked); err != nil || !locked {
		return 0, false, err
	}
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+dropLockTimeout+`'`); err != nil {
		return 0, false, err
	}
	id := pgx.Identifier{name}.Sanitize()
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+id).Scan(&n); err != nil {
		return 0, false, lockTimeout(err)
	}
	if _, err := tx.Exec(ctx, `DROP TABLE `+id); err != nil {
		return 0, false, lockTimeout(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, false, err
	}
	return n, true, nil
}

// lockTimeout turns PostgreSQL's lock_not_available into "not now".
func lockTimeout(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55P03" {
		return nil
	}
	return err
}
