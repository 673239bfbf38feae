// Package browsertest renders memwho's pages (report --html, leaks
// --html) in headless Chromium for the tests of both commands.
package browsertest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Chromium returns the chromium command, or skips t with the reason.
func Chromium(t testing.TB) string {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (apt-get install chromium): the pages are not rendered")
	}
	return chromium
}

// Run runs headless Chromium on args and returns its standard output
// and error.
func Run(t testing.TB, chromium string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args = append([]string{"--headless=new", "--no-sandbox", "--disable-gpu",
		"--user-data-dir=" + t.TempDir(), "--window-size=1200,900"}, args...)
	cmd := exec.CommandContext(ctx, chromium, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %q: %v\n%s", args, err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

// Render takes a screenshot of the page at path (name.png in a temporary
// directory, or in $MEMWHO_SCREENSHOT), fails t on any console line, then
// dumps the page's DOM, fails t unless the page's own check set
// data-check="ok", and returns the DOM.
func Render(t testing.TB, chromium, path, name string) string {
	t.Helper()
	shot := filepath.Join(t.TempDir(), name+".png")
	if dir := os.Getenv("MEMWHO_SCREENSHOT"); dir != "" {
		shot = filepath.Join(dir, name+".png")
	}
	_, logs := Run(t, chromium, "--enable-logging=stderr", "--v=0", "--screenshot="+shot, "file://"+path)
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("console: %s", line)
		}
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 1000 {
		t.Errorf("no screenshot: %v", err)
	}
	dom, _ := Run(t, chromium, "--dump-dom", "file://"+path)
	if !strings.Contains(dom, `data-check="ok"`) {
		t.Errorf("the page's self-check: %s", regexp.MustCompile(`data-check="[^"]*"`).FindString(dom))
	}
	return dom
}
