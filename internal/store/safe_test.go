package store_test

import (
	"bytes"
	"testing"

	"github.com/memwho/memwho/internal/export"
	"github.com/memwho/memwho/internal/store"
)

// FuzzSafeField: store.AppendSafeField, the one-pass writer of a text
// cell, gives exactly what CellWriter makes of the plain CSV field.
func FuzzSafeField(f *testing.F) {
	for _, k := range []string{"plain", "", "=HYPERLINK(\"http://x\",\"y\")", "-bash", "'q", "\ttab", "two\nlines", "a,b", "a\"b",
		"=a,b", "-\n", "back\\slash", "\x1b[31mred", "evil\u202etxt.exe", "\ufeffbom", "c1\u0085", "bad\xff", "\"=x\"", "x,\"\n\""} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in := append([]byte("key,n\n"), store.AppendCSVField(nil, s)...)
		in = append(in, ",1\n"...)
		var two bytes.Buffer
		cw := export.NewCellWriter(&two, func(c string) bool { return c == "key" })
		if _, err := cw.Write(in); err != nil {
			t.Fatal(err)
		}
		if err := cw.Flush(); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimPrefix(two.Bytes(), []byte("key,n\n"))
		got := append(store.AppendSafeField([]byte(nil), s), ",1\n"...)
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendSafeField(%q) = %q, CellWriter gives %q", s, got, want)
		}
		// Appending after existing bytes changes nothing.
		if got2 := store.AppendSafeField([]byte("prefix"), s); !bytes.Equal(got2[6:], got[:len(got)-3]) {
			t.Fatalf("AppendSafeField after a prefix = %q", got2)
		}
	})
}
