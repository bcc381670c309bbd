package servermetrics

import "strings"

// Quantity is an engine-independent name for something the engines
// measure.
type Quantity string

// Quantities. Gauges are instantaneous; counters are cumulative totals
// (turned into per-interval rates); histograms give per-interval
// quantiles.
const (
	Running          Quantity = "running"            // gauge: requests in the running batch
	Waiting          Quantity = "waiting"            // gauge: requests queued
	Swapped          Quantity = "swapped"            // gauge: requests swapped to CPU (vLLM V0)
	KVUsage          Quantity = "kv_usage"           // gauge: GPU KV cache in use, fraction 0..1
	CPUKVUsage       Quantity = "cpu_kv_usage"       // gauge: CPU (swap) KV cache in use, fraction 0..1
	KVUsedTokens     Quantity = "kv_used_tokens"     // gauge: tokens held in the KV cache
	KVCapacityTokens Quantity = "kv_capacity_tokens" // gauge: tokens the KV cache can hold
	PrefixHitRate    Quantity = "prefix_hit_rate"    // gauge: prefix cache hit rate, fraction 0..1
	GenThroughput    Quantity = "gen_throughput"     // gauge: the engine's own generation tokens/s
	Preemptions      Quantity = "preemptions"        // counter: requests preempted / retracted
	PromptTokens     Quantity = "prompt_tokens"      // counter: prompt (prefill) tokens processed
	GenerationTokens Quantity = "generation_tokens"  // counter: tokens generated
	RequestsDone     Quantity = "requests_done"      // counter: finished requests
	PrefixQueries    Quantity = "prefix_queries"     // counter: tokens looked up in the prefix cache
	PrefixHits       Quantity = "prefix_hits"        // counter: tokens found in the prefix cache
	PromptSeconds    Quantity = "prompt_seconds"     // counter: seconds spent on prompts (llama.cpp)
	GenerateSeconds  Quantity = "generate_seconds"   // counter: seconds spent generating (llama.cpp)
	TTFT             Quantity = "ttft_seconds"       // histogram: time to first token
	TPOT             Quantity = "tpot_seconds"       // histogram: time per output token (inter-token latency)
	E2E              Quantity = "e2e_seconds"        // histogram: request latency
	QueueTime        Quantity = "queue_seconds"      // histogram: time waiting before scheduling
)

// Kind is the Prometheus type of a metric as headroom uses it.
type Kind uint8

// Metric kinds.
const (
	Gauge Kind = iota + 1
	Counter
	Histogram
)

func (k Kind) String() string {
	switch k {
	case Gauge:
		return "gauge"
	case Counter:
		return "counter"
	case Histogram:
		return "histogram"
	}
	return "unknown"
}

// Source is one metric an engine exposes for a quantity.
type Source struct {
	// Name is the sample name for gauges and counters (counters with their
	// _total suffix, as exposed) and the family name for histograms (the
	// samples are Name_bucket, Name_sum, Name_count).
	Name string
	Kind Kind
	// Scale multiplies exposed values into the quantity's unit; 0 means 1.
	// A percent gauge would use 0.01 to become a fraction.
	Scale float64
	// Note says which releases expose the name.
	Note string
}

// EngineMetrics maps an engine's metric names to quantities. For each
// quantity the sources are tried in order; the first one present in the
// samples is used.
type EngineMetrics struct {
	Engine string // as in run manifests: vllm, sglang, llamacpp, node-llama-cpp
	Prefix string // metric name prefix used to detect the engine
	// AltPrefixes are other spellings of Prefix some exporters use
	// (SGLang's gRPC worker sidecar writes "sglang_"); their samples are
	// read as if named with Prefix.
	AltPrefixes []string
	Quantities  map[Quantity][]Source
}

func g(name, note string) Source { return Source{Name: name, Kind: Gauge, Note: note} }
func c(name, note string) Source { return Source{Name: name, Kind: Counter, Note: note} }
func h(name, note string) Source { return Source{Name: name, Kind: Histogram, Note: note} }

