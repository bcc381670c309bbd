package serverlog

import (
	"reflect"
	"testing"
	"time"
)

const v0stats = FieldPromptThroughput | FieldGenerationThroughput | FieldRunning | FieldSwapped | FieldWaiting | FieldKVUsage | FieldCPUKVUsage
const v1stats = FieldPromptThroughput | FieldGenerationThroughput | FieldRunning | FieldWaiting | FieldKVUsage | FieldPrefixCacheHitRate

func TestVLLM064ServeEngineDead(t *testing.T) {
	evs, s := scanFile(t, "vllm-0.6.4.post1-serve-enginedead.log", Options{Year: 2024})
	if s.Engine() != EngineVLLM {
		t.Fatalf("engine %q", s.Engine())
	}
	// 23 events: version, args, 2x chunked prefill, engine config, model,
	// weights, memory profile, blocks, concurrency, 2x CUDA graph, 5 stats,
	// received, added, LLVM ERROR, 3 error-level lines. Unknown: the three
	// safetensors progress lines and "Unsupported conversion ...".
	checkCounts(t, s, Counts{Lines: 65, Events: 23, Ignored: 38, Unknown: 4})

	ev := wantEvent(t, evs, 1, KindConfig)
	checkTime(t, ev, utc(2024, time.December, 6, 14, 7, 37, 0), TimeNoYear)
	checkFacts(t, evs, 1, map[string]string{FactVersion: "0.6.4.post1"})

	// The command set --dtype=half --gpu-memory-utilization=0.95
	// --max-model-len=105088 and the model; nothing else is non-default.
	args := nonDefaultArgs(wantEvent(t, evs, 2, KindConfig))
	wantArgs := map[string]string{"arg.model": "meta-llama/Llama-3.2-1B", "arg.dtype": "half", "arg.max_model_len": "105088", "arg.gpu_memory_utilization": "0.95"}
	if !reflect.DeepEqual(args, wantArgs) {
		t.Errorf("non-default args %v, want %v", args, wantArgs)
	}
	checkFacts(t, evs, 9, map[string]string{FactChunkedPrefill: "True", FactMaxBatchedTokens: "512"})
	checkFacts(t, evs, 15, map[string]string{
		FactEngineGeneration: "V0", FactVersion: "0.6.4.post1", FactModel: "meta-llama/Llama-3.2-1B", FactDtype: "float16",
		FactMaxModelLen: "105088", FactTensorParallel: "1", FactPipelineParallel: "1", FactQuantization: "None",
		FactKVCacheDtype: "auto", FactPrefixCaching: "False",
	})
	checkFacts(t, evs, 25, map[string]string{FactWeightsGiB: "2.3185"})
	checkFacts(t, evs, 26, map[string]string{FactKVCacheGiB: "3.6", FactGPUMemoryUtilization: "0.95"})
	checkFacts(t, evs, 27, map[string]string{FactKVCacheBlocksGPU: "7366", FactKVCacheBlocksCPU: "8192"})
	checkFacts(t, evs, 28, map[string]string{FactMaxConcurrencyTokens: "105088", FactMaxConcurrency: "1.12"})
	checkFacts(t, evs, 31, map[string]string{FactCUDAGraph: "captured", FactCUDAGraphSeconds: "23", FactCUDAGraphGiB: "0.24"})
	checkStats(t, evs, 50, Stats{Set: v0stats})
	if r := wantEvent(t, evs, 55, KindRequest).Request; r.Action != RequestReceived || r.ID != "cmpl-24f077ae65df4dc4baa7c6cec7b29240-0" {
		t.Errorf("line 55: %+v", r)
	}
	if r := wantEvent(t, evs, 56, KindRequest).Request; r.Action != RequestAdded || r.ID != "cmpl-24f077ae65df4dc4baa7c6cec7b29240-0" {
		t.Errorf("line 56: %+v", r)
	}
	for line, class := range map[int64]string{58: ProblemOther, 59: ProblemEngineDead, 60: ProblemOther, 61: ProblemEngineDead} {
		if p := wantEvent(t, evs, line, KindError).Problem; p.Class != class {
			t.Errorf("line %d: class %s, want %s (%q)", line, p.Class, class, p.Message)
		}
	}
	if lv := evs[61].Level; lv != LevelCritical {
		t.Errorf("line 61 level %s", lv)
	}
}

