package render

import (
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze/compare"
)

// Why a comparison made no test is said with the numbers the comparison
// kept.
func TestNoTestReasonWords(t *testing.T) {
	for _, tt := range []struct {
		d    compare.Delta
		want string
	}{
		{compare.Delta{NoTest: compare.NoTestFewRuns, N1: 1, N2: 1}, "1 run(s) against 1: a difference between configurations needs repeated runs"},
		{compare.Delta{NoTest: compare.NoTestPFloor, N1: 2, N2: 2, MinP: 1.0 / 3, Alpha: 0.05}, "with 2 and 2 runs the smallest possible p is 0.333, so no difference can be significant at 0.05"},
		{compare.Delta{NoTest: compare.NoTestFewRequests, N1: 40, N2: 90, Percentile: 99, Need: 100}, "a p99 needs at least 100 requests a side (have 40 and 90)"},
		{compare.Delta{NoTest: compare.NoTestNoBootstrap}, "no bootstrap"},
		{compare.Delta{NoTest: compare.NoTestNotComparable}, "not comparable"},
	} {
		if got := noTestReason(tt.d); !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.d.NoTest, got, tt.want)
		}
	}
}
