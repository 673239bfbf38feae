// Package watch follows memory use over time: it keeps a short history of
// every group's RAM across successive snapshots (a [Tracker]), derives
// from it the change since the group was first seen, a growth rate and a
// leak-suspect flag, and shows all of it either as a full-screen live
// table (the bubbletea model, [RunTUI]) or, when the output is not a
// terminal, as one plain report table per interval ([RunPlain]).
//
// It does not read /proc itself: a [Sampler] (a sample.Scanner, or the
// sampling engine) fills each snapshot. It does not format figures either
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
//   - Rate: the Theil–Sen slope of RAM against sample time over the last
//     [Config.Window] samples (the median of the slopes between every
//     pair of samples), shown in MiB/min. The median ignores outliers: a
//     single jump (a cache filled once) moves it much less than it moves
//     a least-squares fit.
//   - Leak suspect: the group has grown steadily over the window. All
//     of these hold over the last Window samples:
//     1. there are at least [Config.LeakMinSamples] samples;
//     2. the Theil–Sen slope is at least [Config.LeakMinRate];
//     3. at least [Config.LeakMonotone] (80%) of the steps between
//     consecutive samples are non-decreasing;
//     4. the RAM grew from the first sample of the window to the last,
//     and no single step accounts for more than [Config.LeakMaxStep]
//     (half) of that growth.
//     Condition 4 keeps a one-off allocation that lands in the middle of
//     the window (where half the pairwise slopes straddle it) from being
//     flagged; condition 3 keeps a group whose RAM swings up and down
//     from being flagged on a lucky trend.
//   - Trend: a sparkline of RAM over the last [SparkWidth] samples, from
//     ▁ (the lowest of them) to █ (the highest). A range smaller than
//     64 KiB or than 0.1% of the highest value is drawn flat (▁), so that
//     the noise in PSS (shared pages mapped and unmapped by others) does
//     not look like a trend.
package watch
