package report

import (
	"io"
	"strconv"
	"strings"

	"github.com/memwho/memwho/internal/sample"
)

// Column widths of the table, in bytes (all ASCII). A figure is at most
// "1023.9 KiB" (10 bytes); RAM and swap reserve one more for a marker.
const (
	numWidth    = 10
	markedWidth = numWidth + 1
	minProcs    = len("Procs")
	minConns    = len("TCP")
)

// Markers set before a figure in the table, explained by a legend line.
const (
	// markEstimate marks RAM and swap of groups holding status-based
	// estimates (sample.Estimate).
	markEstimate = '~'
	// markSwapFull marks swap counted in full for want of SwapPss.
	markSwapFull = '*'
)

const (
	dim   = "\x1b[2m"
	reset = "\x1b[0m"
)

// Table writes groups as a ps_mem-style table, one row per group in the
// order given, then a rule, the total row and, when any figure is not
// exact, a legend line per marker. With opt.System and snap.MeminfoOK it
// adds the system footer. Sizes are in binary units (KiB = 1024 bytes)
// with one decimal; names are escaped with Sanitize. The whole table is
// built in memory and written with one Write call.
//
// snap may be nil; it supplies the meminfo figures and the counts of
// denied and malformed processes that explain estimates.
func Table(w io.Writer, groups []sample.Group, total sample.Group, snap *sample.Snapshot, opt Options) error {
	t := table{opt: opt, procsW: minProcs, connsW: minConns}
	if opt.ShowCount {
		t.procsW = max(t.procsW, decimalLen(total.Count))
		for i := range groups {
			t.procsW = max(t.procsW, decimalLen(groups[i].Count))
		}
	}
	if opt.Conns {
		t.connsW = max(t.connsW, decimalLen(int(total.Conns)))
	}
	// About 80 bytes a row; names longer than that grow the buffer once
	// or twice.
	buf := make([]byte, 0, 80*(len(groups)+4)+512)

	buf = t.header(buf)
	estimated, swapFull := total.Estimated > total.Paced, swapMarked(&total)
	paced := total.Paced > 0
	for i := range groups {
		g := &groups[i]
		estimated = estimated || g.Estimated > g.Paced
		paced = paced || g.Paced > 0
		swapFull = swapFull || swapMarked(g)
		buf = t.row(buf, g, false)
	}
	buf = t.rule(buf)
	buf = t.row(buf, &total, true)

	if paced {
		buf = t.mark(buf, markEstimate)
		buf = append(buf, " read page by page so as not to stall a large process: the shares of the pages it shares with others are estimated; its private memory is exact\n"...)
	}
	if estimated {
		buf = t.mark(buf, markEstimate)
		buf = append(buf, " estimate from /proc/PID/status (RSS; shared pages counted in full by each process): "...)
		switch {
		case opt.Fast:
			buf = append(buf, "exact figures were not read (--fast)"...)
		case snap != nil && (snap.Denied > 0 || snap.Malformed > 0):
			if snap.Denied > 0 {
				buf = append(buf, "permission denied for the page-table walk (smaps_rollup)"...)
			}
			if snap.Denied > 0 && snap.Malformed > 0 {
				buf = append(buf, "; "...)
			}
			if snap.Malformed > 0 {
				buf = append(buf, "smaps_rollup could not be parsed"...)
			}
		default:
			buf = append(buf, "smaps_rollup could not be read"...)
		}
		buf = append(buf, '\n')
	}
	if swapFull {
		buf = t.mark(buf, markSwapFull)
		buf = append(buf, " swap counted in full: no SwapPss on this kernel, so swapped pages shared between processes count once per process\n"...)
	}
	if opt.System && snap != nil && snap.MeminfoOK {
		buf = t.system(buf, opt.host(&total), &snap.Meminfo)
	}
	_, err := w.Write(buf)
	return err
}

// table holds the layout chosen for one call of Table.
type table struct {
	opt    Options
	procsW int // width of the Procs column
	connsW int // width of the TCP column (with opt.Conns)
}

