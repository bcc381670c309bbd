package analyze

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// Each engine's fixes name its own flags and none of another engine's; an
// unknown engine gets the same actions without flags. A KV wall's fixes
// never lower the longest context: no engine here reserves a sequence's
// cache by it.
func TestFixesPerEngine(t *testing.T) {
	t.Parallel()
	preempting := Wall{Kind: WallKVCache, Evidence: []Evidence{{Kind: EvPreemptions, Value: 3}}}
	capped := Wall{Kind: WallKVCache, Evidence: []Evidence{{Kind: EvAdmission, Value: 12, Ref: 16}}}
	for _, tt := range []struct {
		engine  string
		wall    Wall
		want    []string // flags
		notWant []string
	}{
		{"vllm", preempting, []string{"--gpu-memory-utilization", "--kv-cache-dtype", "--max-num-seqs", "--swap-space"}, []string{"--mem-fraction-static", "--kv-blocks", "--max-model-len"}},
		{"vllm", capped, []string{"--gpu-memory-utilization"}, []string{"--swap-space"}},
		{"sglang", preempting, []string{"--mem-fraction-static", "--max-running-requests", "--kv-cache-dtype"}, []string{"--gpu-memory-utilization", "--max-num-seqs", "--context-length"}},
		{"llamacpp", preempting, []string{"--ctx-size", "--parallel", "--cache-type-k"}, []string{"--max-model-len", "--max-num-seqs"}},
		{"llama.cpp", preempting, []string{"--ctx-size", "--parallel"}, []string{"--max-num-seqs"}},
		{"transformers-cb", preempting, []string{"--kv-blocks", "--cpu-offload-gib"}, []string{"--gpu-memory-utilization", "--max-model-len"}},
		{"transformers-cb", capped, []string{"--kv-blocks"}, []string{"--cpu-offload-gib"}},
		{"node-llama-cpp", preempting, []string{"--kv-budget-tokens"}, []string{"--max-model-len"}},
		{"", preempting, nil, []string{"--"}},
		{"tgi", preempting, nil, []string{"--"}},
		{"vllm", Wall{Kind: WallEngineCap}, []string{"--max-num-seqs"}, nil},
		{"llamacpp", Wall{Kind: WallEngineCap}, []string{"--parallel"}, nil},
		{"node-llama-cpp", Wall{Kind: WallEngineCap}, []string{"--sequences"}, nil},
		{"node-llama-cpp", Wall{Kind: WallCompute, Basis: BasisServerCPU}, []string{"--threads"}, nil},
	} {
		fs := fixesFor(tt.wall, tt.engine, nil, OperatingPoint{})
		if len(fs) == 0 {
			t.Errorf("%q %s: no fixes", tt.engine, tt.wall.Kind)
		}
		var flags []string
		for _, f := range fs {
			flags = append(flags, f.Flag)
		}
		got := strings.Join(flags, " ")
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q %s fixes lack %q: %+v", tt.engine, tt.wall.Kind, w, fs)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(got, w) {
				t.Errorf("%q %s fixes name %q: %+v", tt.engine, tt.wall.Kind, w, fs)
			}
		}
	}
}

// A fix already applied is not suggested: CUDA graphs on for
// transformers-cb, and for vLLM --enforce-eager not passed.
func TestFixAlreadyApplied(t *testing.T) {
	t.Parallel()
	w := Wall{Kind: WallEngineOverhead, Basis: BasisRidge}
	if fs := fixesFor(w, "transformers-cb", []string{"--cuda-graph", "on"}, OperatingPoint{}); hasFix(fs, FixCUDAGraphs, "--cuda-graph") {
		t.Errorf("suggests CUDA graphs with --cuda-graph on: %+v", fs)
	}
	if fs := fixesFor(w, "transformers-cb", []string{"--cuda-graph", "auto"}, OperatingPoint{}); !hasFix(fs, FixCUDAGraphs, "--cuda-graph") {
		t.Errorf("no CUDA graphs fix with --cuda-graph auto: %+v", fs)
	}
	if fs := fixesFor(w, "vllm", []string{"vllm", "serve", "m"}, OperatingPoint{}); hasFix(fs, FixCUDAGraphs, "--enforce-eager") {
		t.Errorf("suggests dropping --enforce-eager that was not given: %+v", fs)
	}
	if fs := fixesFor(w, "vllm", []string{"vllm", "serve", "m", "--enforce-eager"}, OperatingPoint{}); !hasFix(fs, FixCUDAGraphs, "--enforce-eager") {
		t.Errorf("no fix for --enforce-eager: %+v", fs)
	}
	// llama.cpp's CUDA builds capture decode steps in CUDA graphs by
	// default, with no server flag: the first fix is the prompt tokens per
	// step, with the value given short (-ub) read as --ubatch-size's.
	fs := fixesFor(w, "llama.cpp", []string{"llama-server", "-m", "m.gguf", "-ngl", "99", "-ub", "512"}, OperatingPoint{})
	if len(fs) == 0 || slices.ContainsFunc(fs, func(f Fix) bool { return f.Action == FixCUDAGraphs }) ||
		fs[0].Action != FixChunkedPrefill || fs[0].Flag != "--ubatch-size" || fs[0].Current != "512" {
		t.Errorf("llama.cpp engine overhead fixes %+v", fs)
	}
}

// The share of TPOT's growth in steps that took in new prompts orders the
// fixes of engine overhead: below a third, the host's work per step first;
// from a third, the prompt tokens per step; without the evidence, as before.
func TestEngineOverheadFixesFollowPromptIntake(t *testing.T) {
	t.Parallel()
	wall := func(intake, intakeBase float64) Wall {
		return Wall{Kind: WallEngineOverhead, Basis: BasisRidge, Evidence: []Evidence{
			{Kind: EvTPOTRatio, Value: 0.020, Ref: 0.010},
			{Kind: EvPromptIntake, Value: intake, Ref: intakeBase},
		}}
	}
	for _, tt := range []struct {
		intake, base, share float64
		first               string
	}{
		{0.10, 0, 0.2, FixProfileHost},       // 2 of the 10 ms added
		{0.40, 0.10, 0.7, FixChunkedPrefill}, // 8 - 1 of 10 ms
		{0.25, 0.05, 0.45, FixChunkedPrefill},
	} {
		w := wall(tt.intake, tt.base)
		share, ok := intakeShareOfGrowth(w.Evidence)
		fs := fixesFor(w, "vllm", []string{"vllm", "serve", "m", "--enforce-eager"}, OperatingPoint{})
		if !ok || math.Abs(share-tt.share) > 1e-9 || len(fs) == 0 || fs[0].Action != tt.first {
			t.Errorf("intake %.2f (base %.2f): share %.3f (want %.2f), fixes %+v: want %s first", tt.intake, tt.base, share, tt.share, fs, tt.first)
		}
	}
	w := Wall{Kind: WallEngineOverhead, Basis: BasisRidge, Evidence: []Evidence{{Kind: EvTPOTRatio, Value: 0.020, Ref: 0.010}}}
	if _, ok := intakeShareOfGrowth(w.Evidence); ok {
		t.Error("a share without the prompt-intake evidence")
	}
	if fs := fixesFor(w, "vllm", []string{"vllm", "serve", "m", "--enforce-eager"}, OperatingPoint{}); len(fs) == 0 || fs[0].Action != FixCUDAGraphs {
		t.Errorf("without the evidence: %+v, want CUDA graphs first as before", fs)
	}
}
