package export

import (
	"io"
	"strconv"
	"strings"
	"time"
)

// Encoder writes CSV records field by field into a reused buffer and
// hands it to the underlying writer in batches of about 64 KiB. It
// allocates nothing per row.
//
// Its quoting is PostgreSQL's COPY ... (FORMAT csv) rule, so that a SQLite
// export and a PostgreSQL COPY of the same rows are byte-identical:
//
//   - a field that is empty, or holds a comma, a double quote, CR or LF, is
//     quoted, with double quotes doubled;
//   - a NULL is an empty, unquoted field;
//   - everything else, including leading spaces and bytes that are not
//     valid UTF-8, is written as is;
//   - records end with "\n" (not CRLF).
//
// (encoding/csv differs: it leaves empty strings unquoted, which makes them
// indistinguishable from NULL, and quotes fields that start with a space.)
type Encoder struct {
	w     io.Writer
	buf   []byte
	first bool // the next field is the first of its record
	err   error
}

// encoderFlushSize is the buffered size in bytes at which EndRecord
// writes the buffer out.
const encoderFlushSize = 64 << 10

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w io.Writer) *Encoder {
	return &Encoder{w: w, buf: make([]byte, 0, encoderFlushSize+4<<10), first: true}
}

func (e *Encoder) sep() {
	if !e.first {
		e.buf = append(e.buf, ',')
	}
	e.first = false
}

// String appends a text field.
func (e *Encoder) String(s string) {
	e.sep()
	e.buf = AppendField(e.buf, s)
}

// Null appends a NULL (an empty, unquoted field).
func (e *Encoder) Null() { e.sep() }

// Int appends a decimal integer.
func (e *Encoder) Int(n int64) {
	e.sep()
	e.buf = strconv.AppendInt(e.buf, n, 10)
}

// Uint appends an unsigned decimal integer.
func (e *Encoder) Uint(n uint64) {
	e.sep()
	e.buf = strconv.AppendUint(e.buf, n, 10)
}

// Bool appends "true" or "false".
func (e *Encoder) Bool(b bool) {
	e.sep()
	e.buf = strconv.AppendBool(e.buf, b)
}

// Float appends f in plain decimal notation (never an exponent) with the
// fewest digits that read back as the same float64.
func (e *Encoder) Float(f float64) {
	e.sep()
	e.buf = strconv.AppendFloat(e.buf, f, 'f', -1, 64)
}

// Time appends t in UTC as RFC 3339 with exactly six fractional digits
// (microseconds, PostgreSQL's timestamp resolution), for example
// 2026-03-01T12:00:00.250000Z. Fixed width sorts as text.
func (e *Encoder) Time(t time.Time) {
	e.sep()
	e.buf = AppendTime(e.buf, t)
}

// TimeLayout is the layout Encoder.Time uses.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// AppendTime appends t as Encoder.Time writes it.
func AppendTime(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, TimeLayout)
}

// EndRecord ends the current record and writes the buffer out once it
// holds enough. It returns the first write error, which sticks.
func (e *Encoder) EndRecord() error {
	e.buf = append(e.buf, '\n')
	e.first = true
	if len(e.buf) >= encoderFlushSize {
		return e.Flush()
	}
	return e.err
}

// Header writes a header record of names.
func (e *Encoder) Header(names []string) error {
	for _, n := range names {
		e.String(n)
	}
	return e.EndRecord()
}

// Flush writes out what is buffered.
func (e *Encoder) Flush() error {
	if e.err != nil {
		return e.err
	}
	if len(e.buf) > 0 {
		_, e.err = e.w.Write(e.buf)
		e.buf = e.buf[:0]
	}
	return e.err
}

// AppendField appends s to b as one CSV field, quoted when PostgreSQL's
// COPY would quote it (see Encoder).
func AppendField(b []byte, s string) []byte {
	if s != "" && !strings.ContainsAny(s, ",\"\r\n") {
		return append(b, s...)
	}
	b = append(b, '"')
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		b = append(b, s[:i+1]...)
		b = append(b, '"')
		s = s[i+1:]
	}
	b = append(b, s...)
	return append(b, '"')
}
