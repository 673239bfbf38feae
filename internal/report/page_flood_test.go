package report

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/memwho/memwho/internal/sample"
)

// TestPageManyProcesses is the flood: one user's 50,000
// processes, each named with 15 bytes that Sanitize and HTML escaping
// expand most (a C1 byte: \x9b, four bytes each). The page grows with
// the processes it draws (one rectangle and title each, in both
// treemaps) and nothing more: this pins its size per process so that a
// change that makes it grow faster is seen. (It is not a time test: the
// report's own cost is in BenchmarkHTML.)
func TestPageManyProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("50,000 processes")
	}
	const n = 50000
	name := strings.Repeat("\x9b", 15)
	g := sample.Group{Key: name, Count: n}
	var procs []sample.Process
	for i := range n {
		g.PIDs = append(g.PIDs, 1000+i)
		procs = append(procs, sample.Process{PID: 1000 + i, Name: name, RAM: 4096, Swap: 4096})
		g.RAM += 4096
		g.Swap += 4096
	}
	groups := []sample.Group{g}
	var b bytes.Buffer
	if err := HTML(&b, groups, sample.Total(groups), procs, nil, Options{By: "user"}); err != nil {
		t.Fatal(err)
	}
	per := b.Len() / n
	t.Logf("%d processes: %d bytes, %d bytes per process", n, b.Len(), per)
	if per > 2048 {
		t.Errorf("%d bytes per process (limit 2 KiB): the page grows faster than its rectangles", per)
	}
	if strings.Count(b.String(), "<script") != 1 || !strings.Contains(b.String(), strconv.Itoa(n)) {
		t.Errorf("the page lacks its script or its count")
	}
}
