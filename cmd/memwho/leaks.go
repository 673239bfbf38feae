package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memwho/memwho/internal/leaks"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/store"
)

const leaksUsage = `Usage: memwho leaks [flags]

Ranks the processes and groups whose memory (PSS + swap) grew over a
window of the history 'memwho record' keeps, fastest first:

  Growth/h  robust slope (Theil–Sen: the median of the slopes between all
            pairs of samples, unmoved by spikes), in bytes per hour
  Steady    share of steps between samples that did not go down (100%:
            never gave anything back; about 50%: only wobbles)
  R²        how well that straight line explains the samples (1.00: a line)
  Now       PSS + swap at the last sample
  Full in   when it would exhaust its headroom at this rate: MemAvailable +
            SwapFree at the last sample, or the room left under its cgroup
            memory limit when that is less (marked *)

A process is followed by pid and start time, so a reused pid is another
series; processes must span half the window's samples, so that start-up
growth does not rank.

Flags:
  --db PATH|URL     history database (default: see below)
  --window D        how far back to look (default 6h; 90m, 12h, 7d)
  --until TIME      end of the window (default now): RFC 3339, a date, or
                    a duration before now (2h)
  --host NAME       whose samples (default this host's name)
  --all-hosts       every host in the database (PostgreSQL fleets)
  --kind LIST       any of process,program,user,cgroup (default all)
  --min-growth SIZE least growth per hour to list (default 1MiB)
  --top N           list at most N (default 20; 0 for all)
  --json            JSON output (bytes, bytes per hour, seconds)

Default database: ` + store.DefaultDBHelp + `

Examples:
  memwho leaks
  memwho leaks --window 24h --kind process --top 5
  memwho leaks --db postgres://memwho@db/memwho --all-hosts --json
`

type leaksFlags struct {
	db, until, host, kinds, minGrowth string
	window                            string
	allHosts, json                    bool
	top                               int
}

func (f *leaksFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.db, "db", "", "")
	fs.StringVar(&f.window, "window", "6h", "")
	fs.StringVar(&f.until, "until", "", "")
	fs.StringVar(&f.host, "host", "", "")
	fs.BoolVar(&f.allHosts, "all-hosts", false, "")
	fs.StringVar(&f.kinds, "kind", "process,program,user,cgroup", "")
	fs.StringVar(&f.minGrowth, "min-growth", "1MiB", "")
	fs.IntVar(&f.top, "top", 20, "")
	fs.BoolVar(&f.json, "json", false, "")
}

type leaksPlan struct {
	db           string
	since, until time.Time
	window       time.Duration
	host         string // "" with --all-hosts
	kinds        []store.Kind
	minGrowth    int64
}

func (f *leaksFlags) plan(now time.Time) (*leaksPlan, error) {
	p := &leaksPlan{db: f.db, host: f.host}
	var err error
	if p.db == "" {
		if p.db, err = store.DefaultDB(); err != nil {
			return nil, err
		}
	}
	if p.window, err = parseDays(f.window); err != nil || p.window <= 0 {
		return nil, usagef("--window: bad duration %q (want 90m, 6h or 7d)", f.window)
	}
	p.until = now
	if f.until != "" {
		if p.until, err = parseTime(f.until, now); err != nil {
			return nil, usagef("--until: %v", err)
		}
	}
	p.since = p.until.Add(-p.window)
	if f.allHosts {
		if f.host != "" {
			return nil, usagef("--host and --all-hosts exclude each other")
		}
		p.host = ""
	} else if p.host == "" {
		if p.host, err = os.Hostname(); err != nil {
			return nil, fmt.Errorf("host name: %w (use --host or --all-hosts)", err)
		}
	}
	for _, s := range strings.Split(f.kinds, ",") {
		k, err := store.ParseKind(strings.TrimSpace(s))
		if err != nil {
			return nil, usagef("--kind: %v (want process, program, user or cgroup)", err)
		}
		p.kinds = append(p.kinds, k)
	}
	if p.minGrowth, err = parseSize(f.minGrowth); err != nil {
		return nil, usagef("--min-growth: %v", err)
	}
	if f.top < 0 {
		return nil, usagef("--top: must not be negative")
	}
	return p, nil
}

