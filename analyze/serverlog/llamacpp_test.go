package serverlog

import (
	"strings"
	"testing"
	"time"
)

func TestLlamaTimings(t *testing.T) {
	tests := []struct {
		file string
		line int64
		want Timing
	}{
		{"llamacpp-2023-11-gen-a-contextshift.log", 4, Timing{Slot: -1, Task: -1, Phase: TimingPrompt, MS: 845.49, Tokens: 934, MSPerToken: 0.91, TokensPerS: 1104.68}},
		// older releases count generated tokens as "runs"
		{"llamacpp-2023-11-gen-a-contextshift.log", 5, Timing{Slot: -1, Task: -1, Phase: TimingEval, MS: 13463.77, Tokens: 352, MSPerToken: 38.25, TokensPerS: 26.14}},
		{"llamacpp-2023-11-gen-a-contextshift.log", 6, Timing{Slot: -1, Task: -1, Phase: TimingTotal, MS: 14309.26, Tokens: -1}},
		{"llamacpp-2024-01-gen-a-startup.log", 19, Timing{Slot: -1, Task: -1, Phase: TimingPrompt, MS: 232.47, Tokens: 492, MSPerToken: 0.47, TokensPerS: 2116.38}},
		// JSON records carry the slot and task
		{"llamacpp-b2xxx-json-timings.log", 1, Timing{Slot: 0, Task: 19, Phase: TimingPrompt, MS: 2684.39, Tokens: 27, MSPerToken: 99.42, TokensPerS: 10.06}},
		{"llamacpp-b2xxx-json-timings.log", 2, Timing{Slot: 0, Task: 19, Phase: TimingEval, MS: 3559.27, Tokens: 25, MSPerToken: 142.37, TokensPerS: 7.02}},
		{"llamacpp-b2xxx-json-timings.log", 3, Timing{Slot: 0, Task: 19, Phase: TimingTotal, MS: 6243.66, Tokens: -1}},
		// the block after "slot print_timing: id 0 | task 124 |" belongs to that task
		{"llamacpp-b7xxx-print-timing-block.log", 4, Timing{Slot: 0, Task: 124, Phase: TimingPrompt, MS: 5093.47, Tokens: 1360, MSPerToken: 3.75, TokensPerS: 267.01}},
		{"llamacpp-b7xxx-print-timing-block.log", 5, Timing{Slot: 0, Task: 124, Phase: TimingEval, MS: 319.58, Tokens: 10, MSPerToken: 31.96, TokensPerS: 31.29}},
		{"llamacpp-b7xxx-print-timing-block.log", 6, Timing{Slot: 0, Task: 124, Phase: TimingTotal, MS: 5413.05, Tokens: 1370}},
		// router mode prefixes the block lines with "[pid] "
		{"llamacpp-b9xxx-router-timing.log", 4, Timing{Slot: 0, Task: 388, Phase: TimingEval, MS: 16112.5, Tokens: 192, MSPerToken: 83.92, TokensPerS: 11.92}},
		// newest: every timing line carries the slot prefix
		{"llamacpp-b9xxx-single-line-timing.log", 5, Timing{Slot: 0, Task: 9161, Phase: TimingPrompt, MS: 8476.55, Tokens: 1938, MSPerToken: 4.37, TokensPerS: 228.63}},
		{"llamacpp-b9xxx-single-line-timing.log", 7, Timing{Slot: 0, Task: 9161, Phase: TimingTotal, MS: 10310.9, Tokens: 1999}},
	}
	for _, tt := range tests {
		evs, _ := scanFile(t, tt.file, Options{})
		if got := wantEvent(t, evs, tt.line, KindTiming).Timing; got != tt.want {
			t.Errorf("%s:%d:\n got %+v\nwant %+v", tt.file, tt.line, got, tt.want)
		}
	}
	// progress and "n_decoded" lines of print_timing are not timings, only
	// the slot busy with its task
	evs, _ := scanFile(t, "llamacpp-b9xxx-single-line-timing.log", Options{})
	for _, l := range []int64{4, 8, 9} {
		if ev, ok := evs[l]; !ok || ev.Kind != KindSlot || ev.Slot.Action != SlotActive || ev.Slot.ID != 0 {
			t.Errorf("line %d should be the slot's activity, not a timing: %+v", l, ev)
		}
	}
	// --log-timestamps: relative to the start of the log, anchored by Reference
	start := utc(2026, time.May, 1, 10, 0, 0, 0)
	evs, _ = scanFile(t, "llamacpp-b9xxx-single-line-timing.log", Options{Reference: start})
	ev := evs[5]
	wantElapsed := 132*time.Minute + 15*time.Second + 702*time.Millisecond + 22*time.Microsecond
	if ev.Elapsed != wantElapsed || ev.TimeQuality != TimeRelative || !ev.Time.Equal(start.Add(wantElapsed)) {
		t.Errorf("elapsed %s time %s (%s)", ev.Elapsed, ev.Time, ev.TimeQuality)
	}
}

