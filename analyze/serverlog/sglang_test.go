package serverlog

import (
	"reflect"
	"testing"
	"time"
)

const (
	sgPrefill = FieldNewSeqs | FieldNewTokens | FieldCachedTokens | FieldKVUsage | FieldRunning | FieldWaiting
	sgDecode  = FieldRunning | FieldBatchTokens | FieldKVUsage | FieldGenerationThroughput | FieldWaiting
)

func TestSGLang0518StartupRetract(t *testing.T) {
	evs, s := scanFile(t, "sglang-0.5.18-startup-retract.log", Options{})
	if s.Engine() != EngineSGLang {
		t.Fatalf("engine %q", s.Engine())
	}
	// The command line: --model-path Qwen/Qwen3-4B --port 30000
	// --context-length 32768 --mem-fraction-static 0.85 --random-seed 42
	// --log-level info --enable-metrics (port and log level are defaults).
	args := nonDefaultArgs(wantEvent(t, evs, 8, KindConfig))
	want := map[string]string{"arg.model_path": "Qwen/Qwen3-4B", "arg.context_length": "32768", "arg.mem_fraction_static": "0.85", "arg.random_seed": "42", "arg.enable_metrics": "True"}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("non-default args %v, want %v", args, want)
	}
	checkTime(t, evs[8], utc(2026, time.September, 13, 16, 5, 3, 0), TimeNoZone)
	checkFacts(t, evs, 21, map[string]string{FactWeightsGiB: "7.56"})
	checkFacts(t, evs, 22, map[string]string{FactKVCacheDtype: "bfloat16", FactKVCacheTokens: "87552", FactKVCacheGiB: "12.02"})
	checkFacts(t, evs, 27, map[string]string{FactCUDAGraph: "captured", FactCUDAGraphSeconds: "0.91", FactCUDAGraphGiB: "0.13"})
	checkFacts(t, evs, 28, map[string]string{FactKVCacheTokens: "87552", FactMaxBatchedTokens: "2048", FactMaxRunningRequests: "2048", FactMaxModelLen: "32768"})
	checkFacts(t, evs, 41, map[string]string{FactListening: "ready"})
	checkStats(t, evs, 37, Stats{Set: sgPrefill | FieldPendingTokens | FieldCUDAGraph | FieldPromptThroughput, Phase: "prefill", NewSeqs: 1, NewTokens: 6, CUDAGraph: true, PromptTokensPerS: 4.56})
	checkStats(t, evs, 74, Stats{Set: sgDecode | FieldCUDAGraph, Phase: "decode", Running: 66, BatchTokens: 87282, KVUsage: 1, GenerationTokensPerS: 2529.33, Waiting: 13})
	ev := wantEvent(t, evs, 75, KindPreemption)
	if ev.Preemption != (Preemption{Mode: ModeRetract, Count: 1, NewTokenRatioBefore: 0.098, NewTokenRatioAfter: 0.3487}) {
		t.Errorf("retraction: %+v", ev.Preemption)
	}
	if r := wantEvent(t, evs, 36, KindRequest).Request; r.Method != "GET" || r.Path != "/model_info" || r.Status != 200 {
		t.Errorf("access line: %+v", r)
	}

	sum := summarizeFile(t, "sglang-0.5.18-startup-retract.log", Options{})
	if sum.Preemptions != 5 || sum.PreemptionsByMode[ModeRetract] != 5 || sum.KVUsageMax != 1 || sum.KVUsageAt.Line != 74 ||
		sum.WaitingMax != 20 || sum.RunningMax != 68 || sum.FirstPreemption.Line != 75 {
		t.Errorf("summary: preemptions %d %v, kv max %v at %d, waiting %d running %d, first preemption %d",
			sum.Preemptions, sum.PreemptionsByMode, sum.KVUsageMax, sum.KVUsageAt.Line, sum.WaitingMax, sum.RunningMax, sum.FirstPreemption.Line)
	}
	if sum.Model != "Qwen/Qwen3-4B" {
		t.Errorf("model %q", sum.Model)
	}
}