func runLeaks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("memwho leaks", leaksUsage, stderr)
	var f leaksFlags
	f.register(fs)
	if err := parseFlags(fs, leaksUsage, args, stdout); err != nil {
		return err
	}
	plan, err := f.plan(time.Now())
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, plan.db, store.OpenOptions{ReadOnly: true})
	if err != nil {
		if errors.Is(err, store.ErrNoHistory) {
			return fmt.Errorf("%w (run 'memwho record' first)", err)
		}
		return fmt.Errorf("open history: %w", err)
	}
	defer st.Close()

	c := leaks.NewCollector()
	samples := 0
	var last store.Sample
	q := store.Query{Since: plan.since, Until: plan.until, Host: plan.host}
	err = st.Samples(ctx, q, func(s *store.Sample) error {
		samples++
		c.Add(s)
		last.Time, last.Host, last.Meminfo = s.Time, s.Host, s.Meminfo
		return nil
	})
	if err != nil {
		return err
	}
	if samples == 0 {
		return noSamples(ctx, st, plan)
	}
	// One ranking per kind, in kind order (processes first): a group
	// always grows at least as fast as a leaking member, so a single list
	// would bury the process under its program, user and cgroup.
	all := c.Rank(leaks.Options{MinSlope: float64(plan.minGrowth)})
	var ranked []leaks.Leak
	for _, k := range []store.Kind{store.KindProcess, store.KindProgram, store.KindUser, store.KindCgroup} {
		if !slices.Contains(plan.kinds, k) {
			continue
		}
		n := 0
		for _, l := range all {
			if l.Kind == k && (f.top == 0 || n < f.top) {
				ranked = append(ranked, l)
				n++
			}
		}
	}
	if f.json {
		return leaksJSON(stdout, plan, samples, ranked)
	}
	return leaksTable(stdout, plan, samples, c.Hosts(), &last, ranked)
}

// noSamples explains an empty window: no history at all for the host, or
// only for other hosts.
func noSamples(ctx context.Context, st store.Store, plan *leaksPlan) error {
	who := "any host"
	if plan.host != "" {
		who = "host " + plan.host
	}
	hosts := map[string]bool{}
	if plan.host != "" {
		st.Samples(ctx, store.Query{Since: plan.since, Until: plan.until, NoRows: true}, func(s *store.Sample) error {
			hosts[s.Host] = true
			return nil
		})
	}
	msg := fmt.Sprintf("no samples of %s between %s and %s", who,
		plan.since.UTC().Format(time.RFC3339), plan.until.UTC().Format(time.RFC3339))
	if len(hosts) > 0 {
		var names []string
		for h := range hosts {
			names = append(names, strconv.Quote(h))
		}
		slices.Sort(names)
		return fmt.Errorf("%s; the window has samples of %s (use --host NAME or --all-hosts)", msg, strings.Join(names, ", "))
	}
	return fmt.Errorf("%s (is 'memwho record' running? see --window)", msg)
}

func leaksTable(w io.Writer, plan *leaksPlan, samples, hosts int, last *store.Sample, ranked []leaks.Leak) error {
	var b []byte
	b = append(b, "Memory growth over "...)
	b = append(b, formatSpan(plan.window)...)
	b = append(b, " to "...)
	b = append(b, plan.until.UTC().Format("2006-01-02 15:04 UTC")...)
	if plan.host != "" {
		b = append(b, ", host "...)
		b = report.Sanitize(b, plan.host)
	} else {
		b = append(b, fmt.Sprintf(", %d hosts", hosts)...)
	}
	b = append(b, fmt.Sprintf(": %d samples", samples)...)
	if plan.host != "" && last.Meminfo.MemTotal > 0 {
		b = append(b, ", headroom "...)
		b = report.HumanBytes(b, last.Meminfo.MemAvailable+last.Meminfo.SwapFree)
		b = append(b, " (MemAvailable + SwapFree)"...)
	}
	b = append(b, '\n')
	if len(ranked) == 0 {
		b = append(b, "Nothing grew by more than "...)
		b = report.HumanBytes(b, uint64(plan.minGrowth))
		b = append(b, " per hour.\n"...)
		_, err := w.Write(b)
		return err
	}
	rows := [][]string{}
	titles := map[int]string{} // row index -> section title before it
	limited := false
	for i, l := range ranked {
		if i == 0 || ranked[i-1].Kind != l.Kind {
			titles[len(rows)] = sectionTitles[l.Kind]
			h := []string{"Growth/h", "Steady", "R²", "Now", "Full in", "Procs"}
			if l.Kind == store.KindProcess {
				h[5] = "PID"
			}
			if plan.host == "" {
				h = append(h, "Host")
			}
			rows = append(rows, append(h, "Name"))
		}
		full := "-"
		if l.Fills {
			full = formatSpan(l.TimeToFull)
		}
		if l.Limited {
			full += "*"
			limited = true
		}
		id := strconv.Itoa(l.Count)
		if l.Kind == store.KindProcess {
			id = strconv.Itoa(l.PID)
		}
		r := []string{
			"+" + string(report.HumanBytes(nil, uint64(math.Max(l.Slope, 0)))),
			strconv.Itoa(int(math.Round(l.Steady*100))) + "%",
			strconv.FormatFloat(math.Max(l.R2, 0), 'f', 2, 64),
			string(report.HumanBytes(nil, l.Footprint)),
			full,
			id,
		}
		if plan.host == "" {
			r = append(r, string(report.Sanitize(nil, l.Host)))
		}
		rows = append(rows, append(r, string(report.Sanitize(nil, l.Key))))
	}
	// One set of widths for every section, so that they line up. Figures
	// are right-aligned, the host left-aligned, the name last, unpadded.
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], displayWidth(cell))
		}
	}
	for j, r := range rows {
		if t, ok := titles[j]; ok {
			b = append(b, '\n')
			b = append(b, t...)
			b = append(b, '\n')
		}
		for i, cell := range r {
			pad := widths[i] - displayWidth(cell)
			switch {
			case i == len(r)-1:
				b = append(b, cell...)
			case i <= 5:
				b = appendSpaces(b, pad)
				b = append(b, cell...)
				b = append(b, "  "...)
			default:
				b = append(b, cell...)
				b = appendSpaces(b, pad+2)
			}
		}
		b = append(b, '\n')
	}
	if limited {
		b = append(b, "\n* under a cgroup memory limit: time until the limit is reached\n"...)
	}
	_, err := w.Write(b)
	return err
}

