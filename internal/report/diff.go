package report

import (
	"encoding/base64"
	"io"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/memwho/memwho/internal/sample"
)

// DiffSide names one of the two snapshots a comparison is between.
type DiffSide struct {
	// Name is where it came from (a file name), for the table's title
	// line and JSON.
	Name string
	// Taken is when its figures were read.
	Taken time.Time
}

// DiffTable writes the changes as a table: RAM before and after, the
// change, the change of swap, the process counts and the kind of change,
// largest change first, then the totals. Keys go through Sanitize; a
// figure that is an estimate on either side is marked '~'.
func DiffTable(w io.Writer, changes []sample.Change, before, after DiffSide, keyHeader string) error {
	if keyHeader == "" {
		keyHeader = "Program"
	}
	buf := make([]byte, 0, 4096)
	buf = append(buf, "Before: "...)
	buf = Sanitize(buf, before.Name)
	buf = append(buf, ", "...)
	buf = before.Taken.AppendFormat(buf, time.RFC3339)
	buf = append(buf, "\nAfter:  "...)
	buf = Sanitize(buf, after.Name)
	buf = append(buf, ", "...)
	buf = after.Taken.AppendFormat(buf, time.RFC3339)
	buf = append(buf, " ("...)
	// AFTER may be the older file (memwho diff B A): its distance then
	// reads "earlier", not as a negative time "later".
	d := after.Taken.Sub(before.Taken)
	earlier := d < 0
	d = d.Abs()
	// Sub saturates beyond about 292 years (a broken or hostile file's
	// time): the saturated figure is no distance, so it is a bound.
	const longest = time.Duration(math.MaxInt64) / time.Second * time.Second
	if d > longest {
		buf = append(buf, "over "...)
		d = longest
	}
	d = d.Round(time.Second)
	buf = append(buf, d.String()...)
	if earlier && d > 0 {
		buf = append(buf, " earlier)\n\n"...)
	} else {
		buf = append(buf, " later)\n\n"...)
	}
	const head = "  RAM before      RAM after        Change   Swap change    Procs  Change    "
	buf = append(buf, head...)
	buf = append(buf, keyHeader...)
	buf = append(buf, '\n')
	for i := range changes {
		c := &changes[i]
		buf = diffRow(buf, c.Before, c.After, c.Kind.String(), c.Key)
		if len(buf) > 32<<10 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	for range len(head) + len(keyHeader) {
		buf = append(buf, '-')
	}
	buf = append(buf, '\n')
	tb, ta := diffTotals(changes)
	buf = diffRow(buf, tb, ta, "", "total")
	if tb.Estimated > 0 || ta.Estimated > 0 {
		buf = append(buf, "~ an estimate on one side or both (RSS-based: see memwho --help)\n"...)
	}
	_, err := w.Write(buf)
	return err
}

func addGroup(t, g sample.Group) sample.Group {
	t.RAM += g.RAM
	t.Swap += g.Swap
	t.Count += g.Count
	t.Estimated += g.Estimated
	return t
}

func diffRow(buf []byte, b, a sample.Group, kind, key string) []byte {
	mark := byte(' ')
	if b.Estimated > 0 || a.Estimated > 0 {
		mark = '~'
	}
	var num [32]byte
	buf = padLeftBytes(buf, HumanBytes(num[:0], b.RAM), 12)
	buf = append(buf, "   "...)
	buf = padLeftBytes(buf, HumanBytes(num[:0], a.RAM), 12)
	buf = append(buf, ' ', mark)
	buf = padLeftBytes(buf, signedPlus(num[:0], int64(a.RAM)-int64(b.RAM)), 12)
	buf = append(buf, "  "...)
	buf = padLeftBytes(buf, signedPlus(num[:0], int64(a.Swap)-int64(b.Swap)), 12)
	buf = append(buf, "  "...)
	procs := strconv.AppendInt(num[:0], int64(b.Count), 10)
	procs = append(procs, "->"...)
	procs = strconv.AppendInt(procs, int64(a.Count), 10)
	buf = padLeftBytes(buf, procs, 9)
	buf = append(buf, "  "...)
	buf = append(buf, kind...)
	for range 10 - len(kind) {
		buf = append(buf, ' ')
	}
	buf = Sanitize(buf, key)
	return append(buf, '\n')
}

// signedPlus is appendSignedBytes with a '+' on growth.
func signedPlus(dst []byte, v int64) []byte {
	if v > 0 {
		dst = append(dst, '+')
	}
	return appendSignedBytes(dst, v)
}

// DiffSchema is the value of the "schema" member of diff's JSON, as
// Schema is the report's.
const DiffSchema = "memwho.diff/v1"

// DiffJSON writes the changes as one JSON object and a newline: its
// schema (DiffSchema), the grouping, the two sides (source, and time as
// JSON writes it), per key the kind of change and the RAM, swap (bytes)
// and process counts before and after, then "total": the same figures
// summed over the changes given, as DiffTable's total row. Keys follow
// JSON's rule: "key" alone when valid UTF-8, else "key" in the Sanitize
// form and "key_base64" with the exact bytes.
func DiffJSON(w io.Writer, changes []sample.Change, before, after DiffSide, by string) error {
	buf := make([]byte, 0, 4096)
	buf = append(buf, `{"schema":"`...)
	buf = append(buf, DiffSchema...)
	buf = append(buf, `","by":`...)
	buf = AppendJSONString(buf, by)
	side := func(name string, s DiffSide) {
		buf = append(buf, `,"`...)
		buf = append(buf, name...)
		buf = append(buf, `":{"source":`...)
		buf = AppendJSONString(buf, s.Name)
		// The report's JSON format (JSON's "time"), so that a diff joins
		// with a report of the same snapshot on it.
		buf = append(buf, `,"time":`...)
		buf = appendJSONString(buf, s.Taken.UTC().Format(time.RFC3339))
		buf = append(buf, '}')
	}
	side("before", before)
	side("after", after)
	buf = append(buf, `,"changes":[`...)
	for i := range changes {
		c := &changes[i]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '{')
		buf = appendJSONKey(buf, c.Key)
		buf = append(buf, `,"change":"`...)
		buf = append(buf, c.Kind.String()...)
		buf = append(buf, `",`...)
		buf = appendDiffFigures(buf, c.Before, c.After)
		buf = append(buf, '}')
	}
	// The table's total row: the same sums over the same rows (those
	// listed, after --filter and --top).
	tb, ta := diffTotals(changes)
	buf = append(buf, `],"total":{`...)
	buf = appendDiffFigures(buf, tb, ta)
	buf = append(buf, "}}\n"...)
	_, err := w.Write(buf)
	return err
}

