package export

import (
	"bytes"
	"io"
	"unsafe"

	"github.com/memwho/memwho/internal/report"
	"github.com/memwho/memwho/internal/store"
)

// CellWriter rewrites the CSV written to it so that every text cell is
// safe to print and to open in a spreadsheet, and passes it on: a
// streaming filter between a [Source] and its writer, so that the SQLite
// and the PostgreSQL stores (whose CSV the server itself writes) are
// neutralised by the same code into the same bytes.
//
// In the columns the header names as text (see [NewCellWriter]) each
// value is
//
//   - escaped with report.Sanitize, as the report's CSV does: control
//     characters (a newline too: one record per line), invalid UTF-8,
//     bidi controls and other invisible characters become backslash
//     escapes, and a backslash is doubled;
//   - then, if it starts with = + - @ or ' (TAB and CR are escaped
//     already), prefixed with one ' so that a spreadsheet takes it as
//     text, not a formula (OWASP's advice for CSV injection). The ' of
//     a value that began with one is doubled, so dropping the first '
//     of such a cell recovers the value exactly.
//
// Every other column passes unchanged: numbers stay numbers (a negative
// one is not a formula). Quoting follows PostgreSQL's COPY rules, as the
// stores write it (quotes only around a value with a comma, a double
// quote, CR or LF, or an empty string).
//
// Memory stays bounded by the longest field.
type CellWriter struct {
	w      io.Writer
	isText func(column string) bool
	text   []bool // per column, from the header
	header bool   // the header record has been read
	col    int    // index of the current field
	field  []byte // current field, unquoted
	quoted bool   // current field was quoted
	state  uint8
	out    []byte
	// scratch holds a text cell's neutralised form.
	scratch []byte
	err     error
}

// States of the CSV parser.
const (
	fieldStart = iota
	unquoted
	inQuotes
	quoteInQuotes // a '"' inside quotes: the end, or the first of a pair
)

// NewCellWriter returns a CellWriter writing to w; isText says which
// header names are text columns to neutralise.
func NewCellWriter(w io.Writer, isText func(column string) bool) *CellWriter {
	return &CellWriter{w: w, isText: isText}
}

// Write parses p, which may end anywhere in a record, and writes every
// completed field on. Runs of ordinary bytes are copied whole: the
// numeric columns, most of a history, pass through without a per-byte
// step or an allocation.
func (c *CellWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	for i := 0; i < len(p); {
		switch c.state {
		case fieldStart, unquoted:
			j := indexSpecial(p[i:])
			if j < 0 {
				c.field = append(c.field, p[i:]...)
				c.state = unquoted
				i = len(p)
				continue
			}
			if j > 0 {
				c.field = append(c.field, p[i:i+j]...)
				c.state = unquoted
				i += j
			}
			b := p[i]
			i++
			switch b {
			case '"':
				if c.state == fieldStart {
					c.state, c.quoted = inQuotes, true
					continue
				}
				c.field = append(c.field, b)
			case ',':
				c.endField()
			case '\n':
				c.endField()
				c.endRecord()
			}
		case inQuotes:
			j := bytes.IndexByte(p[i:], '"')
			if j < 0 {
				c.field = append(c.field, p[i:]...)
				i = len(p)
				continue
			}
			c.field = append(c.field, p[i:i+j]...)
			i += j + 1
			c.state = quoteInQuotes
		case quoteInQuotes:
			b := p[i]
			i++
			switch b {
			case '"':
				c.field = append(c.field, '"')
				c.state = inQuotes
			case ',':
				c.endField()
			case '\n':
				c.endField()
				c.endRecord()
			default:
				// Not valid CSV; keep the byte rather than lose it.
				c.field = append(c.field, b)
				c.state = unquoted
			}
		}
	}
	if len(c.out) > 0 {
		_, c.err = c.w.Write(c.out)
		c.out = c.out[:0]
	}
	if c.err != nil {
		return 0, c.err
	}
	return len(p), nil
}

// indexSpecial returns the index of the first byte of b that ends or
// quotes an unquoted field (comma, newline, double quote), or -1.
func indexSpecial(b []byte) int {
	for i, c := range b {
		if c == ',' || c == '\n' || c == '"' {
			return i
		}
	}
	return -1
}

// Flush writes a last record that did not end with a newline.
func (c *CellWriter) Flush() error {
	if c.err != nil {
		return c.err
	}
	if c.state != fieldStart || c.col > 0 || len(c.field) > 0 {
		c.endField()
		c.col = 0
	}
	if len(c.out) > 0 {
		_, c.err = c.w.Write(c.out)
		c.out = c.out[:0]
	}
	return c.err
}

func (c *CellWriter) endField() {
	if c.col > 0 {
		c.out = append(c.out, ',')
	}
	v := c.field
	switch {
	case !c.header:
		c.text = append(c.text, c.isText(string(v)))
	case c.col < len(c.text) && c.text[c.col]:
		c.scratch = appendNeutralised(c.scratch[:0], v)
		v = c.scratch
	}
	// An unquoted empty field is PostgreSQL's NULL: keep it so.
	if len(v) > 0 || c.quoted {
		c.out = appendField(c.out, v)
	}
	c.col++
	c.field = c.field[:0]
	c.quoted = false
	c.state = fieldStart
}

func (c *CellWriter) endRecord() {
	c.out = append(c.out, '\n')
	c.col = 0
	c.header = true
}

// Neutralise returns the form of a text cell CellWriter writes: s
// escaped by report.Sanitize, and prefixed with ' when it then starts
// with = + - @ or '.
func Neutralise(s string) string {
	return string(appendNeutralised(nil, []byte(s)))
}

// appendNeutralised appends the neutralised form of v to dst
// (report.AppendCell).
func appendNeutralised(dst, v []byte) []byte {
	if len(v) == 0 {
		return dst
	}
	// AppendCell only reads v, and v is not changed meanwhile.
	return report.AppendCell(dst, unsafe.String(&v[0], len(v)))
}

// appendField quotes v as PostgreSQL's COPY (FORMAT csv) does: only when
// it holds a comma, a double quote, CR or LF, or is empty.
func appendField(dst, v []byte) []byte {
	if len(v) > 0 && !store.NeedsQuotes(unsafe.String(&v[0], len(v))) {
		return append(dst, v...)
	}
	dst = append(dst, '"')
	for _, b := range v {
		if b == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, b)
	}
	return append(dst, '"')
}