func TestLlamaSlots(t *testing.T) {
	tests := []struct {
		file string
		line int64
		want Slot
	}{
		{"llamacpp-2023-11-gen-a-contextshift.log", 7, Slot{Action: SlotRelease, ID: 0, Task: -1, PromptTokens: -1, NCtxSlot: -1, NPast: 1634}},
		{"llamacpp-2023-11-gen-a-contextshift.log", 9, Slot{Action: SlotLaunch, ID: 0, Task: 205, PromptTokens: -1, NCtxSlot: -1, NPast: -1}},
		{"llamacpp-2024-01-gen-a-kvfull-compose.log", 2, Slot{Action: SlotLaunch, ID: 0, Task: 812, PromptTokens: -1, NCtxSlot: -1, NPast: -1}},
		{"llamacpp-b2xxx-json-timings.log", 4, Slot{Action: SlotRelease, ID: 0, Task: 19, PromptTokens: -1, NCtxSlot: -1, NPast: 323}},
		{"ik_llama-3774-text-format-slots.log", 1, Slot{Action: SlotLaunch, ID: 1, Task: 106779, PromptTokens: -1, NCtxSlot: -1, NPast: -1}},
		{"llamacpp-b4xxx-journald-slots.log", 4, Slot{Action: SlotRelease, ID: 0, Task: 519, PromptTokens: -1, NCtxSlot: -1, NPast: 380}},
		{"llamacpp-b4xxx-journald-slots.log", 12, Slot{Action: SlotLaunch, ID: 0, Task: 562, PromptTokens: -1, NCtxSlot: -1, NPast: -1}},
		{"llamacpp-b4xxx-journald-slots.log", 13, Slot{Action: SlotNewPrompt, ID: 0, Task: 562, PromptTokens: 342, NCtxSlot: 4096, NPast: -1}},
		{"llamacpp-b7xxx-print-timing-block.log", 7, Slot{Action: SlotRelease, ID: 0, Task: 124, PromptTokens: -1, NCtxSlot: -1, NPast: 1369}},
		{"llamacpp-b7xxx-print-timing-block.log", 11, Slot{Action: SlotLaunch, ID: 0, Task: 135, PromptTokens: -1, NCtxSlot: -1, NPast: -1}},
		{"llamacpp-b7xxx-print-timing-block.log", 12, Slot{Action: SlotNewPrompt, ID: 0, Task: 135, PromptTokens: 1371, NCtxSlot: 32768, NPast: -1}},
		{"llamacpp-b10970-senderror.log", 4, Slot{Action: SlotRelease, ID: 0, Task: 3, PromptTokens: -1, NCtxSlot: -1, NPast: 0}},
	}
	for _, tt := range tests {
		evs, _ := scanFile(t, tt.file, Options{Year: 2024})
		if got := wantEvent(t, evs, tt.line, KindSlot).Slot; got != tt.want {
			t.Errorf("%s:%d:\n got %+v\nwant %+v", tt.file, tt.line, got, tt.want)
		}
	}
	// journald short output has no year: it comes from Options
	evs, s := scanFile(t, "llamacpp-b4xxx-journald-slots.log", Options{Year: 2024})
	checkTime(t, evs[4], utc(2024, time.December, 2, 12, 10, 29, 0), TimeNoYear)
	checkCounts(t, s, Counts{Lines: 13, Events: 8, Ignored: 5, Wrapped: 13})
	// a sampler-chain line for task -1 is not a launch
	evs, _ = scanFile(t, "llamacpp-b7xxx-print-timing-block.log", Options{})
	if _, ok := evs[10]; ok {
		t.Errorf("line 10 (sampler chain) should not be an event: %+v", evs[10])
	}
}