func TestVLLMStatsVariants(t *testing.T) {
	tests := []struct {
		file string
		line int64
		want Stats
	}{
		// 0.2: llm_engine.py, no trailing period
		{"vllm-0.2.x-llm_engine-stats.log", 1, Stats{Set: v0stats, GenerationTokensPerS: 316.4, Running: 1, KVUsage: 0.849}},
		{"vllm-0.2.x-llm_engine-stats.log", 3, Stats{Set: v0stats, GenerationTokensPerS: 311.1, Running: 1, KVUsage: 0.973}},
		{"vllm-0.3.x-metrics161-pending.log", 1, Stats{Set: v0stats, GenerationTokensPerS: 44.9, Running: 2, Waiting: 3, KVUsage: 0.821}},
		{"vllm-0.4.x-metrics229-stats.log", 2, Stats{Set: v0stats, GenerationTokensPerS: 12, Running: 1, KVUsage: 0.003}},
		// a tqdm progress bar before the record on the same line
		{"vllm-0.5.0-offline-swap-preemption.log", 1, Stats{Set: v0stats, PromptTokensPerS: 2706.1, GenerationTokensPerS: 13395.4, Running: 34, Swapped: 100, Waiting: 9832, KVUsage: 0.992, CPUKVUsage: 0.704}},
		{"vllm-0.5.0-offline-swap-preemption.log", 3, Stats{Set: v0stats, PromptTokensPerS: 3737, GenerationTokensPerS: 8906.6, Running: 37, Swapped: 137, Waiting: 9779, KVUsage: 0.766, CPUKVUsage: 0.779}},
		{"vllm-0.5.x-metrics406-idle.log", 6, Stats{Set: v0stats}},
		{"vllm-0.6.3-swap-pending.log", 2, Stats{Set: v0stats, GenerationTokensPerS: 7154.5, Running: 2, Waiting: 98, KVUsage: 0.861}},
		// 0.8 bracketed source, separate prefix cache line
		{"vllm-0.8.x-v0-prefixcache-bracket.log", 1, Stats{Set: v0stats, PromptTokensPerS: 1514.3, GenerationTokensPerS: 313.4, Running: 35, Waiting: 5, KVUsage: 0.95}},
		{"vllm-0.8.x-v0-prefixcache-bracket.log", 2, Stats{Set: FieldPrefixCacheHitRate | FieldCPUPrefixCacheHitRate, PrefixCacheHitRate: 0.6226}},
		// V1 without "Engine 000:", padded with trailing spaces
		{"vllm-0.7.x-v1-loggers78-stats.log", 1, Stats{Set: v1stats, PromptTokensPerS: 926.3, GenerationTokensPerS: 23.2, Running: 1, KVUsage: 0.013}},
		{"vllm-0.7.x-v1-loggers78-stats.log", 5, Stats{Set: v1stats, PromptTokensPerS: 1526.3, GenerationTokensPerS: 1.9, Running: 4, KVUsage: 0.224}},
		// behind a docker compose prefix
		{"vllm-0.8.x-v1-loggers80-docker-compose.log", 1, Stats{Set: v1stats, Waiting: 1}},
		// "Engine 000:" with a process prefix
		{"vllm-0.13.x-v1-loggers248-stats.log", 2, Stats{Set: v1stats | FieldEngineIndex, PromptTokensPerS: 3.9, GenerationTokensPerS: 93.1, Running: 1, KVUsage: 0.001, PrefixCacheHitRate: 0.188}},
		{"vllm-0.14.x-xpu-v1-loggers257-waiting.log", 7, Stats{Set: v1stats | FieldEngineIndex, GenerationTokensPerS: 5.5, Running: 1, Waiting: 14, KVUsage: 0.768, PrefixCacheHitRate: 0.92}},
		// two records glued on one line: the first one is read
		{"vllm-0.10.0-v1-loggers118-glued.log", 2, Stats{Set: v1stats | FieldEngineIndex, GenerationTokensPerS: 239.2, Running: 8, KVUsage: 0.916}},
		// the author's copy wrapped the line after "throughpu"; the next
		// line ("t: 569.6 tokens/s, Running: ...") is joined back
		{"vllm-0.11.x-v1-kubectl-timestamps.log", 1, Stats{Set: v1stats | FieldEngineIndex, GenerationTokensPerS: 569.6, Running: 27, Waiting: 62, KVUsage: 0.997, PrefixCacheHitRate: 0.463}},
	}
	for _, tt := range tests {
		evs, _ := scanFile(t, tt.file, Options{})
		checkStats(t, evs, tt.line, tt.want)
	}
}

