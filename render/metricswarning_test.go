package render

import (
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/analyze/servermetrics"
	"github.com/headroom-llm/headroom/internal/texttest"
)

// Each of the metrics reader's warnings is said in words that name the
// series and what is wrong with it.
func TestMetricsWarningWords(t *testing.T) {
	for _, tt := range []struct {
		w    servermetrics.Warning
		want []string
	}{
		{servermetrics.Warning{Kind: servermetrics.WarnAboveOne, Metric: "vllm:kv_cache_usage_perc", Labels: `engine="0"`, Quantity: servermetrics.KVUsage, Value: 42},
			[]string{`vllm:kv_cache_usage_perc{engine="0"} = 42 is above 1`, "percent, not fraction"}},
		{servermetrics.Warning{Kind: servermetrics.WarnBadLE, Metric: "vllm:e2e", Labels: `le="x"`, LE: "x"},
			[]string{`vllm:e2e_bucket{le="x"}: bad le "x"`}},
		{servermetrics.Warning{Kind: servermetrics.WarnBoundsChanged, Metric: "vllm:e2e", FromNS: 1, ToNS: 2},
			[]string{"vllm:e2e{}: bucket bounds changed between scrapes at 1 and 2 ns"}},
		{servermetrics.Warning{Kind: servermetrics.WarnNoInfBucket, Metric: "vllm:e2e"},
			[]string{"no +Inf bucket; quantiles are NaN"}},
	} {
		got := noteText(analyze.Note{Kind: analyze.NoteMetricsWarning, Metrics: &tt.w})
		texttest.Contains(t, "the "+tt.w.Kind+" warning", got, tt.want...)
		if !strings.HasPrefix(got, "Server metrics: ") {
			t.Errorf("%q", got)
		}
	}
}