var sectionTitles = map[store.Kind]string{
	store.KindProcess: "Processes (same pid and start time throughout)",
	store.KindProgram: "Programs",
	store.KindUser:    "Users",
	store.KindCgroup:  "Cgroups",
}

func appendSpaces(b []byte, n int) []byte {
	for ; n > 0; n-- {
		b = append(b, ' ')
	}
	return b
}

// displayWidth counts runes: every cell here is ASCII or sanitised.
func displayWidth(s string) int { return len([]rune(s)) }

// formatSpan writes a duration the way a person reads it: 45s, 12m,
// 5.0h, 3.2d, or ">1y".
func formatSpan(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return strconv.FormatFloat(d.Hours(), 'f', 1, 64) + "h"
	case d < 365*24*time.Hour:
		return strconv.FormatFloat(d.Hours()/24, 'f', 1, 64) + "d"
	}
	return ">1y"
}

// jsonLeak is one entry of the JSON output; sizes in bytes, rates in
// bytes per hour, times in RFC 3339, durations in seconds. Names are
// report.String: escaped as in every JSON memwho writes (controls, bidi
// and other invisible characters as \uXXXX).
type jsonLeak struct {
	Kind               string        `json:"kind"`
	Key                report.String `json:"key"`
	Host               report.String `json:"host"`
	PID                int           `json:"pid,omitempty"`
	StartTime          uint64        `json:"start_time,omitempty"`
	Count              int           `json:"count"`
	SlopeBytesPerHour  float64       `json:"slope_bytes_per_hour"`
	Steady             float64       `json:"steady"`
	R2                 float64       `json:"r2"`
	Points             int           `json:"points"`
	First              string        `json:"first"`
	Last               string        `json:"last"`
	FootprintBytes     uint64        `json:"footprint_bytes"`
	HeadroomBytes      uint64        `json:"headroom_bytes"`
	CgroupLimited      bool          `json:"cgroup_limited"`
	CgroupLimitBytes   uint64        `json:"cgroup_limit_bytes,omitempty"`
	SecondsToExhausted *float64      `json:"seconds_to_exhausted"`
}

func leaksJSON(w io.Writer, plan *leaksPlan, samples int, ranked []leaks.Leak) error {
	out := struct {
		Schema  string        `json:"schema"`
		Host    report.String `json:"host,omitempty"`
		Since   string        `json:"since"`
		Until   string        `json:"until"`
		Samples int           `json:"samples"`
		Leaks   []jsonLeak    `json:"leaks"`
	}{
		Schema: "memwho.leaks/v1", Host: report.String(plan.host), Samples: samples, Leaks: []jsonLeak{},
		Since: plan.since.UTC().Format(store.TimeLayout), Until: plan.until.UTC().Format(store.TimeLayout),
	}
	for _, l := range ranked {
		j := jsonLeak{
			Kind: l.Kind.String(), Key: report.String(l.Key), Host: report.String(l.Host), PID: l.PID, StartTime: l.StartTime, Count: l.Count,
			SlopeBytesPerHour: math.Round(l.Slope), Steady: round3(l.Steady), R2: round3(l.R2), Points: l.N,
			First: l.First.UTC().Format(store.TimeLayout), Last: l.Last.UTC().Format(store.TimeLayout),
			FootprintBytes: l.Footprint, HeadroomBytes: l.Headroom, CgroupLimited: l.Limited, CgroupLimitBytes: l.Limit,
		}
		if l.Fills {
			s := math.Round(l.TimeToFull.Seconds())
			j.SecondsToExhausted = &s
		}
		out.Leaks = append(out.Leaks, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