func TestLlamaContextShiftAndKVFull(t *testing.T) {
	evs, _ := scanFile(t, "llamacpp-2023-11-gen-a-contextshift.log", Options{})
	for l := int64(12); l <= 17; l++ {
		if cs := wantEvent(t, evs, l, KindContextShift).ContextShift; cs != (ContextShift{Slot: 0, Task: -1, NKeep: 2224, NLeft: 3894, NDiscard: 1947}) {
			t.Errorf("line %d: %+v", l, cs)
		}
	}
	evs, s := scanFile(t, "llamacpp-b10970-contextshift.log", Options{})
	checkFacts(t, evs, 1, map[string]string{FactSlots: "1", FactSlotContext: "256"})
	ev := wantEvent(t, evs, 2, KindContextShift)
	if ev.ContextShift != (ContextShift{Slot: 0, Task: 0, NKeep: 0, NLeft: 255, NDiscard: 127}) || ev.Level != LevelWarning || ev.Elapsed != 7935631*time.Microsecond {
		t.Errorf("%+v", ev)
	}
	checkCounts(t, s, Counts{Lines: 4, Events: 4})

	evs, s = scanFile(t, "llamacpp-2024-01-gen-a-kvfull-compose.log", Options{})
	checkCounts(t, s, Counts{Lines: 13, Events: 11, Ignored: 2, Wrapped: 13})
	for l := int64(4); l <= 13; l++ {
		if p := wantEvent(t, evs, l, KindKVFull).Problem; p.Class != ProblemKVFull {
			t.Errorf("line %d: %+v", l, p)
		}
	}
	sum := summarizeFile(t, "llamacpp-2024-01-gen-a-kvfull-compose.log", Options{})
	if sum.KVFull != 10 || sum.SlotLaunches != 1 {
		t.Errorf("summary kv full %d launches %d", sum.KVFull, sum.SlotLaunches)
	}
}

