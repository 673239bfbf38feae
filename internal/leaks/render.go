package leaks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memwho/memwho/internal/progress"
	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/store"
)

// Report is one `memwho leaks` listing: which window of the history,
// whose samples, and what to show.
type Report struct {
	// Since and Until bound the window; Window is their distance, as
	// the user gave it.
	Since, Until time.Time
	Window       time.Duration
	// Host is whose samples; "" for every host in the database.
	Host string
	// Kinds are the sections shown, in kind order whatever their order
	// here.
	Kinds []store.Kind
	// MinGrowth is the least growth listed, in bytes per hour.
	MinGrowth int64
	// Top lists at most this many of each kind; 0 for all.
	Top int
	// JSON writes JSON (memwho.leaks/v1) instead of the table.
	JSON bool
	// Page, when not nil, also gets the HTML page of the listing: each
	// series' history charted with its fitted line (--html).
	Page io.Writer
	// Progress, when not nil, gets a progress line while the samples are
	// read (a terminal; see package progress).
	Progress io.Writer
}

// Write ranks what grew in st over the report's window and writes the
// listing to w. An empty window is an error that says why: no samples at
// all, or only other hosts'.
func (rep *Report) Write(ctx context.Context, st store.Store, w io.Writer) error {
	c := NewCollector()
	samples := 0
	var last store.Sample
	q := store.Query{Since: rep.Since, Until: rep.Until, Host: rep.Host, Growth: true}
	var meter *progress.Meter
	if rep.Progress != nil {
		var total int64
		if cn, ok := st.(store.Counter); ok {
			total, _, _ = cn.Count(ctx, q)
		}
		meter = progress.Start(rep.Progress, true, "leaks", "samples", total)
	}
	err := st.Samples(ctx, q, func(s *store.Sample) error {
		samples++
		c.Add(s)
		meter.Add(1)
		// Hosts may come interleaved (store.Query.Growth): the latest
		// sample is the last.
		if samples == 1 || !s.Time.Before(last.Time) {
			last.Time, last.Host, last.Meminfo = s.Time, s.Host, s.Meminfo
		}
		return nil
	})
	meter.Done()
	if err != nil {
		return err
	}
	if samples == 0 {
		return rep.noSamples(ctx, st)
	}
	// One ranking per kind, in kind order (processes first): a group
	// always grows at least as fast as a leaking member, so a single list
	// would bury the process under its program, user and cgroup.
	all := c.Rank(Options{MinSlope: float64(rep.MinGrowth)})
	var ranked []Leak
	for _, k := range []store.Kind{store.KindProcess, store.KindProgram, store.KindUser, store.KindCgroup, store.KindUnit, store.KindSlice, store.KindContainer} {
		if !slices.Contains(rep.Kinds, k) {
			continue
		}
		n := 0
		for _, l := range all {
			if l.Kind == k && (rep.Top == 0 || n < rep.Top) {
				ranked = append(ranked, l)
				n++
			}
		}
	}
	if rep.Page != nil {
		if err := rep.writeHTML(rep.Page, samples, ranked); err != nil {
			return err
		}
	}
	if rep.JSON {
		return rep.writeJSON(w, samples, ranked)
	}
	return rep.writeTable(w, samples, c.Hosts(), &last, ranked)
}

// noSamples explains an empty window: no history at all for the host, or
// only for other hosts.
func (rep *Report) noSamples(ctx context.Context, st store.Store) error {
	who := "any host"
	if rep.Host != "" {
		who = "host " + rep.Host
	}
	hosts := map[string]bool{}
	if rep.Host != "" {
		st.Samples(ctx, store.Query{Since: rep.Since, Until: rep.Until, NoRows: true}, func(s *store.Sample) error {
			hosts[s.Host] = true
			return nil
		})
	}
	msg := fmt.Sprintf("no samples of %s between %s and %s", who,
		rep.Since.UTC().Format(time.RFC3339), rep.Until.UTC().Format(time.RFC3339))
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

func (rep *Report) writeTable(w io.Writer, samples, hosts int, last *store.Sample, ranked []Leak) error {
	var b []byte
	b = append(b, "Memory growth over "...)
	b = append(b, formatSpan(rep.Window)...)
	b = append(b, " to "...)
	b = append(b, rep.Until.UTC().Format("2006-01-02 15:04 UTC")...)
	if rep.Host != "" {
		b = append(b, ", host "...)
		b = report.Sanitize(b, rep.Host)
	} else {
		b = append(b, fmt.Sprintf(", %d hosts", hosts)...)
	}
	b = append(b, fmt.Sprintf(": %d samples", samples)...)
	if rep.Host != "" && last.Meminfo.MemTotal > 0 {
		b = append(b, ", headroom "...)
		b = report.HumanBytes(b, last.Meminfo.MemAvailable+last.Meminfo.SwapFree)
		b = append(b, " (MemAvailable + SwapFree)"...)
	}
	b = append(b, '\n')
	if len(ranked) == 0 {
		b = append(b, "Nothing grew by more than "...)
		b = report.HumanBytes(b, uint64(rep.MinGrowth))
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
			if rep.Host == "" {
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
			"+" + string(report.HumanBytes(nil, uint64(math.Max(l.Growth, 0)))),
			strconv.Itoa(int(math.Round(l.Steady*100))) + "%",
			strconv.FormatFloat(math.Max(l.R2, 0), 'f', 2, 64),
			string(report.HumanBytes(nil, l.Footprint)),
			full,
			id,
		}
		if rep.Host == "" {
			r = append(r, string(report.Sanitize(nil, l.Host)))
		}
		rows = append(rows, append(r, string(report.Sanitize(nil, store.KeyName(l.Key)))))
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
	store.KindProcess:   "Processes (same pid and start time throughout)",
	store.KindProgram:   "Programs",
	store.KindUser:      "Users",
	store.KindCgroup:    "Cgroups",
	store.KindUnit:      "Units",
	store.KindSlice:     "Slices",
	store.KindContainer: "Containers",
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
	GrowthBytesPerHour float64       `json:"growth_bytes_per_hour"`
	SlopeBytesPerHour  float64       `json:"slope_bytes_per_hour"`
	RecentBytesPerHour float64       `json:"recent_slope_bytes_per_hour"`
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

func (rep *Report) writeJSON(w io.Writer, samples int, ranked []Leak) error {
	out := struct {
		Schema  string        `json:"schema"`
		Host    report.String `json:"host,omitempty"`
		Since   string        `json:"since"`
		Until   string        `json:"until"`
		Samples int           `json:"samples"`
		Leaks   []jsonLeak    `json:"leaks"`
	}{
		Schema: "memwho.leaks/v1", Host: report.String(rep.Host), Samples: samples, Leaks: []jsonLeak{},
		Since: rep.Since.UTC().Format(store.TimeLayout), Until: rep.Until.UTC().Format(store.TimeLayout),
	}
	for _, l := range ranked {
		j := jsonLeak{
			Kind: l.Kind.String(), Key: report.String(l.Key), Host: report.String(l.Host), PID: l.PID, StartTime: l.StartTime, Count: l.Count,
			GrowthBytesPerHour: math.Round(l.Growth), SlopeBytesPerHour: math.Round(l.Slope), RecentBytesPerHour: math.Round(l.Recent), Steady: round3(l.Steady), R2: round3(l.R2), Points: l.N,
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