func TestSGLangBatchVariants(t *testing.T) {
	tests := []struct {
		file string
		line int64
		want Stats
	}{
		{"sglang-0.4.3-decode-2025-02.log", 1, Stats{Set: sgDecode, Phase: "decode", Running: 8, BatchTokens: 67724, KVUsage: 0.13, GenerationTokensPerS: 183.54}},
		// trailing ", " and speculative decoding fields
		{"sglang-0.4.4-spec-prefill-queue.log", 3, Stats{Set: sgPrefill, Phase: "prefill", NewSeqs: 30, NewTokens: 3810, CachedTokens: 60, Running: 2, Waiting: 68}},
		{"sglang-0.4.4-spec-prefill-queue.log", 4, Stats{Set: sgDecode | FieldAcceptLength, Phase: "decode", Running: 32, BatchTokens: 7352, KVUsage: 0.01, AcceptLength: 2.54, GenerationTokensPerS: 39.33, Waiting: 68}},
		{"sglang-0.5.x-cudagraph-trailingcomma.log", 3, Stats{Set: sgDecode | FieldCUDAGraph, Phase: "decode", Running: 1, BatchTokens: 177, CUDAGraph: true, GenerationTokensPerS: 84.2}},
		// "Prefill batch," with full token usage, mamba usage, npu graph
		{"sglang-0.5.x-mamba-npu.log", 1, Stats{Set: sgPrefill | FieldPendingTokens | FieldCUDAGraph | FieldPromptThroughput, Phase: "prefill", NewSeqs: 12, NewTokens: 43008, KVUsage: 0.14, Running: 1, Waiting: 97, PendingTokens: 109585, PromptTokensPerS: 15734.14}},
		{"sglang-0.5.x-mamba-npu.log", 2, Stats{Set: sgDecode | FieldAcceptLength | FieldCUDAGraph, Phase: "decode", Running: 40, BatchTokens: 350592, KVUsage: 0.74, AcceptLength: 3.13, CUDAGraph: true, GenerationTokensPerS: 155.34}},
		{"sglang-0.5.x-swa-full-retraction.log", 2, Stats{Set: sgDecode | FieldCUDAGraph, Phase: "decode", Running: 4, BatchTokens: 2642688, KVUsage: 1, CUDAGraph: true, GenerationTokensPerS: 429.74, Waiting: 3}},
		{"sglang-0.5.18-swa-ep.log", 1, Stats{Set: sgPrefill | FieldPendingTokens | FieldCUDAGraph | FieldPromptThroughput, Phase: "prefill", NewSeqs: 1, NewTokens: 8192, KVUsage: 0.01, Waiting: 1, PendingTokens: 46401, PromptTokensPerS: 8072.8}},
	}
	for _, tt := range tests {
		evs, _ := scanFile(t, tt.file, Options{})
		checkStats(t, evs, tt.line, tt.want)
	}
	// "[... TP0 EP0]" prefixes still give the time
	evs, _ := scanFile(t, "sglang-0.5.18-swa-ep.log", Options{})
	checkTime(t, evs[2], utc(2026, time.August, 23, 9, 9, 51, 0), TimeNoZone)
}

func TestSGLangRetractWithoutPrefix(t *testing.T) {
	evs, s := scanFile(t, "sglang-0.4.x-docs-retract-example.log", Options{Engine: EngineSGLang})
	ev := wantEvent(t, evs, 1, KindPreemption)
	if ev.Preemption != (Preemption{Mode: ModeRetract, Count: 1, NewTokenRatioBefore: 0.9998, NewTokenRatioAfter: 1}) || ev.TimeQuality != TimeNone {
		t.Errorf("%+v", ev)
	}
	checkCounts(t, s, Counts{Lines: 1, Events: 1})
}

func TestSGLangZoneOption(t *testing.T) {
	loc := time.FixedZone("UTC+8", 8*3600)
	evs, _ := scanFile(t, "sglang-0.4.3-decode-2025-02.log", Options{Location: loc})
	checkTime(t, evs[1], time.Date(2025, time.February, 27, 4, 37, 29, 0, loc), TimeNoZone)
}