func TestLlamaStartupAndErrors(t *testing.T) {
	tests := []struct {
		file string
		line int64
		want map[string]string
	}{
		{"llamacpp-b583-startup.log", 1, map[string]string{FactVersion: "b583 (daa9623)"}},
		{"llamacpp-b583-startup.log", 6, map[string]string{FactListening: "0.0.0.0:8080"}},
		{"llamacpp-b583-startup.log", 8, map[string]string{FactModel: "/app/ggml-model-Q8.gguf"}},
		{"llamacpp-b3579-text-format.log", 1, map[string]string{FactVersion: "b3579 (fc4ca27b)"}},
		{"llamacpp-2024-01-gen-a-startup.log", 1, map[string]string{FactContextSize: "512"}},
		{"llamacpp-2024-01-gen-a-startup.log", 5, map[string]string{FactKVCacheGiB: "0.15625", FactKVCacheDtype: "f16"}},
		{"llamacpp-2024-01-gen-a-startup.log", 11, map[string]string{FactSlotContext: "512"}},
		{"llamacpp-2024-01-gen-a-startup.log", 12, map[string]string{FactListening: "model loaded"}},
		{"llamacpp-ollama-2024-06-json-startup.log", 1, map[string]string{FactSlots: "1"}},
		{"llamacpp-ollama-2024-06-json-startup.log", 2, map[string]string{FactSlotContext: "2048"}},
		{"llamacpp-ollama-2024-06-json-startup.log", 5, map[string]string{FactListening: "127.0.0.1:24108"}},
		{"llamacpp-b8xxx-compose-router-slots.log", 2, map[string]string{FactSlots: "2"}},
		{"llamacpp-b8xxx-compose-router-slots.log", 6, map[string]string{FactSlotContext: "131072"}},
		{"llamacpp-b9265-new-slots.log", 4, map[string]string{FactSlotContext: "1024"}},
	}
	for _, tt := range tests {
		evs, _ := scanFile(t, tt.file, Options{})
		t.Run(tt.file, func(t *testing.T) { checkFacts(t, evs, tt.line, tt.want) })
	}
	evs, _ := scanFile(t, "llamacpp-b3579-text-format.log", Options{})
	checkTime(t, evs[1], time.Unix(1723538705, 0).UTC(), TimeComplete)

	evs, _ = scanFile(t, "llamacpp-b10970-senderror.log", Options{})
	for _, l := range []int64{1, 3} {
		if p := wantEvent(t, evs, l, KindError).Problem; p.Class != ProblemContextExceeded {
			t.Errorf("line %d: %+v", l, p)
		}
	}
	evs, _ = scanFile(t, "llamacpp-ollama-2024-06-json-startup.log", Options{})
	if ev := wantEvent(t, evs, 4, KindError); ev.Level != LevelError || ev.Problem.Class != ProblemOther {
		t.Errorf("ERR record: %+v", ev)
	}
	evs, _ = scanFile(t, "llamacpp-2023-11-gen-a-contextshift.log", Options{})
	for l, want := range map[int64]int{8: 200, 19: 404} {
		r := wantEvent(t, evs, l, KindRequest).Request
		if r.Action != RequestHTTP || r.Method != "POST" || r.Path != "/completion" || r.Status != want {
			t.Errorf("line %d: %+v", l, r)
		}
	}
	checkTime(t, evs[8], time.Unix(1699284188, 0).UTC(), TimeComplete)
}

func TestLlamaJournaldISORouter(t *testing.T) {
	// journalctl -o short-iso-precise wraps router lines that carry their
	// own relative stamps; nothing here is an event, but every line is
	// unwrapped and recognised.
	_, s := scanFile(t, "llamacpp-b9xxx-journald-iso-router.log", Options{})
	if s.Engine() != EngineLlamaCpp {
		t.Fatalf("engine %q", s.Engine())
	}
	checkCounts(t, s, Counts{Lines: 5, Ignored: 5, Wrapped: 5})
}

func TestNodeLlamaContract(t *testing.T) {
	evs, s := scanFile(t, "node-llama-cpp-3.21.1-contract-example.log", Options{})
	if s.Engine() != EngineNodeLlamaCpp {
		t.Fatalf("engine %q", s.Engine())
	}
	checkCounts(t, s, Counts{Lines: 6, Events: 6})
	checkTime(t, evs[1], utc(2026, time.November, 30, 12, 0, 0, 123e6), TimeComplete)
	f := map[string]string{}
	for _, x := range wantEvent(t, evs, 1, KindConfig).Facts {
		f[x.Key] = x.Value
	}
	if f[FactVersion] != "3.21.1" || f[FactModel] != "/path/x.gguf" || f[FactSlotContext] != "1024" || f[FactSlots] != "8" || f[FactKVCacheTokens] != "4096" {
		t.Errorf("engine start facts %v", f)
	}
	if r := wantEvent(t, evs, 2, KindRequest).Request; r.Action != RequestAdmitted || r.ID != "cmpl-7" || r.PromptTokens != 130 || r.MaxTokens != 16 || r.Running != 3 || r.Waiting != 0 {
		t.Errorf("admit %+v", r)
	}
	checkStats(t, evs, 3, Stats{Set: FieldRunning | FieldWaiting | FieldBatchTokens | FieldNewTokens | FieldKVUsedTokens | FieldKVBudgetTokens | FieldKVUsage,
		Phase: "step", Running: 4, Waiting: 2, BatchTokens: 4, KVUsedTokens: 1024, KVBudgetTokens: 4096, KVUsage: 0.25})
	if p := wantEvent(t, evs, 4, KindPreemption).Preemption; p != (Preemption{Mode: ModeRecompute, RequestID: "cmpl-9", Count: 1, Cumulative: 3, CumulativeKnown: true, KVUsedTokens: 4100, KVBudgetTokens: 4096, Generated: 37}) {
		t.Errorf("preempt %+v", p)
	}
	if r := wantEvent(t, evs, 5, KindRequest).Request; r.Action != RequestFinished || r.CompletionTokens != 16 || r.Reason != "length" || r.TTFTMS != 12.3 || r.E2EMS != 140.2 {
		t.Errorf("finish %+v", r)
	}
	if p := wantEvent(t, evs, 6, KindError).Problem; p.Class != ProblemContextExceeded || p.Message != "prompt+max_tokens 1300 exceeds per-sequence context 1024" {
		t.Errorf("error %+v", p)
	}
}

