package agent

import (
	"math"
	"strconv"

	"github.com/memwho/memwho/internal/report"
)

// This file writes the Prometheus text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/), by hand
// into a reused []byte: about 60x cheaper than client_golang at our
// cardinality (see DEPS.md) and allocation-free.
//
// The format's rules that matter here:
//   - "# HELP" and "# TYPE" come once per metric family, before its
//     samples, and a family's samples are contiguous;
//   - label values are UTF-8 with \, " and newline escaped as \\, \" and
//     \n; HELP text escapes \ and newline.
//
// Group and process names are raw kernel bytes (any byte but NUL). They
// first go through report.Sanitize, the same escaping the table uses:
// it is injective (two different names never come out equal, so no two
// series collide) and its output is printable, valid UTF-8.

// expo appends exposition text to b.
type expo struct {
	b       []byte
	scratch []byte // for Sanitize
}

// family writes the HELP and TYPE lines of a family.
func (e *expo) family(name, typ, help string) {
	e.b = append(e.b, "# HELP "...)
	e.b = append(e.b, name...)
	e.b = append(e.b, ' ')
	for i := 0; i < len(help); i++ {
		switch c := help[i]; c {
		case '\\':
			e.b = append(e.b, `\\`...)
		case '\n':
			e.b = append(e.b, `\n`...)
		default:
			e.b = append(e.b, c)
		}
	}
	e.b = append(e.b, "\n# TYPE "...)
	e.b = append(e.b, name...)
	e.b = append(e.b, ' ')
	e.b = append(e.b, typ...)
	e.b = append(e.b, '\n')
}

// name starts a sample line: the metric name and, when labels follow,
// the opening brace.
func (e *expo) name(name string, labels bool) {
	e.b = append(e.b, name...)
	if labels {
		e.b = append(e.b, '{')
	}
}

// label writes one label pair; first says whether it is the first one.
// The value is sanitised and escaped.
func (e *expo) label(key, value string, first bool) {
	e.labelKey(key, first)
	e.scratch = report.Sanitize(e.scratch[:0], value)
	e.b = appendEscaped(e.b, e.scratch)
	e.b = append(e.b, '"')
}

// labelRaw writes a label whose value is known to be safe (a number, a
// fixed word).
func (e *expo) labelRaw(key, value string, first bool) {
	e.labelKey(key, first)
	e.b = append(e.b, value...)
	e.b = append(e.b, '"')
}

// labelInt writes a label with an integer value.
func (e *expo) labelInt(key string, v int, first bool) {
	e.labelKey(key, first)
	e.b = strconv.AppendInt(e.b, int64(v), 10)
	e.b = append(e.b, '"')
}

// labelKey starts a label pair, up to the value's opening quote.
func (e *expo) labelKey(key string, first bool) {
	if !first {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, key...)
	e.b = append(e.b, '=', '"')
}

// byReason writes the samples of a family labelled by reason: one for each
// of reasons, with the count at the same index.
func (e *expo) byReason(name string, reasons []string, counts ...uint64) {
	for i, r := range reasons {
		e.name(name, true)
		e.labelRaw("reason", r, true)
		e.uint(counts[i], true)
	}
}

// uint closes the labels (if any) and writes the value; int and float
// likewise.
func (e *expo) uint(v uint64, labels bool) {
	e.close(labels)
	e.b = strconv.AppendUint(e.b, v, 10)
	e.b = append(e.b, '\n')
}

func (e *expo) int(v int64, labels bool) {
	e.close(labels)
	e.b = strconv.AppendInt(e.b, v, 10)
	e.b = append(e.b, '\n')
}

func (e *expo) float(v float64, labels bool) {
	e.close(labels)
	switch {
	case math.IsNaN(v):
		e.b = append(e.b, "NaN"...)
	case math.IsInf(v, 1):
		e.b = append(e.b, "+Inf"...)
	case math.IsInf(v, -1):
		e.b = append(e.b, "-Inf"...)
	default:
		e.b = strconv.AppendFloat(e.b, v, 'g', -1, 64)
	}
	e.b = append(e.b, '\n')
}

func (e *expo) close(labels bool) {
	if labels {
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, ' ')
}

// Shorthands for the common shapes: a family of one sample without
// labels.

func (e *expo) gaugeUint(name, help string, v uint64) {
	e.single(name, "gauge", help)
	e.uint(v, false)
}

func (e *expo) gaugeInt(name, help string, v int64) {
	e.single(name, "gauge", help)
	e.int(v, false)
}

func (e *expo) gaugeFloat(name, help string, v float64) {
	e.single(name, "gauge", help)
	e.float(v, false)
}

func (e *expo) counterUint(name, help string, v uint64) {
	e.single(name, "counter", help)
	e.uint(v, false)
}

func (e *expo) counterFloat(name, help string, v float64) {
	e.single(name, "counter", help)
	e.float(v, false)
}

// single starts the one sample of a family without labels.
func (e *expo) single(name, typ, help string) {
	e.family(name, typ, help)
	e.name(name, false)
}

// summary writes a summary without quantiles: its _sum and _count.
func (e *expo) summary(name, help string, sum float64, count uint64) {
	e.family(name, "summary", help)
	e.b = append(e.b, name...)
	e.b = append(e.b, "_sum"...)
	e.float(sum, false)
	e.b = append(e.b, name...)
	e.b = append(e.b, "_count"...)
	e.uint(count, false)
}

// appendEscaped appends s with \, " and newline escaped for a label
// value.
func appendEscaped(dst, s []byte) []byte {
	for _, c := range s {
		switch c {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '"':
			dst = append(dst, '\\', '"')
		case '\n':
			dst = append(dst, '\\', 'n')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
