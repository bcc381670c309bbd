package modelspec

import (
	"fmt"
	"path/filepath"
	"testing"
)

func readTestConfig(t *testing.T, name string) *Spec {
	t.Helper()
	m, err := Read(filepath.Join("..", "testdata", "modelconfigs", name))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDecodeGEMMsLlama8B checks the shapes against Llama-3.1-8B's published
// sizes and that the GEMMs read exactly the weights WeightBytesPerStep counts.
func TestDecodeGEMMsLlama8B(t *testing.T) {
	m := readTestConfig(t, "llama-3.1-8b-instruct.json")
	got := m.DecodeGEMMs(16)
	want := []GEMM{
		{OpQKV, 16, 4096, 6144, 32}, // (32 + 2·8) heads × 128
		{OpO, 16, 4096, 4096, 32},
		{OpGateUp, 16, 4096, 28672, 32},
		{OpDown, 16, 14336, 4096, 32},
		{OpLMHead, 16, 4096, 128256, 1},
	}
	if len(got) != len(want) {
		t.Fatalf("%d GEMMs %v, want %v", len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("GEMM %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if p, w := GEMMWeightParams(got), m.WeightBytesPerStep(16)/(m.WeightBits/8); !near(p, w, 1e-12) {
		t.Errorf("the GEMMs read %.0f weights, WeightBytesPerStep counts %.0f", p, w)
	}
	if m.DecodeGEMMs(0) != nil {
		t.Error("batch 0 must have no GEMMs")
	}
}

// TestDecodeGEMMsMoE checks that expert products follow the expected
// distinct-expert count and that their weights add up to WeightBytesPerStep.
func TestDecodeGEMMsMoE(t *testing.T) {
	m := readTestConfig(t, "mixtral-8x7b-instruct-v0.1.json")
	for _, b := range []int{1, 4, 64} {
		gemms := m.DecodeGEMMs(b)
		var experts float64
		for _, g := range gemms {
			if g.Op == OpExpertGateUp {
				experts = g.Count / float64(m.Layers)
				// Mixtral: 8 experts, 2 per token. One token touches 2 experts (1 token
				// each); 64 tokens touch all 8 (16 tokens each).
				if want := map[int]int{1: 1, 4: 2, 64: 16}[b]; g.Tokens != want {
					t.Errorf("b=%d: %d tokens per expert, want %d", b, g.Tokens, want)
				}
			}
		}
		if !near(experts, m.TouchedExperts(float64(b)), 1e-12) {
			t.Errorf("b=%d: %.3f expert products per layer, want %.3f", b, experts, m.TouchedExperts(float64(b)))
		}
		if p, w := GEMMWeightParams(gemms), m.WeightBytesPerStep(float64(b))/(m.WeightBits/8); !near(p, w, 1e-9) {
			t.Errorf("b=%d: GEMMs read %.0f weights, WeightBytesPerStep %.0f", b, p, w)
		}
	}
}

// TestQuantizedHead: modules_to_not_convert without lm_head quantizes the
// head too (as the GGUF models of testdata/h200-llamacpp are); with lm_head,
// or without the list, the head stays at the activation dtype.
func TestQuantizedHead(t *testing.T) {
	base := `{"model_type":"llama","num_hidden_layers":1,"hidden_size":64,"num_attention_heads":4,"intermediate_size":128,"vocab_size":1000,"torch_dtype":"float16","quantization_config":{"bits":4.5%s}}`
	head := 1000.0 * 64
	for list, wantBits := range map[string]float64{``: 16, `,"modules_to_not_convert":[]`: 4.5, `,"modules_to_not_convert":["lm_head"]`: 16} {
		m, err := Parse([]byte(fmt.Sprintf(base, list)))
		if err != nil {
			t.Fatal(err)
		}
		layers := m.layerWeightParams(1) * 4.5 / 8
		if got, want := m.WeightBytesPerStep(1), layers+head*wantBits/8; !near(got, want, 1e-12) {
			t.Errorf("modules_to_not_convert %q: %v bytes per step, want the head at %v bits (%v)", list, got, wantBits, want)
		}
	}
}
