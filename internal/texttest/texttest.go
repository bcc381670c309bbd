// Package texttest checks what tests of many packages read back: a report,
// a command's output, an error, a log.
package texttest

import (
	"strings"
	"testing"
)

// shown is how long a text may be and still be printed under its misses.
const shown = 4000

// Contains fails the test, without stopping it, for each of wants that
// text lacks, naming the text as what; a short text is printed once after
// the misses so that the failure shows what it says instead.
func Contains(tb testing.TB, what, text string, wants ...string) {
	tb.Helper()
	missed := false
	for _, want := range wants {
		if !strings.Contains(text, want) {
			tb.Errorf("%s lacks %q", what, want)
			missed = true
		}
	}
	if missed && len(text) <= shown {
		tb.Logf("%s:\n%s", what, text)
	}
}