func (t *table) header(buf []byte) []byte {
	buf = padLeft(buf, "Private", numWidth)
	buf = append(buf, "  +  "...)
	buf = padLeft(buf, "Shared", numWidth)
	buf = append(buf, "  =  "...)
	buf = padLeft(buf, "RAM used", markedWidth)
	buf = append(buf, "  "...)
	buf = padLeft(buf, "Swap", markedWidth)
	if t.opt.Split {
		for _, h := range [...]string{"Anon", "File", "Shmem"} {
			buf = append(buf, "  "...)
			buf = padLeft(buf, h, markedWidth)
		}
	}
	if t.opt.Conns {
		buf = append(buf, "  "...)
		buf = padLeft(buf, "TCP", t.connsW)
	}
	if t.opt.ShowCount {
		buf = append(buf, "  "...)
		buf = padLeft(buf, "Procs", t.procsW)
	}
	buf = append(buf, "  "...)
	buf = Sanitize(buf, t.opt.keyHeader())
	return append(buf, '\n')
}

// rule is a line of dashes as wide as the header.
func (t *table) rule(buf []byte) []byte {
	n := 2*numWidth + 2*len("  +  ") + 2*markedWidth + 2
	if t.opt.Split {
		n += 3 * (2 + markedWidth)
	}
	if t.opt.Conns {
		n += 2 + t.connsW
	}
	if t.opt.ShowCount {
		n += 2 + t.procsW
	}
	n += 2 + len(t.opt.keyHeader())
	for range n {
		buf = append(buf, '-')
	}
	return append(buf, '\n')
}

// row writes one group, or the total (figures for private and shared left
// out, as ps_mem does, and the name "total").
func (t *table) row(buf []byte, g *sample.Group, isTotal bool) []byte {
	if isTotal {
		buf = appendSpaces(buf, 2*numWidth+2*len("  +  "))
	} else {
		buf = t.cell(buf, 0, g.Private, numWidth)
		buf = append(buf, "  +  "...)
		buf = t.cell(buf, 0, g.Shared, numWidth)
		buf = append(buf, "  =  "...)
	}
	ramMark, swapMark := marks(g)
	buf = t.cell(buf, ramMark, g.RAM, markedWidth)
	buf = append(buf, "  "...)
	buf = t.cell(buf, swapMark, g.Swap, markedWidth)
	if t.opt.Split {
		for _, v := range [...]uint64{g.PssAnon, g.PssFile, g.PssShmem} {
			buf = append(buf, "  "...)
			buf = t.cell(buf, ramMark, v, markedWidth)
		}
	}
	if t.opt.Conns {
		buf = append(buf, "  "...)
		var tmp [24]byte
		buf = padLeftBytes(buf, strconv.AppendUint(tmp[:0], g.Conns, 10), t.connsW)
	}
	if t.opt.ShowCount {
		buf = append(buf, "  "...)
		var tmp [24]byte
		buf = padLeftBytes(buf, strconv.AppendInt(tmp[:0], int64(g.Count), 10), t.procsW)
	}
	buf = append(buf, "  "...)
	if isTotal {
		buf = append(buf, "total"...)
	} else {
		buf = Sanitize(buf, g.Key)
	}
	return append(buf, '\n')
}

// marks returns the markers for g's RAM and swap figures (0 for none).
// A swap of 0 B is exact however it was read, so it is never marked.
func marks(g *sample.Group) (ram, swap byte) {
	if g.Estimated > 0 {
		ram = markEstimate
		if g.SwapEstimated() {
			swap = markEstimate
		}
		return ram, swap
	}
	if swapMarked(g) {
		swap = markSwapFull
	}
	return 0, swap
}

// swapMarked reports whether g's swap figure gets markSwapFull.
func swapMarked(g *sample.Group) bool {
	return g.Estimated == 0 && g.SwapPssMissing && g.Swap > 0
}

// cell writes n bytes in human units right-aligned in width, preceded by
// mark when mark is not 0.
func (t *table) cell(buf []byte, mark byte, n uint64, width int) []byte {
	var tmp [24]byte
	return t.markedNum(buf, mark, HumanBytes(tmp[:0], n), width)
}

// markedNum writes num right-aligned in width, preceded by mark when mark
// is not 0.
func (t *table) markedNum(buf []byte, mark byte, num []byte, width int) []byte {
	if mark == 0 {
		return padLeftBytes(buf, num, width)
	}
	buf = appendSpaces(buf, width-len(num)-1)
	buf = t.mark(buf, mark)
	return append(buf, num...)
}

// mark writes a marker character, dimmed when colour is on.
func (t *table) mark(buf []byte, mark byte) []byte {
	if t.opt.Color {
		buf = append(buf, dim...)
		buf = append(buf, mark)
		return append(buf, reset...)
	}
	return append(buf, mark)
}

