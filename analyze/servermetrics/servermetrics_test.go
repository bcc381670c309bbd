package servermetrics

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/promtext"
)

func readDump(t *testing.T, name string, timeNS int64) []Sample {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "metrics", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ss, err := promtext.Parse(f, timeNS)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ss
}

// TestDetectEngineRealDumps reads real scrapes as the sweep records them
// (package promtext) and finds each engine's metric table.
func TestDetectEngineRealDumps(t *testing.T) {
	for file, engine := range map[string]string{
		"sglang-docs-llama31-8b.txt": "sglang", "llamacpp-b10380.txt": "llamacpp",
		"node-llama-cpp-3.21.1.txt": "node-llama-cpp", "transformers-cb-0.1.0-fakeengine.txt": "transformers-cb",
		"vllm-0.10.0-v1-excerpt.txt": "vllm", "vllm-0.7-v1-excerpt.txt": "vllm", "vllm-v0-ibm-excerpt.txt": "vllm",
	} {
		if e := DetectEngine(readDump(t, file, 5e9)); e != engine {
			t.Errorf("%s: DetectEngine = %q, want %q", file, e, engine)
		}
	}
}

// TestBucketQuantileRealTTFT reads quantiles from real TTFT histograms,
// cumulative since the server started: SGLang's (11008 observations), and
// the dump captured from the test engine (11 requests, cumulative buckets
// 0.01:3 0.02:4 0.1:5 0.25:8 0.5:11).
func TestBucketQuantileRealTTFT(t *testing.T) {
	type quantile struct{ q, want float64 }
	for _, tt := range []struct {
		dump, series string
		quantiles    []quantile
	}{
		{"sglang-docs-llama31-8b.txt", "sglang:time_to_first_token_seconds_bucket", []quantile{
			// rank 1100.8 lies in (7.5, 10] where the counts go 941 -> 1330
			{0.1, 7.5 + (10-7.5)*(1100.8-941)/(1330-941)},
			// rank 5504 is beyond the last finite bucket (2513 at 30 s): the
			// highest finite bound is all that can be said
			{0.5, 30},
			{0.99, 30},
			// rank 0.11008 lies in (0.02, 0.04] where the counts go 0 -> 1
			{0.00001, 0.02 + 0.02*0.11008},
		}},
		{"node-llama-cpp-3.21.1.txt", "nodellama:time_to_first_token_seconds_bucket", []quantile{
			{0.5, 0.1 + (0.25-0.1)*(5.5-5)/3},   // rank 5.5 in (0.1, 0.25]
			{0.9, 0.25 + (0.5-0.25)*(9.9-8)/3},  // rank 9.9 in (0.25, 0.5]
			{0.2, 0.005 + (0.01-0.005)*(2.2/3)}, // rank 2.2 in (0.005, 0.01]
		}},
	} {
		var bs []Bucket
		for _, s := range readDump(t, tt.dump, 0) {
			if s.Name != tt.series {
				continue
			}
			_, le := withoutLabel(s.Labels, "le")
			ub := math.Inf(1)
			if le != "+Inf" {
				var err error
				if ub, err = strconv.ParseFloat(le, 64); err != nil {
					t.Fatal(err)
				}
			}
			bs = append(bs, Bucket{ub, s.Value})
		}
		for _, q := range tt.quantiles {
			if got := BucketQuantile(q.q, bs); math.Abs(got-q.want) > 1e-12 {
				t.Errorf("%s q=%v: got %v, want %v", tt.dump, q.q, got, q.want)
			}
		}
	}
}