// TestNodeLlamaCaptured reads a log captured from the real test engine
// (test/engine at node-llama-cpp 3.21.1, see SOURCES.md).
func TestNodeLlamaCaptured(t *testing.T) {
	evs, s := scanFile(t, "node-llama-cpp-3.21.1-preemptions.log", Options{})
	if s.Engine() != EngineNodeLlamaCpp {
		t.Fatalf("engine %q", s.Engine())
	}
	checkCounts(t, s, Counts{Lines: 53, Events: 53})
	f := map[string]string{}
	for _, x := range wantEvent(t, evs, 1, KindConfig).Facts {
		f[x.Key] = x.Value
	}
	if f[FactVersion] != "3.21.1" || f["llama_cpp"] != "v0.4.0" || f[FactSlotContext] != "256" || f[FactMaxModelLen] != "256" || f[FactSlots] != "4" || f[FactKVCacheTokens] != "320" {
		t.Errorf("engine start facts %v", f)
	}
	checkTime(t, evs[1], utc(2026, time.November, 30, 1, 41, 16, 28e6), TimeComplete)
	checkStats(t, evs, 16, Stats{Set: FieldRunning | FieldWaiting | FieldBatchTokens | FieldNewTokens | FieldKVUsedTokens | FieldKVBudgetTokens | FieldKVUsage,
		Phase: "step", Running: 3, Waiting: 7, BatchTokens: 91, NewTokens: 89, KVUsedTokens: 303, KVBudgetTokens: 320, KVUsage: 0.947})
	if p := wantEvent(t, evs, 45, KindPreemption).Preemption; p != (Preemption{Mode: ModeRecompute, RequestID: "cmpl-10", Count: 1, Cumulative: 7, CumulativeKnown: true, KVUsedTokens: 321, KVBudgetTokens: 320, Generated: 9}) {
		t.Errorf("preempt %+v", p)
	}
	if r := wantEvent(t, evs, 38, KindRequest).Request; r.Action != RequestFinished || r.ID != "cmpl-11" || r.PromptTokens != 11 || r.CompletionTokens != 0 || r.Reason != "abort" || r.TTFTMS != 314.1 || r.E2EMS != 314.1 {
		t.Errorf("finish (abort) %+v", r)
	}
	if p := wantEvent(t, evs, 13, KindError).Problem; p.Class != ProblemContextExceeded || p.Message != "prompt+max_tokens 317 exceeds per-sequence context 256" {
		t.Errorf("error %+v", p)
	}
	var all []Event
	for i := int64(1); i <= 53; i++ {
		all = append(all, evs[i])
	}
	sum := Summarize(all)
	if sum.Preemptions != 7 || sum.PreemptionLines != 7 || sum.KVUsageMax != 0.966 || sum.WaitingMax != 7 || sum.RunningMax != 4 || sum.Errors[ProblemContextExceeded] != 1 {
		t.Errorf("summary: preemptions %d/%d kv %v waiting %d running %d errors %v", sum.Preemptions, sum.PreemptionLines, sum.KVUsageMax, sum.WaitingMax, sum.RunningMax, sum.Errors)
	}
}

