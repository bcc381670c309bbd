package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

const vllmSample = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 3.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.25
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="m"} 7
# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="length",model_name="m"} 12
vllm:request_success_total{model_name="m",finished_reason="stop"} 1
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 2
vllm:time_to_first_token_seconds_bucket{le="1.0",model_name="m"} 5
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 6
vllm:time_to_first_token_seconds_sum{model_name="m"} 3.5
vllm:time_to_first_token_seconds_count{model_name="m"} 6
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5",path="a\"b"} 0.01
rpc_seconds_sum{path="a\"b"} 1
rpc_seconds_count{path="a\"b"} 100
sglang:num_running_reqs{name="x"} 4
`

func TestParseText(t *testing.T) {
	rows, err := ParseText(strings.NewReader(vllmSample), 42)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range rows {
		if r.TimeNS != 42 {
			t.Fatalf("time %d", r.TimeNS)
		}
		got[r.Name+"{"+r.Labels+"}"] = r.Value
	}
	want := map[string]float64{
		`vllm:num_requests_running{model_name="m"}`:                           3,
		`vllm:gpu_cache_usage_perc{model_name="m"}`:                           0.25,
		`vllm:num_preemptions_total{model_name="m"}`:                          7,
		`vllm:request_success_total{finished_reason="length",model_name="m"}`: 12,
		`vllm:request_success_total{finished_reason="stop",model_name="m"}`:   1,
		`vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"}`:    2,
		`vllm:time_to_first_token_seconds_bucket{le="1",model_name="m"}`:      5,
		`vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"}`:   6,
		`vllm:time_to_first_token_seconds_sum{model_name="m"}`:                3.5,
		`vllm:time_to_first_token_seconds_count{model_name="m"}`:              6,
		`rpc_seconds{path="a\"b",quantile="0.5"}`:                             0.01,
		`rpc_seconds_sum{path="a\"b"}`:                                        1,
		`rpc_seconds_count{path="a\"b"}`:                                      100,
		`sglang:num_running_reqs{name="x"}`:                                   4,
	}
	if len(got) != len(want) {
		t.Errorf("%d series, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for i := 1; i < len(rows); i++ {
		if rows[i-1].Name > rows[i].Name || rows[i-1].Name == rows[i].Name && rows[i-1].Labels > rows[i].Labels {
			t.Fatal("rows not sorted")
		}
	}
}

func TestParseTextErrorNamesLine(t *testing.T) {
	_, err := ParseText(strings.NewReader("ok 1\nbad{ 2\n"), 0)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err %v", err)
	}
}

func FuzzParseText(f *testing.F) {
	f.Add(vllmSample)
	f.Add("a 1\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		rows, err := ParseText(strings.NewReader(s), 1)
		if err != nil {
			return
		}
		for _, r := range rows {
			if r.Name == "" || r.TimeNS != 1 {
				t.Fatalf("bad row %+v", r)
			}
		}
	})
}

func TestScraper(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		fmt.Fprintf(w, "# TYPE g gauge\ng %d\n", n)
	}))
	defer srv.Close()
	var got []rundir.ServerMetricRow
	s := &Scraper{URL: srv.URL, Interval: 20 * time.Millisecond, Now: func() int64 { return time.Now().UnixNano() },
		Sink: func(rows []rundir.ServerMetricRow) { got = append(got, rows...) }}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 || got[0].Value != 1 || got[1].Value != 2 || got[1].TimeNS <= got[0].TimeNS {
		t.Errorf("rows %+v", got)
	}

	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	s = &Scraper{URL: missing.URL + "/metrics", Now: func() int64 { return 0 }}
	if err := s.Run(context.Background()); !errors.Is(err, ErrNoMetrics) {
		t.Errorf("no /metrics: err %v", err)
	}
}
