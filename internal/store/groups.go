package store

import (
	"context"
	"fmt"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

// What memwho diff --since reads from the history: the groups of one
// recorded sample, as sample.Diff compares them.

// MinSlack is the least distance between the time asked for and the
// recorded sample GroupsAt takes for it; see SampleSlack.
const MinSlack = 5 * time.Minute

// sampleSlack is how far from t a recorded sample may be and still stand
// for it: a quarter of the way back from now, at least MinSlack. "1h
// ago" is then a sample between 45 and 75 minutes old, whatever
// record's --interval, and never the one of a minute ago.
func SampleSlack(now, t time.Time) time.Duration {
	return max(now.Sub(t)/4, MinSlack)
}

// ByOf is the grouping of `memwho report --by` that makes the groups of
// kind k.
func ByOf(k Kind) sample.By {
	b, err := sample.ParseBy(k.String())
	if err != nil {
		return sample.ByProgram
	}
	return b
}

// GroupsAt returns the groups of kind k of host's sample nearest
// to t, and that sample's time; an error when no sample lies within
// sampleSlack of t or the sample holds no group of kind k.
func GroupsAt(ctx context.Context, st Store, host string, k Kind, t, now time.Time) ([]sample.Group, time.Time, error) {
	slack := SampleSlack(now, t)
	var (
		bestID   int64
		bestTime time.Time
		found    bool
	)
	q := Query{Since: t.Add(-slack), Until: t.Add(slack + time.Millisecond), Host: host, NoRows: true}
	err := st.Samples(ctx, q, func(s *Sample) error {
		if !found || AbsDuration(s.Time.Sub(t)) < AbsDuration(bestTime.Sub(t)) {
			bestID, bestTime, found = s.ID, s.Time, true
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	if !found {
		return nil, time.Time{}, fmt.Errorf("no sample of host %s recorded within %s of %s (is memwho record running? its --db, --host?)",
			host, slack, t.Format(time.RFC3339))
	}
	var (
		groups []sample.Group
		procs  int
	)
	q = Query{Since: bestTime, Until: bestTime.Add(time.Millisecond), Host: host}
	err = st.Samples(ctx, q, func(s *Sample) error {
		if s.ID != bestID {
			return nil
		}
		procs = s.Procs
		for i := range s.Rows {
			if r := &s.Rows[i]; r.Kind == k {
				groups = append(groups, groupOf(r))
			}
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(groups) == 0 && procs > 0 {
		return nil, time.Time{}, fmt.Errorf("the sample of %s has no %s groups: memwho record --groups chooses what is recorded",
			bestTime.Format(time.RFC3339), k)
	}
	return groups, bestTime, nil
}

// groupOf is a recorded group row as diff compares it, under the name
// its stored key stands for (KeyName): both sides of a diff come through
// here, and the table prints names as the live report does.
func groupOf(r *Row) sample.Group {
	return sample.Group{Key: KeyName(r.Key), Count: r.Count, RAM: r.PSS, Private: r.Private, Shared: r.Shared, Swap: r.Swap, Estimated: r.Estimated}
}

// GroupsOf returns the rows of kind k of s as groups.
func GroupsOf(s *Sample, k Kind) []sample.Group {
	var groups []sample.Group
	for i := range s.Rows {
		if r := &s.Rows[i]; r.Kind == k {
			groups = append(groups, groupOf(r))
		}
	}
	return groups
}

// AbsDuration is |d|.
func AbsDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
