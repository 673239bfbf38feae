package report

import (
	"bufio"
	"encoding/csv"
	"io"
	"strconv"

	"github.com/memwho/memwho/internal/sample"
)

// CSVHeader is the first record CSV writes, or its first columns; they
// never change order within schema memwho.report/v1. CSVSplitColumns
// follow, then CSVConnsColumn: every record has every column, so that
// a reader by position finds each where it always is.
var CSVHeader = []string{"kind", "key", "count", "ram_bytes", "private_bytes", "shared_bytes", "swap_bytes", "accuracy", "swap_source"}

// CSVSplitColumns follow CSVHeader: the group's split of ram_bytes as
// in JSON. They were added after the others so that readers of the
// earlier columns by position keep working.
var CSVSplitColumns = []string{"pss_anon_bytes", "pss_file_bytes", "pss_shmem_bytes", "private_hugetlb_bytes"}

// CSVConnsColumn ends every record: ESTABLISHED TCP sockets of the
// group with Options.Conns (--conns), empty without it (not counted,
// which 0 would misstate). It was inserted before CSVSplitColumns with
// --conns only, and the columns after it shifted.
const CSVConnsColumn = "tcp_established"

// CSV writes the header record (CSVHeader, CSVSplitColumns,
// CSVConnsColumn), one "group" record per group in the order
// given and a final "total" record (key "total"), in RFC 4180 form as
// encoding/csv writes it (LF line ends, fields quoted when needed).
// Sizes are integer bytes; accuracy and swap_source are as in JSON.
//
// The key is written as export writes its text cells (AppendCell): in
// its Sanitize form, not raw, which keeps every record on one line and
// the file safe to print, survives encoding/csv's CR LF folding inside
// quoted fields, and stays exact (undo the escapes listed at Sanitize);
// and prefixed with ' when it starts with = + - @ or ', so that a
// spreadsheet opening the file takes "=HYPERLINK(...)", a name any user
// can give a process, for text rather than a formula ("-bash" is
// written '-bash; drop the first ' of such a key to get the name back).
// Plain names are unchanged.
//
// CSV has no room for the system footer or the skipped counts; of opt it
// uses only Conns.
func CSV(w io.Writer, groups []sample.Group, total sample.Group, snap *sample.Snapshot, opt Options) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := csv.NewWriter(bw)
	header := CSVHeader[:len(CSVHeader):len(CSVHeader)]
	header = append(header, CSVSplitColumns...)
	header = append(header, CSVConnsColumn)
	if err := cw.Write(header); err != nil {
		return err
	}
	rec := make([]string, len(header))
	var key []byte
	for i := range groups {
		key = AppendCell(key[:0], groups[i].Key)
		if err := cw.Write(csvRecord(rec, "group", string(key), &groups[i], opt.Conns)); err != nil {
			return err
		}
	}
	if err := cw.Write(csvRecord(rec, "total", "total", &total, opt.Conns)); err != nil {
		return err
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return bw.Flush()
}

func csvRecord(rec []string, kind, key string, g *sample.Group, conns bool) []string {
	rec[0] = kind
	rec[1] = key
	rec[2] = strconv.Itoa(g.Count)
	rec[3] = strconv.FormatUint(g.RAM, 10)
	rec[4] = strconv.FormatUint(g.Private, 10)
	rec[5] = strconv.FormatUint(g.Shared, 10)
	rec[6] = strconv.FormatUint(g.Swap, 10)
	rec[7] = g.Accuracy().String()
	rec[8] = swapSource(g)
	i := 9
	for _, v := range [...]uint64{g.PssAnon, g.PssFile, g.PssShmem, g.PrivateHugetlb} {
		rec[i] = strconv.FormatUint(v, 10)
		i++
	}
	rec[i] = ""
	if conns {
		rec[i] = strconv.FormatUint(g.Conns, 10)
	}
	return rec
}