// Engines is the table. vLLM's "*_perc" gauges are fractions despite the
// name ("1 means 100 percent usage", per their help text), as are SGLang's
// token_usage and llama.cpp's kv_cache_usage_ratio, so no row needs a
// scale today. A new engine is one more entry.
var Engines = []EngineMetrics{
	{
		Engine: "vllm",
		Prefix: "vllm:",
		Quantities: map[Quantity][]Source{
			Running:          {g("vllm:num_requests_running", "V0 and V1")},
			Waiting:          {g("vllm:num_requests_waiting", "V0 and V1")},
			Swapped:          {g("vllm:num_requests_swapped", "V0 only")},
			KVUsage:          {g("vllm:kv_cache_usage_perc", "V1, 0.9 and later"), g("vllm:gpu_cache_usage_perc", "V0; V1 before 0.10 (deprecated in 0.9)")},
			CPUKVUsage:       {g("vllm:cpu_cache_usage_perc", "V0 only")},
			PrefixHitRate:    {g("vllm:gpu_prefix_cache_hit_rate", "V0 only")},
			Preemptions:      {c("vllm:num_preemptions_total", "V0 and V1")},
			PromptTokens:     {c("vllm:prompt_tokens_total", "V0 and V1")},
			GenerationTokens: {c("vllm:generation_tokens_total", "V0 and V1")},
			RequestsDone:     {c("vllm:request_success_total", "V0 and V1, label finished_reason")},
			PrefixQueries:    {c("vllm:prefix_cache_queries_total", "V1, 0.9 and later"), c("vllm:gpu_prefix_cache_queries_total", "V1 before 0.10")},
			PrefixHits:       {c("vllm:prefix_cache_hits_total", "V1, 0.9 and later"), c("vllm:gpu_prefix_cache_hits_total", "V1 before 0.10")},
			TTFT:             {h("vllm:time_to_first_token_seconds", "V0 and V1")},
			TPOT:             {h("vllm:inter_token_latency_seconds", "V1, 0.11 and later"), h("vllm:time_per_output_token_seconds", "V0; V1 before 0.11")},
			E2E:              {h("vllm:e2e_request_latency_seconds", "V0 and V1")},
			QueueTime:        {h("vllm:request_queue_time_seconds", "V0 and V1")},
		},
	},
	{
		Engine:      "sglang",
		Prefix:      "sglang:",
		AltPrefixes: []string{"sglang_"},
		Quantities: map[Quantity][]Source{
			Running:          {g("sglang:num_running_reqs", ""), g("sglang:num_requests_running", "the first exporter, 2024-09 (sglang PR 1461)")},
			Waiting:          {g("sglang:num_queue_reqs", ""), g("sglang:num_requests_waiting", "the first exporter, 2024-09"), g("sglang:queue_req", "the first exporter, 2024-09")},
			KVUsage:          {g("sglang:token_usage", "fraction of the token pool in use")},
			KVUsedTokens:     {g("sglang:kv_used_tokens", "later releases"), g("sglang:num_used_tokens", "")},
			KVCapacityTokens: {g("sglang:max_total_num_tokens", "later releases")},
			PrefixHitRate:    {g("sglang:cache_hit_rate", "")},
			GenThroughput:    {g("sglang:gen_throughput", "")},
			Preemptions:      {c("sglang:num_retracted_requests_total", "later releases; sglang:num_retracted_reqs is a per-batch gauge, not a total")},
			PromptTokens:     {c("sglang:prompt_tokens_total", "")},
			GenerationTokens: {c("sglang:generation_tokens_total", "")},
			RequestsDone:     {c("sglang:num_requests_total", "")},
			TTFT:             {h("sglang:time_to_first_token_seconds", "")},
			TPOT:             {h("sglang:inter_token_latency_seconds", "later releases"), h("sglang:time_per_output_token_seconds", "earlier releases")},
			E2E:              {h("sglang:e2e_request_latency_seconds", "")},
			QueueTime:        {h("sglang:queue_time_seconds", "")},
		},
	},
	{
		Engine: "llamacpp",
		Prefix: "llamacpp:",
		Quantities: map[Quantity][]Source{
			Running:          {g("llamacpp:requests_processing", "")},
			Waiting:          {g("llamacpp:requests_deferred", "")},
			KVUsage:          {g("llamacpp:kv_cache_usage_ratio", "removed in 2025 (llama.cpp #13660)")},
			KVUsedTokens:     {g("llamacpp:kv_cache_tokens", "removed in 2025 (llama.cpp #13660)")},
			GenThroughput:    {g("llamacpp:predicted_tokens_seconds", "average over the last requests")},
			PromptTokens:     {c("llamacpp:prompt_tokens_total", "")},
			GenerationTokens: {c("llamacpp:tokens_predicted_total", "")},
			PromptSeconds:    {c("llamacpp:prompt_seconds_total", "")},
			GenerateSeconds:  {c("llamacpp:tokens_predicted_seconds_total", "")},
		},
	},
	{
		Engine: "node-llama-cpp",
		Prefix: "nodellama:",
		Quantities: map[Quantity][]Source{
			Running:          {g("nodellama:num_requests_running", "")},
			Waiting:          {g("nodellama:num_requests_waiting", "")},
			KVUsage:          {g("nodellama:kv_cache_usage_perc", "fraction 0..1, vLLM V1 convention")},
			KVCapacityTokens: {g("nodellama:kv_budget_tokens", "")},
			Preemptions:      {c("nodellama:num_preemptions_total", "")},
			PromptTokens:     {c("nodellama:prompt_tokens_total", "")},
			GenerationTokens: {c("nodellama:generation_tokens_total", "")},
			PrefixQueries:    {c("nodellama:prefix_cache_queries_total", "with --prefix-cache")},
			PrefixHits:       {c("nodellama:prefix_cache_hits_total", "with --prefix-cache")},
			RequestsDone:     {c("nodellama:request_success_total", "label finished_reason")},
			TTFT:             {h("nodellama:time_to_first_token_seconds", "")},
			TPOT:             {h("nodellama:time_per_output_token_seconds", "")},
		},
	},
	{
		// The GPU engine of issue 10 (bench/gpu-engine, docs/gpu-engine.md):
		// transformers' continuous batching behind headroom's own server.
		Engine: "transformers-cb",
		Prefix: "tfcb:",
		Quantities: map[Quantity][]Source{
			Running:          {g("tfcb:num_requests_running", "")},
			Waiting:          {g("tfcb:num_requests_waiting", "includes preempted requests waiting to resume")},
			KVUsage:          {g("tfcb:kv_cache_usage_perc", "fraction 0..1 of KV blocks")},
			Preemptions:      {c("tfcb:num_preemptions_total", "recompute and CPU offload")},
			PromptTokens:     {c("tfcb:prompt_tokens_total", "")},
			GenerationTokens: {c("tfcb:generation_tokens_total", "")},
			RequestsDone:     {c("tfcb:request_success_total", "label finished_reason")},
			TTFT:             {h("tfcb:time_to_first_token_seconds", "")},
			TPOT:             {h("tfcb:time_per_output_token_seconds", "one observation per request: its mean gap, not every gap")},
			E2E:              {h("tfcb:e2e_request_latency_seconds", "")},
			QueueTime:        {h("tfcb:request_queue_time_seconds", "")},
		},
	},
}

// Lookup returns the table row of an engine.
func Lookup(engine string) (EngineMetrics, bool) {
	for _, e := range Engines {
		if e.Engine == engine {
			return e, true
		}
	}
	return EngineMetrics{}, false
}

// DetectEngine names the engine whose metric prefix (or one of its other
// spellings) most samples carry; "" when none matches.
func DetectEngine(samples []Sample) string {
	best, bestN := "", 0
	for _, e := range Engines {
		n := 0
		for i := range samples {
			if e.canonicalName(samples[i].Name) != "" {
				n++
			}
		}
		if n > bestN {
			best, bestN = e.Engine, n
		}
	}
	return best
}

// canonicalName is name under the row's Prefix when it carries the prefix
// or one of its other spellings, else "".
func (e EngineMetrics) canonicalName(name string) string {
	if strings.HasPrefix(name, e.Prefix) {
		return name
	}
	for _, p := range e.AltPrefixes {
		if strings.HasPrefix(name, p) {
			return e.Prefix + name[len(p):]
		}
	}
	return ""
}
