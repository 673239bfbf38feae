// Package watch follows memory use over time: it keeps a short history of
// every group's RAM across successive snapshots (a [Tracker]), derives
// from it the change since the group was first seen, a growth rate and a
// leak-suspect flag, and shows all of it either as a full-screen live
// table ([Model], run on the terminal by [RunTUI]) or, when the output is not a
// terminal, as one plain report table per interval ([RunPlain]).
//
// It does not read /proc itself: a [Sampler] (the sampling engine)
// fills each snapshot. It does not format figures either
// beyond what the live table needs: the plain output is report.Table.
//
// # Definitions
//
// All figures are about a group's RAM (proportional set size, bytes), in
// the current grouping (program, user, cgroup or pid):
//
//   - Change: RAM now minus RAM at the group's first sample. A group is
//     first sampled when the watch starts or when it appears; a group
//     that vanishes for one sample starts again when it comes back.
//   - Rate: the Theil–Sen slope of RAM against time over the last
//     [Config.Window] samples (the median of the slopes between every
//     pair of samples), shown in MiB/min. The median ignores outliers: a
//     single jump (a cache filled once) moves it much less than it moves
//     a least-squares fit. Each sample is placed at the time its figures
//     were read: the snapshot's time, or earlier for a process whose
//     page-table walk the sampling engine postponed (its cost budget,
//     Detail.Deferred) and whose old figure it handed on; a group's time
//     is its processes' times weighted by RAM. Without this, a held-back
//     figure would draw a staircase (flat, then a jump) and hide a leak.
//   - Trend: a sparkline of RAM over the last [SparkWidth] samples, from
//     ▁ (the lowest of them) to █ (the highest). A range smaller than
//     64 KiB or than 0.1% of the highest value is drawn flat (▁), so that
//     the noise in PSS (shared pages mapped and unmapped by others) does
//     not look like a trend.
//
// A group is a leak suspect when it has grown steadily over the window:
// all of these hold over its last Window samples.
//
//  1. There are at least [Config.LeakMinSamples] (10) samples.
//  2. The Theil–Sen slope is at least [Config.LeakMinRate] (0.5 MiB/min).
//  3. At least [Config.LeakMonotone] (80%) of the steps between
//     consecutive samples are non-decreasing.
//  4. The RAM grew from the first sample of the window to the last, and
//     no step grew by more than [Config.LeakMaxStep] (half) of that
//     growth beyond what the slope predicts over the step's own time.
//
// Condition 4 keeps a one-off allocation that lands in the middle of the
// window (where half the pairwise slopes straddle it) from being flagged,
// while a long step after held-back figures, which carries the growth of
// its whole span, passes; condition 3 keeps a group whose RAM swings up
// and down from being flagged on a lucky trend.
package watch