// Layout of the system footer: a label padded to labelWidth, then the
// figure right-aligned in markedWidth, then an optional note.
const labelWidth = 38

// ramLineFromProcs reports whether line i of the RAM ledger is computed
// from the processes' figures (the processes: lines and the remainder),
// and so is an estimate when any of them is.
func ramLineFromProcs(lines []sample.LedgerLine, i int) bool {
	return strings.HasPrefix(lines[i].Name, "processes:") || i == len(lines)-1
}

// swapLineFromProcs is ramLineFromProcs for the swap ledger: its first
// line (the processes' swap) and the remainder.
func swapLineFromProcs(lines []sample.LedgerLine, i int) bool {
	return i == 0 || i == len(lines)-1
}

// system writes the footer: the host ledger (sample.HostLedger), whose
// lines add up to MemTotal and SwapTotal, each with its source, then
// free's "used" set against the processes' total.
//
// procs is every process of the snapshot, not only the rows shown: the
// ledger is the host's. Lines of 0 bytes are left out here (JSON lists
// every one), except free and the remainder.
func (t *table) system(buf []byte, procs *sample.Group, m *sample.Meminfo) []byte {
	procMark, procSwapMark := marks(procs)
	var availMark byte
	if m.Available != sample.AvailableKernel {
		availMark = markEstimate
	}
	l := sample.HostLedger(procs, m)
	buf = append(buf, "\nSystem ledger (/proc/meminfo): every byte of RAM, lines of 0 B left out\n"...)
	for i, line := range l.RAM {
		var mark byte
		if ramLineFromProcs(l.RAM, i) {
			mark = procMark
		}
		buf = t.ledgerLine(buf, line, mark, i == len(l.RAM)-1 || line.Name == "free")
		if line.Name == sample.ShmemLedgerLine {
			buf = t.tmpfs(buf)
		}
	}
	buf = t.sysLine(buf, "= total RAM", 0, m.MemTotal, "MemTotal")

	buf = append(buf, '\n')
	buf = t.sysLine(buf, "free's \"used\"", availMark, m.Used(), "MemTotal - MemAvailable, as procps-ng 4 computes it; 3.3 showed ")
	var tmp [24]byte
	buf = append(buf, appendSignedBytes(tmp[:0], l.FreeUsedProcps3)...)
	buf = append(buf, " (MemTotal - MemFree - Buffers - Cached - SReclaimable)\n"...)
	buf = t.sysLine(buf, "used by processes (PSS)", procMark, procs.RAM, "every process, as the ledger's processes: lines (the table's total is of the rows it shows)")
	buf = append(buf, '\n')
	diff := m.NotInProcess(procs.RAM)
	buf = append(buf, "  "...)
	buf = padRight(buf, "free's used, not in any process", labelWidth)
	buf = t.signedCell(buf, max(availMark, procMark), diff)
	if diff >= 0 {
		buf = append(buf, "  free's used minus the processes: kernel memory, page cache and shmem/tmpfs MemAvailable cannot reclaim, huge page pools, zswap/zram\n"...)
	} else {
		// See Meminfo.NotInProcess: mapped page cache is both in the
		// processes' PSS and in MemAvailable.
		buf = append(buf, "  negative: page cache mapped by processes is reclaimable and counted as available\n"...)
	}

	if m.SwapTotal == 0 {
		buf = append(buf, "\nSwap ledger: no swap (SwapTotal 0)\n"...)
	} else {
		buf = append(buf, "\nSwap ledger: every byte of swap\n"...)
		for i, line := range l.Swap {
			var mark byte
			if swapLineFromProcs(l.Swap, i) {
				mark = procSwapMark
			}
			buf = t.ledgerLine(buf, line, mark, i > 0)
		}
		if m.SwapCached > 0 {
			start := len(buf)
			buf = append(buf, "    also in RAM: swap cache"...)
			buf = t.subLine(buf, start, m.SwapCached, sample.SwapCacheSource)
		}
		buf = t.sysLine(buf, "= total swap", 0, m.SwapTotal, "SwapTotal")
	}
	switch m.Available {
	case sample.AvailableEstimated:
		buf = t.mark(buf, markEstimate)
		buf = append(buf, " no MemAvailable in /proc/meminfo: estimated as the kernel does, from MemFree, the file LRUs, reclaimable slab and the zone watermarks\n"...)
	case sample.AvailableUpperBound:
		buf = t.mark(buf, markEstimate)
		buf = append(buf, " no MemAvailable in /proc/meminfo and no /proc/zoneinfo: estimated from MemFree, the file LRUs and reclaimable slab without the zone watermarks; free's used may be understated\n"...)
	}
	return buf
}

