package modelspec

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readConfig(t *testing.T, name string) *Spec {
	t.Helper()
	m, err := Read(filepath.Join("..", "testdata", "modelconfigs", name))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestModelConfigLlama31_8B(t *testing.T) {
	t.Parallel()
	m := readConfig(t, "llama-3.1-8b-instruct.json")
	if m.Layers != 32 || m.Hidden != 4096 || m.Heads != 32 || m.KVHeads != 8 || m.HeadDim != 128 || m.Intermediate != 14336 || m.Vocab != 128256 || !m.GatedMLP || m.TieEmbeddings {
		t.Fatalf("shape %+v", m)
	}
	if m.WeightBits != 16 || m.KVBits != 16 || m.Quantized {
		t.Errorf("bits %v/%v", m.WeightBits, m.KVBits)
	}
	// Published: 8,030,261,248 parameters, of which 266,240 are RMSNorm
	// weights the reader does not count.
	if got, want := m.TotalParams(), 8030261248.0-266240; got != want {
		t.Errorf("total params %.0f, want %.0f", got, want)
	}
	// Per layer: q,o 4096² each, k,v 4096×1024 each, FFN 3×4096×14336;
	// plus the LM head 128256×4096; 2 bytes each.
	layer := 2*4096.0*4096 + 2*4096.0*1024 + 3*4096.0*14336
	if got, want := m.WeightBytesPerStep(1), 2*(32*layer+128256*4096); got != want {
		t.Errorf("weight bytes per step %.0f, want %.0f", got, want)
	}
	// K and V, 32 layers × 8 heads × 128, 2 bytes: 128 KiB per token.
	if got := m.KVBytesPerToken(); got != 131072 {
		t.Errorf("KV bytes per token %v, want 131072", got)
	}
	if m.WeightBytesPerStep(64) != m.WeightBytesPerStep(1) {
		t.Error("a dense model reads the same weights at any batch")
	}
	if got, want := m.FLOPPerToken(0), 2*m.ActiveParamsPerToken(); got != want {
		t.Errorf("FLOPs per token at empty context %v, want 2 × active params %v", got, want)
	}
}

func TestModelConfigMixtral(t *testing.T) {
	t.Parallel()
	m := readConfig(t, "mixtral-8x7b-instruct-v0.1.json")
	if m.Experts != 8 || m.ActiveExperts != 2 || m.ExpertIntermediate != 14336 {
		t.Fatalf("experts %+v", m)
	}
	// Mistral: 46.7B total, 12.9B per token.
	if got := m.TotalParams() / 1e9; got < 46.6 || got > 46.8 {
		t.Errorf("total %.2fB, want 46.7B", got)
	}
	// Mistral's 12.9B counts the input embedding table, which a token only
	// indexes (no multiply), so ActiveParamsPerToken leaves it out.
	if got := (m.ActiveParamsPerToken() + 32000*4096) / 1e9; got < 12.85 || got > 12.95 {
		t.Errorf("active %.2fB with the embedding table, want 12.9B", got)
	}
	// One token reads 2 experts per layer; a large batch reads all 8.
	if got := m.TouchedExperts(1); !near(got, 2, 1e-12) {
		t.Errorf("experts touched at b=1: %v", got)
	}
	if got := m.TouchedExperts(4); !near(got, 8*(1-0.75*0.75*0.75*0.75), 1e-12) {
		t.Errorf("experts touched at b=4: %v", got)
	}
	if m.WeightBytesPerStep(1) >= m.WeightBytesPerStep(64) {
		t.Error("a larger batch must read more expert weights")
	}
}

func TestModelConfigVariants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, json string
		check      func(*Spec) string
	}{
		{"gptq 4-bit", `{"num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":100,"intermediate_size":128,"torch_dtype":"float16","quantization_config":{"quant_method":"gptq","bits":4,"group_size":128}}`,
			func(m *Spec) string {
				if m.WeightBits != 4 || !m.Quantized || m.KVBits != 16 {
					return "want 4-bit weights, 16-bit KV"
				}
				// LM head stays 16-bit.
				layer := 4*64.0*64 + 3*64.0*128
				if m.WeightBytesPerStep(1) != 2*layer*4/8+100*64*2 {
					return "weight bytes"
				}
				return ""
			}},
		{"fp8 method", `{"num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":100,"quantization_config":{"quant_method":"fp8"}}`,
			func(m *Spec) string {
				if m.WeightBits != 8 || m.Intermediate != 256 || m.DType != "bfloat16" {
					return "want 8-bit, assumed intermediate 4×hidden and bf16"
				}
				return ""
			}},
		{"gpt2 names, ungated, MHA", `{"model_type":"gpt2","n_layer":12,"n_embd":768,"n_head":12,"vocab_size":50257,"torch_dtype":"float32"}`,
			func(m *Spec) string {
				if m.GatedMLP || m.KVHeads != 12 || m.Layers != 12 || m.WeightBits != 32 {
					return "gpt2 fields"
				}
				return ""
			}},
		{"multimodal text_config", `{"model_type":"x","torch_dtype":"bfloat16","text_config":{"num_hidden_layers":4,"hidden_size":64,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":10,"intermediate_size":100}}`,
			func(m *Spec) string {
				if m.Layers != 4 || m.KVHeads != 2 || m.DType != "bfloat16" || !strings.Contains(strings.Join(m.Notes, " "), "text_config") {
					return "text_config not read"
				}
				return ""
			}},
		{"MLA", `{"num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,"intermediate_size":100,"kv_lora_rank":32,"qk_rope_head_dim":8,"qk_nope_head_dim":16,"v_head_dim":16,"n_routed_experts":4,"num_experts_per_tok":1,"moe_intermediate_size":20,"n_shared_experts":1,"first_k_dense_replace":1}`,
			func(m *Spec) string {
				if m.KVBytesPerToken() != 2*(32+8)*2 || m.DenseLayers != 1 || m.SharedExpertIntermediate != 20 {
					return "MLA KV or DeepSeek MoE fields"
				}
				return ""
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(m); msg != "" {
				t.Errorf("%s: %+v", msg, m)
			}
		})
	}
	for _, bad := range []string{`[]`, `{}`, `{"num_hidden_layers":2}`, `{"num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,"num_local_experts":8}`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%s: want an error", bad)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"llama-3.1-8b-instruct.json", "mixtral-8x7b-instruct-v0.1.json"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "modelconfigs", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"num_hidden_layers":1,"hidden_size":1,"num_attention_heads":1,"vocab_size":1,"kv_lora_rank":1,"qk_nope_head_dim":1,"v_head_dim":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever parses must give finite, non-negative sizes.
		for _, v := range []float64{m.TotalParams(), m.WeightBytesPerStep(8), m.KVBytesPerToken(), m.FLOPPerToken(100)} {
			if v < 0 || v != v {
				t.Fatalf("bad size %v from %s", v, data)
			}
		}
	})
}

func near(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b)) }
