package analyze

import (
	"strings"
	"testing"
)

// Each engine's KV fixes name its own flags and none of another engine's;
// an unknown engine gets advice without flags.
func TestKVFixesPerEngine(t *testing.T) {
	t.Parallel()
	vllmOnly := []string{"--gpu-memory-utilization", "--max-num-seqs"}
	for _, tt := range []struct {
		engine  string
		want    []string
		notWant []string
	}{
		{"vllm", []string{"--max-model-len", "--gpu-memory-utilization", "--kv-cache-dtype fp8", "--max-num-seqs"}, []string{"--mem-fraction-static", "--kv-blocks"}},
		{"sglang", []string{"--mem-fraction-static", "--max-running-requests", "--context-length", "--kv-cache-dtype fp8_e5m2"}, vllmOnly},
		{"llamacpp", []string{"--ctx-size", "--parallel", "--cache-type-k"}, append(vllmOnly, "--max-model-len")},
		{"llama.cpp", []string{"--ctx-size", "--parallel"}, vllmOnly},
		{"transformers-cb", []string{"--kv-blocks", "--max-memory-percent", "--max-model-len", "--cpu-offload-gib"}, vllmOnly},
		{"node-llama-cpp", []string{"--kv-budget-tokens"}, append(vllmOnly, "--max-model-len")},
		{"", nil, []string{"--"}},
		{"tgi", nil, []string{"--"}},
	} {
		got := strings.Join(kvFixes(tt.engine), "\n")
		if got == "" {
			t.Errorf("%q: no fixes", tt.engine)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q fixes lack %q:\n%s", tt.engine, w, got)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(got, w) {
				t.Errorf("%q fixes name %q:\n%s", tt.engine, w, got)
			}
		}
	}
}