func TestBucketQuantileEdges(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name string
		q    float64
		b    []Bucket
		want float64
	}{
		{"no observations", 0.5, []Bucket{{1, 0}, {inf, 0}}, math.NaN()},
		{"no +Inf bucket", 0.5, []Bucket{{1, 1}, {2, 2}}, math.NaN()},
		{"one bucket", 0.5, []Bucket{{inf, 3}}, math.NaN()},
		{"q below 0", -0.1, []Bucket{{1, 1}, {inf, 1}}, math.Inf(-1)},
		{"q above 1", 1.1, []Bucket{{1, 1}, {inf, 1}}, math.Inf(1)},
		{"first bucket from zero", 0.5, []Bucket{{2, 4}, {inf, 4}}, 1},
		{"negative first bound", 0.5, []Bucket{{-1, 4}, {inf, 4}}, -1},
		{"unsorted input", 0.75, []Bucket{{inf, 4}, {2, 4}, {1, 2}}, 1.5},
		{"non-monotonic counts are raised", 0.5, []Bucket{{1, 2}, {2, 1}, {3, 4}, {inf, 4}}, 1},
		{"q 1 with empty top bucket", 1, []Bucket{{1, 2}, {2, 4}, {inf, 4}}, 2},
	}
	for _, tt := range tests {
		got := BucketQuantile(tt.q, tt.b)
		if math.IsNaN(tt.want) != math.IsNaN(got) || (!math.IsNaN(got) && got != tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestExtractIntervals checks per-interval rates and quantiles on three
// scrapes whose differences are worked out by hand.
func TestExtractIntervals(t *testing.T) {
	lab := `engine="0",model_name="m"`
	bucket := func(tns int64, le string, v float64) Sample {
		return Sample{TimeNS: tns, Name: "vllm:time_to_first_token_seconds_bucket", Labels: `engine="0",le="` + le + `",model_name="m"`, Value: v}
	}
	var ss []Sample
	for _, s := range []struct {
		t                  int64
		b01, b1, inf, sum  float64
		running, kv, preem float64
	}{
		{0, 0, 0, 0, 0, 0, 0.10, 0},
		{10e9, 4, 8, 10, 9, 5, 0.50, 2},  // +4 in (0,0.1], +4 in (0.1,1], +2 above 1
		{20e9, 4, 8, 10, 9, 7, 0.95, 7},  // nothing observed
		{30e9, 2, 2, 2, 1.5, 1, 0.20, 1}, // restart: counters start again
	} {
		ss = append(ss,
			bucket(s.t, "0.1", s.b01), bucket(s.t, "1.0", s.b1), bucket(s.t, "+Inf", s.inf),
			Sample{TimeNS: s.t, Name: "vllm:time_to_first_token_seconds_sum", Labels: lab, Value: s.sum},
			Sample{TimeNS: s.t, Name: "vllm:num_requests_running", Labels: lab, Value: s.running},
			Sample{TimeNS: s.t, Name: "vllm:kv_cache_usage_perc", Labels: lab, Value: s.kv},
			Sample{TimeNS: s.t, Name: "vllm:gpu_cache_usage_perc", Labels: lab, Value: 0.99}, // deprecated twin: must not be used
			Sample{TimeNS: s.t, Name: "vllm:num_preemptions_total", Labels: lab, Value: s.preem},
		)
	}
	// shuffle order: Extract must sort
	for i, j := 0, len(ss)-1; i < j; i, j = i+1, j-1 {
		ss[i], ss[j] = ss[j], ss[i]
	}
	res, err := Extract(ss, Options{Quantiles: []float64{0.5, 0.9}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Engine != "vllm" {
		t.Errorf("engine %q", res.Engine)
	}
	var kv *Series
	for i := range res.Gauges {
		if res.Gauges[i].Quantity == KVUsage {
			kv = &res.Gauges[i]
		}
	}
	if kv == nil || kv.Metric != "vllm:kv_cache_usage_perc" || len(kv.Points) != 4 || kv.Points[2].Value != 0.95 || kv.Points[0].TimeNS != 0 {
		t.Fatalf("kv usage series wrong: %+v", kv)
	}
	var pre *RateSeries
	for i := range res.Rates {
		if res.Rates[i].Quantity == Preemptions {
			pre = &res.Rates[i]
		}
	}
	if pre == nil || len(pre.Points) != 3 {
		t.Fatalf("preemption rates wrong: %+v", pre)
	}
	wantPre := []RatePoint{
		{0, 10e9, 2, 0.2, false},
		{10e9, 20e9, 5, 0.5, false},
		{20e9, 30e9, 1, 0.1, true},
	}
	for i, w := range wantPre {
		if pre.Points[i] != w {
			t.Errorf("preemption interval %d = %+v, want %+v", i, pre.Points[i], w)
		}
	}
	if len(res.Histograms) != 1 {
		t.Fatalf("histograms: %+v", res.Histograms)
	}
	hs := res.Histograms[0]
	if hs.Quantity != TTFT || hs.Labels != lab || len(hs.Points) != 3 {
		t.Fatalf("ttft series: %+v", hs)
	}
	p := hs.Points[0]
	// 10 observations: 4 in (0,0.1], 4 in (0.1,1], 2 in (1,+Inf).
	// p50: rank 5 in (0.1,1] -> 0.1 + 0.9*(5-4)/4; p90: rank 9 in +Inf -> 1.
	if p.Count != 10 || p.Sum != 9 || math.Abs(p.Values[0]-(0.1+0.9*0.25)) > 1e-12 || p.Values[1] != 1 {
		t.Errorf("first interval: %+v", p)
	}
	if q := hs.Points[1]; q.Count != 0 || !math.IsNaN(q.Values[0]) || q.Sum != 0 {
		t.Errorf("idle interval should have no quantiles: %+v", q)
	}
	// after the reset the later counts stand alone: 2 observations in (0,0.1]
	if q := hs.Points[2]; q.Count != 2 || q.Sum != 1.5 || math.Abs(q.Values[0]-0.05) > 1e-12 {
		t.Errorf("reset interval: %+v", q)
	}
}

func TestExtractEngineTableRows(t *testing.T) {
	for _, name := range []string{"vllm", "sglang", "llamacpp", "node-llama-cpp", "transformers-cb"} {
		row, ok := Lookup(name)
		if !ok {
			t.Fatalf("no row for %s", name)
		}
		for q, srcs := range row.Quantities {
			for _, s := range srcs {
				if !strings.HasPrefix(s.Name, row.Prefix) {
					t.Errorf("%s %s: %s lacks the engine prefix %s", name, q, s.Name, row.Prefix)
				}
				if s.Kind == Counter && !strings.HasSuffix(s.Name, "_total") {
					t.Errorf("%s %s: counter %s should be named as exposed, with _total", name, q, s.Name)
				}
			}
		}
	}
	if _, err := Extract([]Sample{{Name: "foo", Value: 1}}, Options{}); err == nil {
		t.Error("Extract without known metrics should fail")
	}
	if _, err := Extract(nil, Options{Engine: "tgi"}); err == nil {
		t.Error("Extract with an unknown engine should fail")
	}
}

func TestExtractRealDumps(t *testing.T) {
	ss := readDump(t, "sglang-docs-llama31-8b.txt", 1e9)
	ss = append(ss, readDump(t, "sglang-docs-llama31-8b.txt", 2e9)...)
	res, err := Extract(ss, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[Quantity]float64{}
	for _, g := range res.Gauges {
		got[g.Quantity] = g.Points[len(g.Points)-1].Value
	}
	for q, want := range map[Quantity]float64{Running: 162, Waiting: 2826, KVUsage: 0.28, KVUsedTokens: 123859, GenThroughput: 86.50814177726902, PrefixHitRate: 0.007507552643049313} {
		if got[q] != want {
			t.Errorf("%s = %v, want %v", q, got[q], want)
		}
	}
	// identical scrapes: every histogram interval is empty
	for _, h := range res.Histograms {
		if len(h.Points) != 1 || h.Points[0].Count != 0 {
			t.Errorf("%s: %+v", h.Metric, h.Points)
		}
	}
	// V0 dump without +Inf bucket: a warning, no crash
	v0 := readDump(t, "vllm-v0-ibm-excerpt.txt", 1e9)
	v0 = append(v0, readDump(t, "vllm-v0-ibm-excerpt.txt", 2e9)...)
	res, err = Extract(v0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var warned bool
	for _, w := range res.Warnings {
		warned = warned || w.Kind == WarnNoInfBucket
	}
	if !warned {
		t.Errorf("want a +Inf warning, got %v", res.Warnings)
	}
}

// FuzzExtract feeds Extract whatever the scraper would record from a
// mutated /metrics text.
func FuzzExtract(f *testing.F) {
	for _, name := range []string{"sglang-docs-llama31-8b.txt", "llamacpp-b10380.txt", "node-llama-cpp-3.21.1.txt", "transformers-cb-0.1.0-fakeengine.txt", "vllm-v0-ibm-excerpt.txt", "vllm-docs-iteration-tokens.txt"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "metrics", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, text string) {
		ss, err := promtext.Parse(strings.NewReader(text), 1)
		if err != nil {
			return
		}
		if _, err := Extract(append(ss, ss...), Options{Engine: "vllm"}); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzBucketQuantile(f *testing.F) {
	f.Add(0.5, 1.0, 2.0, 3.0, 4.0)
	f.Fuzz(func(t *testing.T, q, b1, c1, b2, c2 float64) {
		bs := []Bucket{{b1, c1}, {b2, c2}, {math.Inf(1), math.Max(c1, c2) + 1}}
		v := BucketQuantile(q, bs)
		if q >= 0 && q <= 1 && !math.IsNaN(v) && !math.IsInf(v, 0) {
			lo := math.Min(0, math.Min(b1, b2))
			hi := math.Max(b1, b2)
			if (v < lo-1e-9 || v > hi+1e-9) && !math.IsNaN(b1) && !math.IsNaN(b2) && !math.IsInf(b1, 0) && !math.IsInf(b2, 0) {
				t.Fatalf("quantile %v outside [%v,%v] for %+v", v, lo, hi, bs)
			}
		}
	})
}

// A fraction exposed as a percentage is flagged, as data, with the series
// and the value; a bucket bound that is no number is flagged too.
func TestWarningsAreData(t *testing.T) {
	lab := `engine="0",model_name="m"`
	samples := []Sample{
		{TimeNS: 1e9, Name: "vllm:num_requests_running", Labels: lab, Value: 1},
		{TimeNS: 1e9, Name: "vllm:kv_cache_usage_perc", Labels: lab, Value: 42},
		{TimeNS: 1e9, Name: "vllm:time_to_first_token_seconds_bucket", Labels: `engine="0",le="x",model_name="m"`, Value: 1},
	}
	res, err := Extract(samples, Options{Engine: "vllm"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Warning{
		{Kind: WarnAboveOne, Metric: "vllm:kv_cache_usage_perc", Labels: lab, Quantity: KVUsage, Value: 42},
		{Kind: WarnBadLE, Metric: "vllm:time_to_first_token_seconds", Labels: `engine="0",le="x",model_name="m"`, LE: "x"},
	}
	if !slices.Equal(res.Warnings, want) {
		t.Errorf("warnings\n got %+v\nwant %+v", res.Warnings, want)
	}
}
