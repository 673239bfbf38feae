package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/memwho/memwho/internal/sample"
)

func TestDiffRender(t *testing.T) {
	changes := sample.Diff(
		[]sample.Group{{Key: "web", RAM: 1 << 20, Count: 1}, {Key: "\x1b[2Jevil\n", RAM: 4096, Count: 1, Estimated: 1}},
		[]sample.Group{{Key: "web", RAM: 3 << 20, Swap: 4096, Count: 2}})
	b := DiffSide{Name: "a.mwsnap", Taken: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	a := DiffSide{Name: "b.mwsnap", Taken: b.Taken.Add(time.Hour)}
	var tab bytes.Buffer
	if err := DiffTable(&tab, changes, b, a, "Program"); err != nil {
		t.Fatal(err)
	}
	want := `Before: a.mwsnap, 2026-11-23T10:00:00Z
After:  b.mwsnap, 2026-11-23T11:00:00Z (1h0m0s later)

  RAM before      RAM after        Change   Swap change    Procs  Change    Program
     1.0 MiB        3.0 MiB      +2.0 MiB      +4.0 KiB       1->2  grew      web
     4.0 KiB            0 B ~    -4.0 KiB           0 B       1->0  vanished  \x1b[2Jevil\n
-----------------------------------------------------------------------------------
     1.0 MiB        3.0 MiB ~    +2.0 MiB      +4.0 KiB       2->2            total
~ an estimate on one side or both (RSS-based: see memwho --help)
`
	if tab.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", tab.String(), want)
	}
	var js bytes.Buffer
	if err := DiffJSON(&js, changes, b, a, "program"); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Changes []struct {
			Key    string `json:"key"`
			Change string `json:"change"`
			Delta  int64  `json:"ram_change_bytes"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(js.Bytes(), &v); err != nil || len(v.Changes) != 2 || v.Changes[1].Key != "\x1b[2Jevil\n" || v.Changes[0].Delta != 2<<20 {
		t.Errorf("JSON %v: %+v\n%s", err, v, js.String())
	}
	if strings.ContainsRune(js.String(), 0x1b) || strings.Count(js.String(), "\n") != 1 {
		t.Errorf("JSON holds a raw escape or newline: %q", js.String())
	}
}