func TestVLLMPreemptions(t *testing.T) {
	tests := []struct {
		file string
		line int64
		want Preemption
		at   time.Time
	}{
		{"vllm-0.5.0-offline-swap-preemption.log", 2, Preemption{Mode: ModeSwap, RequestID: "165", Count: 1, Cumulative: 151, CumulativeKnown: true}, utc(2024, time.June, 16, 21, 24, 15, 0)},
		{"vllm-0.5.x-recompute-preemption-traceback.log", 1, Preemption{Mode: ModeRecompute, RequestID: "147", Count: 1, Cumulative: 1, CumulativeKnown: true}, utc(2024, time.August, 20, 10, 18, 39, 0)},
		{"vllm-0.6.x-swap-preemption-artificial.log", 1, Preemption{Mode: ModeSwap, RequestID: "cmpl-f5a99b8801444ad19f63a764ebb493b7-0", Count: 1, Cumulative: 1, CumulativeKnown: true}, utc(2024, time.November, 27, 2, 4, 48, 0)},
		// the documentation's copy: no "]" after the source, older counter name
		{"vllm-0.4.x-docs-preemption-cnt.log", 1, Preemption{Mode: ModeRecompute, RequestID: "0", Count: 1, Cumulative: 1, CumulativeKnown: true}, utc(2024, time.May, 9, 0, 49, 33, 0)},
	}
	for _, tt := range tests {
		evs, _ := scanFile(t, tt.file, Options{Year: 2024})
		ev := wantEvent(t, evs, tt.line, KindPreemption)
		if ev.Preemption != tt.want || ev.Level != LevelWarning {
			t.Errorf("%s:%d: %+v (%s), want %+v", tt.file, tt.line, ev.Preemption, ev.Level, tt.want)
		}
		checkTime(t, ev, tt.at, TimeNoYear)
	}
	// A preemption warning only for every 50th event: the summary trusts the
	// engine's cumulative count over the number of lines.
	sum := summarizeFile(t, "vllm-0.5.0-offline-swap-preemption.log", Options{})
	if sum.Preemptions != 151 || sum.PreemptionLines != 1 || sum.PreemptionsByMode[ModeSwap] != 1 || sum.SwappedMax != 137 || sum.WaitingMax != 9832 {
		t.Errorf("summary: preemptions %d (lines %d, by mode %v), swapped max %d, waiting max %d", sum.Preemptions, sum.PreemptionLines, sum.PreemptionsByMode, sum.SwappedMax, sum.WaitingMax)
	}
}