// tmpfsSource is the note of the first tmpfs sub-line.
const tmpfsSource = "statfs: blocks in use; not summed: a tmpfs's pages may be swapped out or mapped by processes"

// tmpfs writes the tmpfs mounts (Options.Tmpfs) as sub-lines of the
// shmem/tmpfs line, mount points sanitised, those of 0 bytes left out.
func (t *table) tmpfs(buf []byte) []byte {
	first := true
	for _, m := range t.opt.Tmpfs {
		if m.Used == 0 {
			continue
		}
		start := len(buf)
		buf = append(buf, "    tmpfs "...)
		buf = Sanitize(buf, m.Mount)
		source := ""
		if first {
			source, first = tmpfsSource, false
		}
		buf = t.subLine(buf, start, m.Used, source)
	}
	if t.opt.TmpfsMore > 0 {
		buf = append(buf, "    and "...)
		buf = strconv.AppendInt(buf, int64(t.opt.TmpfsMore), 10)
		buf = append(buf, " more tmpfs mounts (at most "...)
		buf = strconv.AppendInt(buf, int64(len(t.opt.Tmpfs)), 10)
		buf = append(buf, " listed)\n"...)
	}
	return buf
}

// subLine ends a ledger sub-line whose label buf holds from start: n
// bytes under the ledger's figures, then source when not empty. The
// sub-lines are for information and not summed (tmpfs mounts, the swap
// cache).
func (t *table) subLine(buf []byte, start int, n uint64, source string) []byte {
	buf = appendSpaces(buf, labelWidth+2-(len(buf)-start))
	buf = t.cell(buf, 0, n, markedWidth)
	if source != "" {
		buf = append(buf, "  "...)
		buf = append(buf, source...)
	}
	return append(buf, '\n')
}

// ledgerLine writes one ledger line, left out when it is 0 bytes unless
// always.
func (t *table) ledgerLine(buf []byte, line sample.LedgerLine, mark byte, always bool) []byte {
	if line.Bytes == 0 && !always {
		return buf
	}
	buf = append(buf, "  "...)
	buf = padRight(buf, line.Name, labelWidth)
	buf = t.signedCell(buf, mark, line.Bytes)
	buf = append(buf, "  "...)
	buf = append(buf, line.Source...)
	return append(buf, '\n')
}

// signedCell writes a signed number of bytes right-aligned like cell,
// preceded by mark when mark is not 0.
func (t *table) signedCell(buf []byte, mark byte, v int64) []byte {
	var tmp [24]byte
	return t.markedNum(buf, mark, appendSignedBytes(tmp[:0], v), markedWidth)
}

// sysLine writes a label, n bytes and a note; a note ending in a space
// is continued by the caller, which ends the line.
func (t *table) sysLine(buf []byte, label string, mark byte, n uint64, note string) []byte {
	buf = append(buf, "  "...)
	buf = padRight(buf, label, labelWidth)
	buf = t.cell(buf, mark, n, markedWidth)
	if note == "" {
		return append(buf, '\n')
	}
	buf = append(buf, "  "...)
	buf = append(buf, note...)
	if strings.HasSuffix(note, " ") {
		return buf
	}
	return append(buf, '\n')
}

func appendSpaces(buf []byte, n int) []byte {
	for ; n > 0; n-- {
		buf = append(buf, ' ')
	}
	return buf
}

func padLeft(buf []byte, s string, width int) []byte {
	return append(appendSpaces(buf, width-len(s)), s...)
}

func padLeftBytes(buf, s []byte, width int) []byte {
	return append(appendSpaces(buf, width-len(s)), s...)
}

func padRight(buf []byte, s string, width int) []byte {
	return appendSpaces(append(buf, s...), width-len(s))
}

// decimalLen is the number of bytes strconv.Itoa(n) would produce.
func decimalLen(n int) int {
	l := 1
	if n < 0 {
		l++
		n = -n
	}
	for n >= 10 {
		n /= 10
		l++
	}
	return l
}
