package promtext

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 3.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.25 1700000000000
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="m"} 7
# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="length",model_name="m"} 12
vllm:request_success_total{model_name="m",finished_reason="stop"} 1
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 2
vllm:time_to_first_token_seconds_bucket{le="1",model_name="m"} 5
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 6
vllm:time_to_first_token_seconds_sum{model_name="m"} 3.5
vllm:time_to_first_token_seconds_count{model_name="m"} 6
# TYPE frac histogram
frac_bucket{le="5"} 1.5
frac_count 2.5
# TYPE nocount histogram
nocount_bucket{le="1e3"} 4
# TYPE queue gaugehistogram
queue_bucket{le="10"} 3
queue_gcount 3
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5",path="a\"b"} 0.01
rpc_seconds{quantile="1",path="a\"b"} 0.2
rpc_seconds_sum{path="a\"b"} 1
rpc_seconds_count{path="a\"b"} 100
sglang:num_running_reqs{name="x\ny"} 4
`

// TestParse pins every rule of the encoding: le and quantile values as
// Prometheus 3 writes them (le="1.0"), the scrape time on every row (the
// exposed timestamp of gpu_cache_usage_perc is ignored), float histogram
// counts kept, a +Inf bucket added only where a count is known, labels
// sorted and escaped.
func TestParse(t *testing.T) {
	rows, err := Parse(strings.NewReader(sample), 42)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range rows {
		if r.TimeNS != 42 {
			t.Errorf("%s{%s}: time %d, want the scrape's 42", r.Name, r.Labels, r.TimeNS)
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
		`vllm:time_to_first_token_seconds_bucket{le="1.0",model_name="m"}`:    5,
		`vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"}`:   6,
		`vllm:time_to_first_token_seconds_sum{model_name="m"}`:                3.5,
		`vllm:time_to_first_token_seconds_count{model_name="m"}`:              6,
		`frac_bucket{le="5.0"}`:                                               1.5,
		`frac_bucket{le="+Inf"}`:                                              2.5,
		`frac_count{}`:                                                        2.5,
		`nocount_bucket{le="1000.0"}`:                                         4,
		`queue_bucket{le="10.0"}`:                                             3,
		`rpc_seconds{path="a\"b",quantile="0.5"}`:                             0.01,
		`rpc_seconds{path="a\"b",quantile="1.0"}`:                             0.2,
		`rpc_seconds_sum{path="a\"b"}`:                                        1,
		`rpc_seconds_count{path="a\"b"}`:                                      100,
		`sglang:num_running_reqs{name="x\ny"}`:                                4,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && !strings.HasPrefix(k, "queue_") {
			t.Errorf("unexpected row %s", k)
		}
	}
	for i := 1; i < len(rows); i++ {
		if rows[i-1].Name > rows[i].Name || rows[i-1].Name == rows[i].Name && rows[i-1].Labels > rows[i].Labels {
			t.Fatal("rows not sorted by name, then labels")
		}
	}
}

func TestParseErrorNamesLine(t *testing.T) {
	_, err := Parse(strings.NewReader("ok 1\nbad{ 2\n"), 0)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err %v", err)
	}
}

// dumps are real /metrics scrapes of the engines headroom reads (sources in
// testdata/metrics/SOURCES.md).
var dumps = []string{"sglang-docs-llama31-8b.txt", "llamacpp-b10380.txt", "node-llama-cpp-3.21.1.txt",
	"transformers-cb-0.1.0-fakeengine.txt", "vllm-0.10.0-v1-excerpt.txt", "vllm-0.7-v1-excerpt.txt",
	"vllm-docs-iteration-tokens.txt", "vllm-v0-ibm-excerpt.txt"}

func readDump(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "metrics", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseRealDumps(t *testing.T) {
	const sgModel = `model_name="meta-llama/Llama-3.1-8B-Instruct"`
	tests := []struct {
		file   string
		rows   int
		checks []Sample
	}{
		{"sglang-docs-llama31-8b.txt", 91, []Sample{
			{Name: "sglang:prompt_tokens_total", Labels: sgModel, Value: 8.128902e+06},
			{Name: "sglang:token_usage", Labels: sgModel, Value: 0.28},
			{Name: "sglang:time_to_first_token_seconds_bucket", Labels: `le="7.5",` + sgModel, Value: 941},
			{Name: "sglang:time_to_first_token_seconds_bucket", Labels: `le="+Inf",` + sgModel, Value: 11008},
			{Name: "sglang:time_to_first_token_seconds_count", Labels: sgModel, Value: 11008},
			{Name: "sglang:func_latency_seconds_bucket", Labels: `le="4.3248779296875",name="generate_request"`, Value: 14007},
		}},
		{"llamacpp-b10380.txt", 10, []Sample{
			{Name: "llamacpp:prompt_tokens_total", Value: 25},
			{Name: "llamacpp:predicted_tokens_seconds", Value: 5.02513},
		}},
		{"node-llama-cpp-3.21.1.txt", 61, []Sample{
			{Name: "nodellama:num_preemptions_total", Value: 7},
			{Name: "nodellama:request_success_total", Labels: `finished_reason="abort"`, Value: 1},
		}},
		{"transformers-cb-0.1.0-fakeengine.txt", 110, []Sample{
			{Name: "tfcb:time_to_first_token_seconds_bucket", Labels: `le="0.25"`, Value: 4},
		}},
		{"vllm-0.10.0-v1-excerpt.txt", 5, []Sample{
			{Name: "vllm:kv_cache_usage_perc", Labels: `engine="0",model_name="zai-org/GLM-4.5"`, Value: 9.75010481363281e-06},
		}},
		// An excerpt: the histogram stops at le="0.08", without _sum or
		// _count, and none is invented.
		{"vllm-v0-ibm-excerpt.txt", 10, []Sample{
			{Name: "vllm:time_to_first_token_seconds_bucket", Labels: `le="0.02",model_name="bigscience/bloom-560m"`, Value: 112},
		}},
	}
	for _, tt := range tests {
		rows, err := Parse(strings.NewReader(readDump(t, tt.file)), 5e9)
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		if len(rows) != tt.rows {
			t.Errorf("%s: %d rows, want %d", tt.file, len(rows), tt.rows)
		}
		for _, want := range tt.checks {
			found := false
			for _, r := range rows {
				if r.Name == want.Name && r.Labels == want.Labels {
					found = r.Value == want.Value && r.TimeNS == 5e9
				}
			}
			if !found {
				t.Errorf("%s: no %s{%s} = %v at 5e9", tt.file, want.Name, want.Labels, want.Value)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample)
	for _, name := range dumps {
		f.Add(readDump(f, name))
	}
	f.Fuzz(func(t *testing.T, text string) {
		rows, err := Parse(strings.NewReader(text), 1)
		if err != nil {
			return
		}
		for _, r := range rows {
			if r.Name == "" || r.TimeNS != 1 {
				t.Fatalf("bad row %+v", r)
			}
			m, err := ParseLabels(r.Labels)
			if err != nil {
				t.Fatalf("labels it cannot read back: %q: %v", r.Labels, err)
			}
			if back := CanonicalLabels(m); back != r.Labels {
				t.Fatalf("labels not canonical: %q reads back as %q", r.Labels, back)
			}
		}
	})
}
