package completion

import (
	"os/exec"
	"testing"
)

// TestQuote: help texts reach the scripts inside single quotes.
func TestQuote(t *testing.T) {
	if got, want := sq(`it's a\b`), `'it'\''s a\b'`; got != want {
		t.Errorf("sq = %s, want %s", got, want)
	}
	if got, want := fishQuote(`it's a\b`), `'it\'s a\\b'`; got != want {
		t.Errorf("fishQuote = %s, want %s", got, want)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	in := `it's "a\b" $x`
	out, err := exec.Command(bash, "-c", "printf %s "+sq(in)).Output()
	if err != nil || string(out) != in {
		t.Errorf("bash reads %s as %q (%v), want %q", sq(in), out, err, in)
	}
}