// TestTransformersCBServer reads the log that bench/gpu-engine/server.py
// wrote while driving its test FakeEngine (see SOURCES.md): the server's
// own admit, stats, preempt, finish and request lines.
func TestTransformersCBServer(t *testing.T) {
	evs, s := scanFile(t, "transformers-cb-0.1.0-fakeengine.log", Options{})
	if s.Engine() != EngineTransformersCB {
		t.Fatalf("engine %q", s.Engine())
	}
	checkCounts(t, s, Counts{Lines: 23, Events: 23})
	if r := wantEvent(t, evs, 3, KindRequest).Request; r.Action != RequestAdmitted || r.ID != "cmpl-258466b9d23246a2bc659bb4d65095de" || r.PromptTokens != 6 || r.MaxTokens != 14 || r.Running != 2 || r.Waiting != 1 {
		t.Errorf("admit %+v", r)
	}
	checkStats(t, evs, 11, Stats{Set: FieldRunning | FieldWaiting | FieldKVUsage | FieldGenerationThroughput,
		Running: 2, Waiting: 2, KVUsage: 0.06, GenerationTokensPerS: 195})
	checkTime(t, evs[11], utc(2026, time.November, 30, 1, 54, 37, 267e6), TimeComplete)
	if p := wantEvent(t, evs, 8, KindPreemption).Preemption; p != (Preemption{Mode: ModeOffload, RequestID: "cmpl-c6f643fd5b404276a96366b98d52e68f", Count: 1, Cumulative: 2, CumulativeKnown: true, Generated: 5}) {
		t.Errorf("preempt %+v", p)
	}
	if p := wantEvent(t, evs, 9, KindError).Problem; p.Class != ProblemContextExceeded || !strings.HasPrefix(p.Message, "This model's maximum context length is 64 tokens. However, you requested 110 tokens") {
		t.Errorf("request error %+v", p)
	}
	if r := wantEvent(t, evs, 10, KindRequest).Request; r.Action != RequestFinished || r.PromptTokens != 4 || r.CompletionTokens != 6 || r.Reason != "stop" || r.TTFTMS != 17.313 || r.E2EMS != 72.4 {
		t.Errorf("finish %+v", r)
	}
	var all []Event
	for i := int64(1); i <= 23; i++ {
		all = append(all, evs[i])
	}
	sum := Summarize(all)
	if sum.Engine != EngineTransformersCB || sum.Preemptions != 2 || sum.PreemptionsByMode[ModeOffload] != 1 || sum.PreemptionsByMode[ModeRecompute] != 1 || sum.WaitingMax != 3 || sum.KVUsageMax != 0.06 {
		t.Errorf("summary %+v", sum)
	}
}