// appendDiffFigures appends the members a change and the total share,
// with no comma before the first: RAM and swap before, after and the
// change (bytes), the process counts, and the accuracy.
func appendDiffFigures(buf []byte, b, a sample.Group) []byte {
	buf = appendJSONUint(buf, "ram_before_bytes", b.RAM, false)
	buf = appendJSONUint(buf, "ram_after_bytes", a.RAM, true)
	buf = append(buf, `,"ram_change_bytes":`...)
	buf = strconv.AppendInt(buf, int64(a.RAM)-int64(b.RAM), 10)
	buf = appendJSONUint(buf, "swap_before_bytes", b.Swap, true)
	buf = appendJSONUint(buf, "swap_after_bytes", a.Swap, true)
	buf = append(buf, `,"swap_change_bytes":`...)
	buf = strconv.AppendInt(buf, int64(a.Swap)-int64(b.Swap), 10)
	buf = appendJSONInt(buf, "procs_before", b.Count, true)
	buf = appendJSONInt(buf, "procs_after", a.Count, true)
	acc := "exact"
	if b.Estimated > 0 || a.Estimated > 0 {
		acc = "estimate"
	}
	buf = append(buf, `,"accuracy":"`...)
	buf = append(buf, acc...)
	return append(buf, '"')
}

// diffTotals sums the changes' sides: the total row of DiffTable and the
// total of DiffJSON.
func diffTotals(changes []sample.Change) (before, after sample.Group) {
	for i := range changes {
		before, after = addGroup(before, changes[i].Before), addGroup(after, changes[i].After)
	}
	return before, after
}

// appendJSONKey appends "key" and, for a key that is not valid UTF-8,
// "key_base64": the rule of the report's group objects and the diff's
// rows alike. With AppendJSONString alone, bytes that are not UTF-8 all became
// U+FFFD, so two such keys came out equal and a diff could not be joined
// with a report of either snapshot.
func appendJSONKey(buf []byte, key string) []byte {
	buf = append(buf, `"key":`...)
	if utf8.ValidString(key) {
		return appendJSONString(buf, key)
	}
	buf = append(buf, '"')
	buf = appendJSONStringBody(buf, string(Sanitize(nil, key)))
	buf = append(buf, `","key_base64":"`...)
	buf = base64.StdEncoding.AppendEncode(buf, []byte(key))
	return append(buf, '"')
}