func TestVLLMStartupFacts(t *testing.T) {
	tests := []struct {
		file string
		line int64
		want map[string]string
	}{
		{"vllm-0.7.1-v1-gpublocks.log", 1, map[string]string{FactWeightsGiB: "67.7229"}},
		{"vllm-0.7.1-v1-gpublocks.log", 7, map[string]string{FactKVCacheBlocksGPU: "1381"}},
		{"vllm-0.7.1-v1-gpublocks.log", 8, map[string]string{FactMaxConcurrencyTokens: "2048", FactMaxConcurrency: "10.79"}},
		{"vllm-0.10.1-v1-kvcache-size.log", 1, map[string]string{FactKVCacheGiB: "112.61"}},
		{"vllm-0.10.1-v1-kvcache-size.log", 2, map[string]string{FactKVCacheTokens: "922496"}},
		{"vllm-0.10.1-v1-kvcache-size.log", 3, map[string]string{FactMaxConcurrencyTokens: "40000", FactMaxConcurrency: "23.06"}},
		{"vllm-0.10.1-v1-kvcache-size.log", 5, map[string]string{FactCUDAGraph: "disabled"}},
		{"vllm-0.10.1-v1-kvcache-size.log", 6, map[string]string{FactKVCacheBlocksGPU: "57656"}},
		{"vllm-0.10.2-v1-startup-nondefault.log", 2, map[string]string{FactVersion: "0.10.2.dev378+g4d7fe40fc.d20250829"}},
		{"vllm-0.10.2-v1-startup-nondefault.log", 3, map[string]string{FactModel: "/data/datasets/models-hf/Qwen2.5-0.5B/", FactTensorParallel: "2"}},
		{"vllm-0.10.2-v1-startup-nondefault.log", 5, map[string]string{FactArchitecture: "Qwen2ForCausalLM"}},
		{"vllm-0.10.2-v1-startup-nondefault.log", 6, map[string]string{FactMaxModelLen: "32768"}},
		{"vllm-0.10.2-v1-startup-nondefault.log", 7, map[string]string{FactChunkedPrefill: "True", FactMaxBatchedTokens: "2048"}},
		{"vllm-0.18.x-v1-cudagraph-kvsize.log", 2, map[string]string{FactKVCacheTokens: "189408"}},
		{"vllm-0.18.x-v1-cudagraph-kvsize.log", 3, map[string]string{FactMaxConcurrencyTokens: "40960", FactMaxConcurrency: "4.62"}},
		{"vllm-0.18.x-v1-cudagraph-kvsize.log", 6, map[string]string{FactCUDAGraph: "captured", FactCUDAGraphSeconds: "2", FactCUDAGraphGiB: "0.72"}},
		{"vllm-0.21.x-v1-worker-tp-kvsize.log", 1, map[string]string{FactKVCacheGiB: "9.84"}},
		{"vllm-0.21.x-v1-worker-tp-kvsize.log", 4, map[string]string{FactKVCacheTokens: "619202"}},
		{"vllm-0.21.x-v1-worker-tp-kvsize.log", 5, map[string]string{FactMaxConcurrencyTokens: "262144", FactMaxConcurrency: "2.36"}},
		// k9s frames the lines with "│"; the header is found inside
		{"vllm-0.8.x-v0-k9s-cudablocks.log", 3, map[string]string{FactGPUMemoryUtilization: "0.9"}},
		{"vllm-0.8.x-v0-k9s-cudablocks.log", 4, map[string]string{FactWeightsGiB: "12.55", FactKVCacheGiB: "56.18"}},
		{"vllm-0.8.x-v0-k9s-cudablocks.log", 5, map[string]string{FactKVCacheBlocksGPU: "7191", FactKVCacheBlocksCPU: "512"}},
		{"vllm-0.8.3-v0-ray-prefixcache.log", 1, map[string]string{FactPlatform: "cuda"}},
		// Ray's "[repeated 8x across cluster]" suffix is not part of the value
		{"vllm-0.8.3-v0-ray-prefixcache.log", 15, map[string]string{FactPlatform: "cuda"}},
		{"vllm-0.8.3-v0-ray-prefixcache.log", 8, map[string]string{
			FactEngineGeneration: "V0", FactVersion: "0.8.3", FactModel: "deepseek-ai/DeepSeek-V2.5", FactDtype: "bfloat16", FactMaxModelLen: "8192",
			FactTensorParallel: "8", FactPipelineParallel: "2", FactQuantization: "None", FactCUDAGraph: "disabled", FactKVCacheDtype: "auto", FactPrefixCaching: "True",
		}},
		{"vllm-0.8.3-v0-ray-prefixcache.log", 17, map[string]string{FactGPUMemoryUtilization: "0.9"}},
		{"vllm-0.8.3-v0-ray-prefixcache.log", 18, map[string]string{FactWeightsGiB: "27.63", FactKVCacheGiB: "5.57"}},
	}
	for _, tt := range tests {
		evs, _ := scanFile(t, tt.file, Options{})
		t.Run(tt.file, func(t *testing.T) { checkFacts(t, evs, tt.line, tt.want) })
	}

	// vLLM 0.8.3 printed every argument; the command set these.
	evs, _ := scanFile(t, "vllm-0.8.3-v0-ray-prefixcache.log", Options{})
	got := nonDefaultArgs(wantEvent(t, evs, 3, KindConfig))
	want := map[string]string{
		"arg.model": "deepseek-ai/DeepSeek-V2.5", "arg.trust_remote_code": "True", "arg.max_model_len": "8192",
		"arg.pipeline_parallel_size": "2", "arg.tensor_parallel_size": "8", "arg.enable_prefix_caching": "True", "arg.enforce_eager": "True",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("0.8.3 non-default args %v, want %v", got, want)
	}
	// vLLM 0.10 prints only the non-default ones; model_tag repeats model.
	evs, _ = scanFile(t, "vllm-0.10.2-v1-startup-nondefault.log", Options{})
	got = nonDefaultArgs(wantEvent(t, evs, 3, KindConfig))
	want = map[string]string{"arg.model": "/data/datasets/models-hf/Qwen2.5-0.5B/", "arg.tensor_parallel_size": "2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("0.10.2 non-default args %v, want %v", got, want)
	}
}

