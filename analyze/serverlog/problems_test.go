package serverlog

import (
	"strings"
	"testing"
	"time"
)

// TestProblemExcerpts checks the problem markers of common.go that had only
// made-up lines before, and vLLM's swap-space warning, against real log
// excerpts (testdata/serverlogs/SOURCES.md says where each is from; out of
// memory and context errors are checked in the engines' own tests). Each row
// names a line and the kind, class and message it must give.
func TestProblemExcerpts(t *testing.T) {
	type problem struct {
		line      int64
		kind      Kind
		class     string
		msgPrefix string
	}
	for _, tt := range []struct {
		file     string
		engine   Engine
		counts   Counts
		problems []problem
	}{
		{"vllm-0.7.2-v0-cpu-swapspace.log", EngineVLLM, Counts{Lines: 3, Events: 1, Ignored: 2}, []problem{
			{1, KindWarning, ProblemSwapSpace, "Possibly too large swap space. 4.00 GiB out of the 7.75 GiB total CPU memory"},
		}},
		{"vllm-0.2.x-aborted-requests.log", EngineVLLM, Counts{Lines: 9, Events: 9}, []problem{
			{1, KindError, ProblemAbort, "0e89f1d2d94c4a039f868222c100cc8a"},
			{9, KindError, ProblemAbort, "14b94d4ffd6646d69d4c2ad36d7dfd50"},
		}},
		{"vllm-0.5.3.post1-cpu-iteration-timeout.log", EngineVLLM, Counts{Lines: 8, Events: 7, Ignored: 1}, []problem{
			{6, KindError, ProblemTimeout, "Engine iteration timed out. This should never happen!"},
			// the consequence of the timeout: the engine's background loop is gone
			{7, KindError, ProblemEngineDead, "Engine background task failed"},
		}},
		// asyncio's TimeoutError at the end of a bare traceback; without a
		// log prefix the traceback's source line that raises it (line 8)
		// is an event too
		{"vllm-0.7.x-v0-timeouterror-bare.log", EngineVLLM, Counts{Lines: 9, Events: 2, Unknown: 7}, []problem{
			{9, KindError, ProblemTimeout, "TimeoutError"},
		}},
		// V0 check in worker.py, printed here without any log prefix
		{"vllm-0.6.x-kv-maxseqlen-bare.log", "", Counts{Lines: 5, Events: 1, Ignored: 4}, []problem{
			{5, KindError, ProblemKVInsufficient, "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache (23648)."},
		}},
		// V1 check in kv_cache_utils.py, the end of a bare traceback
		{"vllm-0.9.x-v1-kv-available-bare.log", EngineVLLM, Counts{Lines: 5, Events: 1, Unknown: 4}, []problem{
			{5, KindError, ProblemKVInsufficient, "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (0.71 GiB)."},
		}},
		// the raise line names the cause too (a cut copy may end there)
		{"vllm-0.6.4.post1-nocacheblocks-compose.log", EngineVLLM, Counts{Lines: 3, Events: 2, Ignored: 1, Wrapped: 3}, []problem{
			{3, KindError, ProblemKVInsufficient, "ValueError: No available memory for the cache blocks."},
		}},
		// the author's Markdown bold is around the first and last lines
		{"vllm-0.6.x-v0-cpu-engineloopdied.log", EngineVLLM, Counts{Lines: 7, Events: 2, Ignored: 5}, []problem{
			{1, KindError, ProblemEngineDead, "RuntimeError('Engine loop has died')"},
			{7, KindError, ProblemEngineDead, "RuntimeError: Engine loop has died**"},
		}},
		// V1 API server traceback: "(APIServer pid=N)" without vLLM's own
		// header; the frames' vllm/v1 paths name the engine, and the raise
		// line counts too
		{"vllm-0.10.x-v1-enginecore-initfailed-bare.log", EngineVLLM, Counts{Lines: 3, Events: 2, Unknown: 1}, []problem{
			{3, KindError, ProblemStartFailed, "RuntimeError: Engine core initialization failed. See root cause above."},
		}},
		{"vllm-0.14.x-v1-enginecore-died.log", EngineVLLM, Counts{Lines: 1, Events: 1}, []problem{
			{1, KindError, ProblemEngineDead, "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client."},
		}},
		// the traceback lines after SGLang's header have no prefix: unknown
		{"sglang-0.5.x-scheduler-exception.log", EngineSGLang, Counts{Lines: 4, Events: 2, Unknown: 2}, []problem{
			{2, KindError, ProblemEngineDead, "Scheduler hit an exception: Traceback (most recent call last):"},
		}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			evs, s := scanFile(t, tt.file, Options{})
			for _, p := range tt.problems {
				ev := wantEvent(t, evs, p.line, p.kind)
				if ev.Problem.Class != p.class || !strings.HasPrefix(ev.Problem.Message, p.msgPrefix) {
					t.Errorf("line %d: problem %+v, want class %s, message starting %q", p.line, ev.Problem, p.class, p.msgPrefix)
				}
			}
			if s.Engine() != tt.engine {
				t.Errorf("engine %q, want %q", s.Engine(), tt.engine)
			}
			checkCounts(t, s, tt.counts)
		})
	}
}

// TestVLLMProblemTimes checks that the problem lines keep vLLM's time.
func TestVLLMProblemTimes(t *testing.T) {
	opts := Options{Year: 2024}
	evs, _ := scanFile(t, "vllm-0.5.3.post1-cpu-iteration-timeout.log", opts)
	checkTime(t, evs[6], time.Date(2024, time.July, 25, 15, 47, 17, 0, time.UTC), TimeNoYear)
	evs, _ = scanFile(t, "vllm-0.6.4.post1-nocacheblocks-compose.log", opts)
	checkTime(t, evs[3], time.Date(2024, time.November, 18, 18, 7, 28, 0, time.UTC), TimeNoYear)
}

// TestSGLangDecodeOOMRetract reads SGLang's older retraction message
// ("Decode out of memory happened.", before "KV cache pool is full").
func TestSGLangDecodeOOMRetract(t *testing.T) {
	evs, s := scanFile(t, "sglang-0.4.x-decode-oom-retract.log", Options{})
	if s.Engine() != EngineSGLang {
		t.Fatalf("engine %q", s.Engine())
	}
	// two retractions, each logged by several tensor-parallel ranks
	checkCounts(t, s, Counts{Lines: 5, Events: 2, Duplicates: 3})
	for _, tt := range []struct {
		line          int64
		before, after float64
		at            time.Time
	}{
		{1, 0.1474, 0.1845, utc(2025, time.March, 7, 21, 49, 33, 0)},
		{4, 0.0980, 0.1919, utc(2025, time.March, 7, 21, 49, 45, 0)},
	} {
		ev := wantEvent(t, evs, tt.line, KindPreemption)
		if ev.Preemption != (Preemption{Mode: ModeRetract, Count: 1, NewTokenRatioBefore: tt.before, NewTokenRatioAfter: tt.after}) {
			t.Errorf("line %d: %+v", tt.line, ev.Preemption)
		}
		checkTime(t, ev, tt.at, TimeNoZone)
	}
	if sum := Summarize(mapEvents(evs)); sum.Preemptions != 2 || sum.PreemptionsByMode[ModeRetract] != 2 {
		t.Errorf("summary %+v", sum)
	}
}

func mapEvents(evs map[int64]Event) []Event {
	var all []Event
	for i := int64(1); i <= int64(len(evs))+100; i++ {
		if ev, ok := evs[i]; ok {
			all = append(all, ev)
		}
	}
	return all
}
