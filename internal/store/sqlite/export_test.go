package sqlite

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/export"
	"github.com/memwho/memwho/internal/store"
	"github.com/memwho/memwho/internal/store/storetest"
)

// hostileKeys are names (also the seeds of store's FuzzSafeField) a process owner can choose, each aimed at one
// step of the neutralisation or of the quoting.
var hostileKeys = []string{
	"plain", "", "=HYPERLINK(\"http://x\",\"y\")", "-bash", "+1", "@SUM(A1)", "'quoted", "\ttab", "\rcr",
	"two\nlines", "a,b", "a\"b", "\"", ",", "=a,b", "-\n", "back\\slash", "\\", "\x1b[31mred", "evil\u202etxt.exe",
	"zero\u200bwidth", "\ufeffbom", "c1\u0085", "line\u2028sep", store.CleanKey("bad\xffname\x00"), "日本語", "=日本",
	"\x7f", "\"=x\"", "x,\"\n\"",
}

// TestExportSafeCSV: the SQLite store's one-pass export (ExportSafeCSV)
// gives the same bytes as its plain CSV rewritten by CellWriter, the
// path PostgreSQL takes, for hostile keys and hosts, in both tables.
func TestExportSafeCSV(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	st, err := store.Open(ctx, path, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	samples := storetest.Samples(2, "web1", "=cmd|' /C calc'!A0", "-host,x", "h\x1bost\n")
	for i := range samples {
		s := &samples[i]
		s.BootID = hostileKeys[i%len(hostileKeys)]
		for j, k := range hostileKeys {
			s.Rows = append(s.Rows, store.Row{Kind: store.KindProgram, Key: k + "#" + string(rune('a'+j)), Count: j})
			s.Rows = append(s.Rows, store.Row{Kind: store.KindCgroup, Key: k, Count: j})
		}
		store.SortRows(s.Rows)
		// SortRows may leave equal keys; the store wants them unique.
		s.Rows = dedupe(s.Rows)
	}
	storetest.Write(t, st, samples)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = store.Open(ctx, path, store.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := st.(store.SafeExporter); !ok {
		t.Fatalf("the SQLite store (%T) is not a store.SafeExporter", st)
	}
	for _, tab := range []store.Table{store.TableUsage, store.TableSamples} {
		var two bytes.Buffer
		cw := export.NewCellWriter(&two, store.IsTextColumn)
		if err := st.ExportCSV(ctx, store.Query{}, tab, cw); err != nil {
			t.Fatal(err)
		}
		if err := cw.Flush(); err != nil {
			t.Fatal(err)
		}
		var one bytes.Buffer
		if err := export.History(st, store.Query{}, tab)(ctx, &one); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(one.Bytes(), two.Bytes()) {
			a, b := bytes.Split(one.Bytes(), []byte("\n")), bytes.Split(two.Bytes(), []byte("\n"))
			for i := range min(len(a), len(b)) {
				if !bytes.Equal(a[i], b[i]) {
					t.Errorf("table %v line %d:\none pass %q\ntwo pass %q", tab, i+1, a[i], b[i])
					break
				}
			}
			t.Errorf("table %v: one pass %d bytes, two passes %d", tab, one.Len(), two.Len())
		}
		if n := bytes.Count(one.Bytes(), []byte("\n")); tab == store.TableUsage && n < len(samples)*2*len(hostileKeys) {
			t.Errorf("table %v: %d lines, want more than %d", tab, n, len(samples)*2*len(hostileKeys))
		}
	}
}

func dedupe(rows []store.Row) []store.Row {
	out := rows[:0]
	for i, r := range rows {
		if i > 0 && store.CompareRows(&rows[i-1], &r) == 0 {
			continue
		}
		out = append(out, r)
	}
	return out
}

// failAfter fails every write once n bytes have been written.
type failAfter struct{ n int }

var errFull = errors.New("disk full")

func (w *failAfter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errFull
	}
	return len(p), nil
}

// TestExportErrors: a failing writer or a canceled context stops the
// export (reading and formatting goroutines both) with that error, at
// any point of a history larger than the batches in flight.
func TestExportErrors(t *testing.T) {
	d := openTemp(t)
	ctx := context.Background()
	for i := range 5 {
		s := storetest.Big(1000, storetest.T0.Add(time.Duration(i)*time.Minute))
		if err := d.Write(ctx, &s); err != nil {
			t.Fatal(err)
		}
	}
	var all bytes.Buffer
	if err := d.ExportSafeCSV(ctx, store.Query{}, store.TableUsage, &all); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(all.Bytes(), []byte("\n")); n != 1+5*1105 {
		t.Fatalf("%d lines, want %d", n, 1+5*1105)
	}
	for _, n := range []int{0, 1, flushAt + 10, all.Len() / 2, all.Len() - 1} {
		if err := d.ExportSafeCSV(ctx, store.Query{}, store.TableUsage, &failAfter{n: n}); !errors.Is(err, errFull) {
			t.Errorf("writer failing after %d bytes: err = %v, want %v", n, err, errFull)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	w := &cancelAfter{n: all.Len() / 3, cancel: cancel}
	if err := d.ExportSafeCSV(cctx, store.Query{}, store.TableUsage, w); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled mid-export: err = %v, want %v", err, context.Canceled)
	}
	// The connection is usable again.
	var again bytes.Buffer
	if err := d.ExportSafeCSV(ctx, store.Query{}, store.TableUsage, &again); err != nil || !bytes.Equal(again.Bytes(), all.Bytes()) {
		t.Errorf("export after the failures: %v, %d bytes, want %d", err, again.Len(), all.Len())
	}
}

// cancelAfter cancels its context once n bytes have been written.
type cancelAfter struct {
	n      int
	cancel func()
}

func (w *cancelAfter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		w.cancel()
	}
	return len(p), nil
}