func TestVLLMErrors(t *testing.T) {
	tests := []struct {
		file  string
		line  int64
		kind  Kind
		class string
	}{
		{"vllm-0.21.x-v1-oom-enginedead.log", 1, KindError, ProblemCUDAOOM},
		{"vllm-0.21.x-v1-oom-enginedead.log", 2, KindError, ProblemOther},
		{"vllm-0.21.x-v1-enginedead-traceback.log", 1, KindError, ProblemEngineDead},
		// the engine died of OOM: the root cause wins
		{"vllm-0.8.x-v0-mqenginedead-oom.log", 1, KindError, ProblemCUDAOOM},
	}
	for _, tt := range tests {
		evs, _ := scanFile(t, tt.file, Options{})
		if ev := wantEvent(t, evs, tt.line, tt.kind); ev.Problem.Class != tt.class {
			t.Errorf("%s:%d: class %s, want %s", tt.file, tt.line, ev.Problem.Class, tt.class)
		}
	}
	// Traceback frames, even with an ERROR header, are not errors of their
	// own; but a traceback a worker or the engine core logs as an ERROR is
	// the model's process failing: its first frame is a crash.
	_, s := scanFile(t, "vllm-0.21.x-v1-oom-enginedead.log", Options{})
	checkCounts(t, s, Counts{Lines: 6, Events: 2, Ignored: 4})
	evs, s := scanFile(t, "vllm-0.12.x-v1-buildkite-prefix.log", Options{})
	checkCounts(t, s, Counts{Lines: 7, Events: 1, Ignored: 6, Wrapped: 7})
	if ev := wantEvent(t, evs, 1, KindError); ev.Problem.Class != ProblemCrash || !ev.Problem.Fatal {
		t.Errorf("the worker's ERROR traceback: %+v", ev.Problem)
	}
	_, s = scanFile(t, "vllm-0.21.x-v1-enginedead-traceback.log", Options{})
	checkCounts(t, s, Counts{Lines: 13, Events: 1, Unknown: 12})
}

func TestVLLMKubectlTimestamps(t *testing.T) {
	// kubectl's UTC stamp is used, not vLLM's zone-less local one (which
	// is seven hours behind here).
	evs, s := scanFile(t, "vllm-0.11.x-v1-kubectl-timestamps.log", Options{})
	// three stats records hard-wrapped over two lines each, joined back
	checkCounts(t, s, Counts{Lines: 10, Events: 7, Wrapped: 7, Rejoined: 3})
	checkTime(t, evs[1], utc(2025, time.October, 15, 0, 7, 38, 764529167), TimeComplete)
	ev := wantEvent(t, evs, 3, KindRequest)
	checkTime(t, ev, utc(2025, time.October, 15, 0, 7, 43, 162981484), TimeComplete)
	if r := ev.Request; r.Action != RequestHTTP || r.Method != "GET" || r.Path != "/metrics" || r.Status != 200 {
		t.Errorf("access line: %+v", r)
	}
}

func summarizeFile(t *testing.T, name string, opts Options) Summary {
	t.Helper()
	evs, s := scanFile(t, name, opts)
	z := NewSummarizer()
	lines := make([]int64, 0, len(evs))
	for l := range evs {
		lines = append(lines, l)
	}
	sortInt64(lines)
	for _, l := range lines {
		ev := evs[l]
		z.Add(&ev)
	}
	z.SetCounts(s.Counts(), s.SyntaxErrors())
	return z.Summary()
}

func sortInt64(a []int64) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