// TestTransformersCBStartup reads the start-up of a real GPU run: the first
// 17 lines of examples/runs/h200/sweep-kv256/server.log (8B shape on an
// H200, see SOURCES.md), facts checked line by line. The run had no error,
// so no error line is asserted here.
func TestTransformersCBStartup(t *testing.T) {
	evs, s := scanFile(t, "transformers-cb-0.1.0-h200-8b-startup.log", Options{})
	if s.Engine() != EngineTransformersCB {
		t.Fatalf("engine %q", s.Engine())
	}
	// ten hf (transformers logger) and tokenizer lines carry nothing the
	// report uses; "listening port=8000" (line 15) is printed without the
	// EventLog's stamp and level, so it is unknown
	checkCounts(t, s, Counts{Lines: 17, Events: 6, Ignored: 10, Unknown: 1})
	for _, tt := range []struct {
		line  int64
		facts map[string]string
	}{
		{1, map[string]string{FactVersion: "5.17.0", "torch": "2.11.0+cu130", "server": "0.1.0"}},
		{2, map[string]string{"model_shape": "8b", FactDtype: "bfloat16", "device": "NVIDIA H200", "params": "8030261248"}},
		{12, map[string]string{FactKVCacheBlocksGPU: "256", "block_size": "256", FactKVCacheTokens: "65536",
			FactMaxBatchedTokens: "8192", "cuda_graph_setting": "True,True"}},
		// the serving line prints its own, smaller kv_capacity_tokens
		{14, map[string]string{FactModel: "random-llama-3.1-8b-shape", FactMaxModelLen: "65024", FactKVCacheTokens: "65024"}},
		{16, map[string]string{FactListening: "127.0.0.1:8000"}},
	} {
		ev := wantEvent(t, evs, tt.line, KindConfig)
		got := map[string]string{}
		for _, f := range ev.Facts {
			got[f.Key] = f.Value
		}
		for k, want := range tt.facts {
			if got[k] != want {
				t.Errorf("line %d: fact %s = %q, want %q (all: %v)", tt.line, k, got[k], want, got)
			}
		}
	}
	checkTime(t, evs[1], time.Date(2026, time.November, 30, 2, 35, 57, 363e6, time.UTC), TimeComplete)
	if ev := wantEvent(t, evs, 17, KindRequest); ev.Request.ID != "cmpl-77639a90074f40e88e94b108dcb84713" || ev.Request.PromptTokens != 8 || ev.Request.MaxTokens != 4 {
		t.Errorf("admit %+v", ev.Request)
	}
}

func TestEventLogDetection(t *testing.T) {
	admit := "2026-11-30T12:00:00.456Z INFO admit req=cmpl-7 prompt_tokens=130 max_tokens=16 running=3 waiting=0\n"
	for _, tt := range []struct {
		text   string
		want   Engine
		events int
	}{
		{admit + "2026-11-30T12:00:00.457Z INFO step n=1 running=1 waiting=0 kv_usage=0.1\n", EngineNodeLlamaCpp, 2},
		{admit + "2026-11-30T12:00:00.457Z INFO stats running=1 waiting=0 kv_usage=0.1\n", EngineTransformersCB, 2},
		{admit, EngineNodeLlamaCpp, 1}, // only lines both print: the test engine
	} {
		s := NewScanner(strings.NewReader(tt.text), Options{})
		n := 0
		for s.Scan() {
			n++
		}
		if s.Engine() != tt.want || n != tt.events {
			t.Errorf("%q: engine %q, %d events; want %q, %d", tt.text, s.Engine(), n, tt.want, tt.events)
		}
	}
	// the test engine's fatal error line
	evs, _ := scanString(t, "2026-11-30T12:00:00.457Z ERROR engine error=\"Error: llama_decode failed\"\n", Options{Engine: EngineNodeLlamaCpp})
	if p := evs[0].Problem; evs[0].Kind != KindError || p.Class != ProblemEngineDead || p.Message != "Error: llama_decode failed" {
		t.Errorf("engine error %+v", evs[0])
	}
}

