package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/sample"
)

func TestMissingPIDs(t *testing.T) {
	var stderr bytes.Buffer
	if err := MissingPIDs(&stderr, nil, 2); err != nil || stderr.Len() != 0 {
		t.Errorf("none missing: %v, %q", err, stderr.String())
	}
	if err := MissingPIDs(&stderr, []int{7, 9}, 3); err != nil {
		t.Errorf("some missing: %v", err)
	}
	if want := "memwho: warning: -p: no such process: 7, 9 (or a kernel thread or zombie, which has no memory)\n"; stderr.String() != want {
		t.Errorf("some missing: stderr %q, want %q", stderr.String(), want)
	}
	stderr.Reset()
	err := MissingPIDs(&stderr, []int{7}, 1)
	if err == nil || !strings.HasPrefix(err.Error(), "-p: no such process: 7 ") || stderr.Len() != 0 {
		t.Errorf("all missing: %v, stderr %q", err, stderr.String())
	}
}

func TestConnsWarning(t *testing.T) {
	if got := ConnsWarning(0, nil); got != "" {
		t.Errorf("all counted: %q", got)
	}
	if got := ConnsWarning(3, nil); !strings.Contains(got, "--conns: 3 processes'") {
		t.Errorf("3 denied: %q", got)
	}
	if got := ConnsWarning(3, errors.New("boom")); got != "memwho: warning: --conns: boom" {
		t.Errorf("error: %q", got)
	}
}

// TestWriteFormats: Write renders the format asked for, as the renderer
// of that format does.
func TestWriteFormats(t *testing.T) {
	total := sample.Group{Key: "total", RAM: 4096}
	groups := []sample.Group{{Key: "a", RAM: 4096, PIDs: []int{1}}}
	var snap sample.Snapshot
	var opt Options
	for _, tc := range []struct {
		format Format
		render func(*bytes.Buffer) error
	}{
		{FormatTable, func(b *bytes.Buffer) error { return Table(b, groups, total, &snap, opt) }},
		{FormatJSON, func(b *bytes.Buffer) error { return JSON(b, groups, total, &snap, opt) }},
		{FormatCSV, func(b *bytes.Buffer) error { return CSV(b, groups, total, &snap, opt) }},
		{FormatTotal, func(b *bytes.Buffer) error { return TotalLine(b, total) }},
	} {
		var got, want, stderr bytes.Buffer
		if err := Write(&got, &stderr, tc.format, groups, total, nil, &snap, opt); err != nil {
			t.Fatal(err)
		}
		if err := tc.render(&want); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("format %d: %q, want %q", tc.format, got.String(), want.String())
		}
	}
}
