package contract_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/headroom-llm/headroom/analyze/servermetrics"
	"github.com/headroom-llm/headroom/collect/telemetry"
	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/promtext"
	"github.com/headroom-llm/headroom/rundir"
)

// TestServerMetrics runs the sweep's real scraper
// against a server exposing vLLM-style metrics (a whole bucket bound,
// le="1", a label that needs escaping) and a real SGLang scrape, writes
// the rows into a run directory as a sweep does, reads them back and
// extracts the series: every row comes back identical, labels included,
// and the analyzer finds the quantities, the label sets and the
// per-interval quantiles known by construction.
func TestServerMetrics(t *testing.T) {
	sglang, err := os.ReadFile(filepath.Join("..", "..", "testdata", "metrics", "sglang-docs-llama31-8b.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// Between the two scrapes 10 requests arrive: 2 with TTFT <= 0.5 s,
	// 8 more <= 1 s, none slower. The interval's median is then in the
	// (0.5, 1] bucket: 0.5 + (5-2)/8 * 0.5 = 0.6875 s by linear interpolation.
	vllm := func(scrape int) string {
		le05, le1 := 3, 4
		if scrape == 2 {
			le05, le1 = 5, 14
		}
		return fmt.Sprintf(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="org/m \"q\""} %d
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="org/m \"q\""} 0.%d
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.5",model_name="org/m \"q\""} %d
vllm:time_to_first_token_seconds_bucket{le="1",model_name="org/m \"q\""} %d
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="org/m \"q\""} %d
vllm:time_to_first_token_seconds_sum{model_name="org/m \"q\""} %d
vllm:time_to_first_token_seconds_count{model_name="org/m \"q\""} %d
`, scrape, scrape+2, le05, le1, le1, le1, le1)
	}
	var mu sync.Mutex
	scrape := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		scrape++
		n := scrape
		mu.Unlock()
		fmt.Fprint(w, vllm(min(n, 2)))
		if r.URL.Path == "/sglang" {
			w.Write(sglang)
		}
	}))
	defer srv.Close()

	var written []rundir.ServerMetricRow
	for i, at := range []int64{1e9, 3e9} {
		s := &telemetry.Scraper{URL: srv.URL + "/metrics", Now: func() int64 { return at }}
		if i == 1 {
			s.URL = srv.URL + "/sglang"
		}
		rows, err := s.Scrape(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, rows...)
	}
	dir := t.TempDir()
	if err := rundir.WriteTable(dir, rundir.TableServerMetrics, written); err != nil {
		t.Fatal(err)
	}
	read := runtest.Table[rundir.ServerMetricRow](t, dir, rundir.TableServerMetrics)
	if !reflect.DeepEqual(read, written) {
		t.Fatalf("the table does not read back as written: %d rows written, %d read", len(written), len(read))
	}
	for _, r := range read {
		m, err := promtext.ParseLabels(r.Labels)
		if err != nil || promtext.CanonicalLabels(m) != r.Labels {
			t.Errorf("%s{%s}: labels not canonical (%v)", r.Name, r.Labels, err)
		}
		if strings.Contains(r.Labels, `le="1"`) {
			t.Errorf("%s{%s}: a whole bound not written as Prometheus 3 does (le=\"1.0\")", r.Name, r.Labels)
		}
	}

	const model = `model_name="org/m \"q\""`
	res, err := servermetrics.Extract(samples(read), servermetrics.Options{Engine: "vllm"})
	if err != nil {
		t.Fatal(err)
	}
	var kv *servermetrics.Series
	for i := range res.Gauges {
		if res.Gauges[i].Quantity == servermetrics.KVUsage {
			kv = &res.Gauges[i]
		}
	}
	if kv == nil || kv.Labels != model || len(kv.Points) != 2 || kv.Points[0] != (servermetrics.Point{TimeNS: 1e9, Value: 0.3}) || kv.Points[1].Value != 0.4 {
		t.Errorf("KV usage series %+v", kv)
	}
	var ttft *servermetrics.QuantileSeries
	for i := range res.Histograms {
		if res.Histograms[i].Quantity == servermetrics.TTFT {
			ttft = &res.Histograms[i]
		}
	}
	if ttft == nil || ttft.Labels != model || len(ttft.Points) != 1 {
		t.Fatalf("TTFT series %+v", ttft)
	}
	p := ttft.Points[0]
	if p.StartNS != 1e9 || p.EndNS != 3e9 || p.Count != 10 || p.Sum != 10 || math.Abs(p.Values[0]-0.6875) > 1e-12 {
		t.Errorf("TTFT interval %+v, want 10 requests, median 0.6875 s", p)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %v", res.Warnings)
	}

	// The real SGLang scrape reads as its engine with its model label.
	var sg []rundir.ServerMetricRow
	for _, r := range read {
		if strings.HasPrefix(r.Name, "sglang:") {
			sg = append(sg, r)
		}
	}
	if e := servermetrics.DetectEngine(samples(sg)); e != "sglang" {
		t.Fatalf("engine %q", e)
	}
	sres, err := servermetrics.Extract(samples(sg), servermetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range sres.Gauges {
		if g.Quantity == servermetrics.Waiting {
			found = g.Labels == `model_name="meta-llama/Llama-3.1-8B-Instruct"` && g.Points[0].Value == 2826 && g.Points[0].TimeNS == 3e9
		}
	}
	if !found {
		t.Errorf("SGLang queue gauge not read back: %+v", sres.Gauges)
	}
}

// samples converts table rows as the analyzer does (analyze/observe.go).
func samples(rows []rundir.ServerMetricRow) []servermetrics.Sample {
	out := make([]servermetrics.Sample, len(rows))
	for i, r := range rows {
		out[i] = servermetrics.Sample(r)
	}
	return out
}