// The layout of the llama.cpp that node-llama-cpp 3.21.1 bundles (release
// v0.4.0, its gitRelease.bundle): common/log.cpp writes "%d.%02d.%03d.%03d "
// (minutes, seconds, milliseconds, microseconds since the start, in blue
// when colours are on) and a level letter, and tools/server/server-common.h's
// SLT_INF "slot %12.*s: id %2d | task %d | " (the function name cut to 12:
// launch_slot_with_task is "launch_slot_").
func TestLlamaBundledLayout(t *testing.T) {
	text := "\x1b[34m0.03.695.846\x1b[0m \x1b[32mI \x1b[0mslot launch_slot_: id 31 | task 0 | processing task, is_child = 0\n" +
		"0.03.695.900 I slot update_slots: id 31 | task 0 | new prompt, n_ctx_slot = 4096, n_keep = 0, task.n_tokens = 17\n" +
		"1437.52.393.991 I slot print_timing: id 31 | task 0 | prompt processing, n_tokens = 2048, progress = 0.03\n" +
		"\x1b[34m1438.05.100.000\x1b[0m \x1b[32mI \x1b[0mslot      release: id 31 | task 0 | stop processing: n_tokens = 57, truncated = 0\n"
	evs, _ := scanString(t, text, Options{Engine: EngineLlamaCpp})
	want := []struct {
		action  string
		elapsed time.Duration
	}{
		{SlotLaunch, 3*time.Second + 695846*time.Microsecond},
		{SlotNewPrompt, 3*time.Second + 695900*time.Microsecond},
		{SlotActive, 1437*time.Minute + 52*time.Second + 393991*time.Microsecond},
		{SlotRelease, 1438*time.Minute + 5*time.Second + 100*time.Millisecond},
	}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	for i, w := range want {
		ev := evs[i]
		if ev.Kind != KindSlot || ev.Slot.Action != w.action || ev.Slot.ID != 31 || ev.Slot.Task != 0 || ev.Elapsed != w.elapsed || ev.TimeQuality != TimeRelative {
			t.Errorf("line %d: %+v (elapsed %s), want %s at %s", i+1, ev.Slot, ev.Elapsed, w.action, w.elapsed)
		}
	}
}

// llama-server's host-RAM prompt cache evicting entries, and a cancelled
// task (lines of an H200 sweep's log, testdata/h200-llamacpp on branch gpu).
func TestLlamaPromptCacheAndCancel(t *testing.T) {
	text := "0.12.183.899 W srv         alloc:  - making room for prompt cache entry, removing oldest entry (size = 136.014 MiB)\n" +
		"0.12.184.001 W srv          stop: cancel task, id_task = 2042\n"
	evs, _ := scanString(t, text, Options{Engine: EngineLlamaCpp})
	if len(evs) != 2 || evs[0].Kind != KindWarning || evs[0].Problem.Class != ProblemPromptCache ||
		evs[1].Kind != KindError || evs[1].Problem.Class != ProblemAbort || evs[1].Problem.Fatal {
		t.Fatalf("events %+v", evs)
	}
}

// With --kv-unified, llama-server answers an allocation that found no free
// cells by dropping an idle slot's cached prompt, and only when no idle
// slot holds one does it halve the batch (try_clear_idle_slots). The drop
// is one kv_evict event; the failed allocation before it and the retry
// after it are not kv_full. A halving without a drop still is.
func TestLlamaIdleSlotPurgeIsNotKVFull(t *testing.T) {
	evs, s := scanFile(t, "llamacpp-b1-80fb11a-h100-kvunified-idle-purge.log", Options{})
	for _, want := range []struct{ line, slot int64 }{{10, 0}, {13, 2}} {
		ev := wantEvent(t, evs, want.line, KindKVEvict)
		if ev.Slot.ID != int(want.slot) || ev.Slot.NPast != 544 || ev.Level != LevelWarning {
			t.Errorf("line %d: %+v", want.line, ev.Slot)
		}
	}
	for _, l := range []int64{9, 11, 12, 14} {
		if ev, ok := evs[l]; ok {
			t.Errorf("line %d: %s event, want none (part of a purge)", l, ev.Kind)
		}
	}
	if c := s.Counts(); c.Lines != 34 || c.Bad != 0 || c.Unknown != 0 {
		t.Errorf("counts %+v", c)
	}

	// The same engine's halving, from the same recording at c=16.
	halving, _ := scanString(t, "0.41.683.688 W decode: failed to find a memory slot for batch of size 2048\n"+
		"0.41.683.749 W srv        decode: failed to find free space in the KV cache, retrying with smaller batch size, off = 0, n_batch = 1024, ret = 1\n"+
		"0.41.684.452 W decode: failed to find a memory slot for batch of size 1024\n", Options{Engine: EngineLlamaCpp})
	if len(halving) != 3 {
		t.Fatalf("%d events, want 3 kv_full", len(halving))
	}
	for _, ev := range halving {
		if ev.Kind != KindKVFull {
			t.Errorf("line %d: %s, want kv_full", ev.Line, ev.Kind)
		}
	}
}
