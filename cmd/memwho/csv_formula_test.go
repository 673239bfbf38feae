package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/cli"
)

// TestReportCSVFormulaCells: a process any user names "=HYPERLINK(...)"
// must not become a formula in the spreadsheet that opens the report's
// CSV. The report's key cells follow export's rules (report.AppendCell):
// a ' before = + - @ and ', nothing before other names. On 1db5eac the
// report wrote them raw (issue 27, finding 4).
func TestReportCSVFormulaCells(t *testing.T) {
	dir := t.TempDir()
	names := map[string]string{
		"=HYPERLINK(1)": "'=HYPERLINK(1)",
		"+1+cmd":        "'+1+cmd",
		"-2+3":          "'-2+3",
		"@SUM(A1)":      "'@SUM(A1)",
		"'quoted":       "''quoted",
		"plain=name":    "plain=name",
	}
	var pids []string
	want := map[string]string{}
	for name, cell := range names {
		pid := startNamed(t, dir, name)
		pids = append(pids, strconv.Itoa(pid))
		want[fmt.Sprintf("%s [%d]", cell[:len(cell)-len(name)]+name, pid)] = name
	}
	args := []string{"--csv", "--by", "pid", "-p", strings.Join(pids, ",")}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("memwho %v: exit %d: %s", args, code, stderr.String())
	}
	recs, err := csv.NewReader(&stdout).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v\n%s", err, stdout.String())
	}
	got := map[string]bool{}
	for _, rec := range recs[1:] {
		if rec[0] == "group" {
			got[rec[1]] = true
		}
	}
	for cell, name := range want {
		if !got[cell] {
			t.Errorf("process %q: no key cell %q in\n%s", name, cell, stdout.String())
		}
	}
}
