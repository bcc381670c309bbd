// Package modelspec reads a served model's shape from its Hugging Face
// config.json and derives what a decode step costs: the weight bytes it
// reads (the experts a batch touches, for MoE), its FLOPs, the KV cache a
// token holds, and the GEMMs it runs. The probe (which times those GEMMs)
// and the analyzer (which joins them with a sweep) both use it.
package modelspec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
)

// Spec is the shape of a served model, read from a Hugging Face
// config.json (--model-config), with the weight precision. It gives the
// bytes a decode step reads and the FLOPs it does.
type Spec struct {
	Source    string `json:"source"`
	ModelType string `json:"model_type,omitempty"`

	Layers        int  `json:"layers"`
	Hidden        int  `json:"hidden_size"`
	Heads         int  `json:"attention_heads"`
	KVHeads       int  `json:"kv_heads"`
	HeadDim       int  `json:"head_dim"`
	Intermediate  int  `json:"intermediate_size"`
	Vocab         int  `json:"vocab_size"`
	TieEmbeddings bool `json:"tie_word_embeddings"`
	// GatedMLP: three FFN matrices (gate, up, down) as in Llama; two
	// otherwise (GPT-2, GPT-NeoX, OPT, Falcon, BLOOM, Phi).
	GatedMLP bool `json:"gated_mlp"`

	// Mixture of experts; Experts == 0 for a dense model.
	Experts                  int `json:"experts,omitempty"`
	ActiveExperts            int `json:"active_experts,omitempty"`
	ExpertIntermediate       int `json:"expert_intermediate_size,omitempty"`
	SharedExpertIntermediate int `json:"shared_expert_intermediate_size,omitempty"` // all shared experts together
	DenseLayers              int `json:"dense_layers,omitempty"`                    // leading layers with a dense FFN (DeepSeek first_k_dense_replace)

	// Multi-head latent attention (DeepSeek V2/V3); KVLoRARank == 0 otherwise.
	KVLoRARank    int `json:"kv_lora_rank,omitempty"`
	QLoRARank     int `json:"q_lora_rank,omitempty"`
	QKRopeHeadDim int `json:"qk_rope_head_dim,omitempty"`
	QKNopeHeadDim int `json:"qk_nope_head_dim,omitempty"`
	VHeadDim      int `json:"v_head_dim,omitempty"`

	// DType is the activation/unquantized dtype; WeightBits the bits per
	// weight of the transformer layers; KVBits the bits per KV-cache element.
	DType            string  `json:"dtype"`
	WeightBits       float64 `json:"weight_bits"`
	WeightBitsSource string  `json:"weight_bits_source"`
	KVBits           float64 `json:"kv_bits"`
	Quantized        bool    `json:"quantized"`
	// QuantizedHead: the LM head is quantized too, which a
	// quantization_config says by listing modules_to_not_convert without
	// lm_head; otherwise a quantized model's head is counted at DType.
	QuantizedHead bool     `json:"quantized_head,omitempty"`
	Notes         []string `json:"notes,omitempty"`
}

// hfConfig is the subset of config.json fields headroom reads, under the
// names the main model families use.
type hfConfig struct {
	ModelType          string          `json:"model_type"`
	NumHiddenLayers    *int            `json:"num_hidden_layers"`
	NLayer             *int            `json:"n_layer"`
	HiddenSize         *int            `json:"hidden_size"`
	NEmbd              *int            `json:"n_embd"`
	NumAttentionHeads  *int            `json:"num_attention_heads"`
	NHead              *int            `json:"n_head"`
	NumKeyValueHeads   *int            `json:"num_key_value_heads"`
	MultiQuery         *bool           `json:"multi_query"`
	HeadDim            *int            `json:"head_dim"`
	IntermediateSize   *int            `json:"intermediate_size"`
	NInner             *int            `json:"n_inner"`
	FFNDim             *int            `json:"ffn_dim"`
	VocabSize          *int            `json:"vocab_size"`
	TieWordEmbeddings  *bool           `json:"tie_word_embeddings"`
	TorchDType         string          `json:"torch_dtype"`
	DType              string          `json:"dtype"`
	NumLocalExperts    *int            `json:"num_local_experts"`
	NumExperts         *int            `json:"num_experts"`
	NRoutedExperts     *int            `json:"n_routed_experts"`
	NumExpertsPerTok   *int            `json:"num_experts_per_tok"`
	MoEIntermediate    *int            `json:"moe_intermediate_size"`
	SharedExpertInter  *int            `json:"shared_expert_intermediate_size"`
	NSharedExperts     *int            `json:"n_shared_experts"`
	FirstKDense        *int            `json:"first_k_dense_replace"`
	KVLoRARank         *int            `json:"kv_lora_rank"`
	QLoRARank          *int            `json:"q_lora_rank"`
	QKRopeHeadDim      *int            `json:"qk_rope_head_dim"`
	QKNopeHeadDim      *int            `json:"qk_nope_head_dim"`
	VHeadDim           *int            `json:"v_head_dim"`
	QuantizationConfig json.RawMessage `json:"quantization_config"`
	TextConfig         json.RawMessage `json:"text_config"`
}

// ungatedTypes are model types whose FFN has two matrices, not three.
var ungatedTypes = map[string]bool{
	"gpt2": true, "gpt_neox": true, "gptj": true, "opt": true, "bloom": true, "falcon": true, "phi": true, "gpt_bigcode": true, "starcoder2": true,
}

// Read reads a Hugging Face config.json. The weight precision
// comes from its quantization_config, else its torch_dtype; an empty
// quantization overrides neither.
func Read(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--model-config: %w", err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("--model-config %s: %w", path, err)
	}
	m.Source = path
	return m, nil
}

// Parse reads config.json content. Multimodal configs are read
// from their text_config (the language model; vision weights are left out).
func Parse(data []byte) (*Spec, error) {
	var top hfConfig
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a JSON config: %w", err)
	}
	c := top
	var notes []string
	if len(top.TextConfig) > 0 && !bytes.Equal(bytes.TrimSpace(top.TextConfig), []byte("null")) {
		if err := json.Unmarshal(top.TextConfig, &c); err != nil {
			return nil, fmt.Errorf("text_config: %w", err)
		}
		notes = append(notes, "multimodal config: the language model (text_config) only; vision weights are not counted")
		if c.QuantizationConfig == nil {
			c.QuantizationConfig = top.QuantizationConfig
		}
		if c.TorchDType == "" && c.DType == "" {
			c.TorchDType, c.DType = top.TorchDType, top.DType
		}
		if c.TieWordEmbeddings == nil {
			c.TieWordEmbeddings = top.TieWordEmbeddings
		}
	}
	m := &Spec{ModelType: c.ModelType, Notes: notes}
	m.Layers = first(c.NumHiddenLayers, c.NLayer)
	m.Hidden = first(c.HiddenSize, c.NEmbd)
	m.Heads = first(c.NumAttentionHeads, c.NHead)
	m.Vocab = first(c.VocabSize)
	switch {
	case m.Layers <= 0:
		return nil, fmt.Errorf("missing num_hidden_layers")
	case m.Hidden <= 0:
		return nil, fmt.Errorf("missing hidden_size")
	case m.Heads <= 0:
		return nil, fmt.Errorf("missing num_attention_heads")
	case m.Vocab <= 0:
		return nil, fmt.Errorf("missing vocab_size")
	}
	m.KVHeads = first(c.NumKeyValueHeads)
	if m.KVHeads <= 0 {
		m.KVHeads = m.Heads
		if c.MultiQuery != nil && *c.MultiQuery {
			m.KVHeads = 1
		}
	}
	m.HeadDim = first(c.HeadDim)
	if m.HeadDim <= 0 {
		m.HeadDim = m.Hidden / m.Heads
	}
	m.GatedMLP = !ungatedTypes[m.ModelType]
	m.Intermediate = first(c.IntermediateSize, c.NInner, c.FFNDim)
	if m.Intermediate <= 0 {
		m.Intermediate = 4 * m.Hidden
		m.Notes = append(m.Notes, "no intermediate_size: 4 × hidden_size assumed")
	}
	m.TieEmbeddings = c.TieWordEmbeddings != nil && *c.TieWordEmbeddings
	m.Experts = first(c.NumLocalExperts, c.NRoutedExperts, c.NumExperts)
	if m.Experts > 0 {
		m.ActiveExperts = first(c.NumExpertsPerTok)
		if m.ActiveExperts <= 0 {
			return nil, fmt.Errorf("%d experts but no num_experts_per_tok", m.Experts)
		}
		m.ExpertIntermediate = first(c.MoEIntermediate)
		if m.ExpertIntermediate <= 0 {
			m.ExpertIntermediate = m.Intermediate
		}
		switch {
		case first(c.SharedExpertInter) > 0:
			m.SharedExpertIntermediate = first(c.SharedExpertInter)
		case first(c.NSharedExperts) > 0:
			m.SharedExpertIntermediate = first(c.NSharedExperts) * m.ExpertIntermediate
		}
		m.DenseLayers = min(first(c.FirstKDense), m.Layers)
	}
	if r := first(c.KVLoRARank); r > 0 {
		m.KVLoRARank, m.QLoRARank = r, first(c.QLoRARank)
		m.QKRopeHeadDim, m.QKNopeHeadDim, m.VHeadDim = first(c.QKRopeHeadDim), first(c.QKNopeHeadDim), first(c.VHeadDim)
		if m.QKNopeHeadDim+m.QKRopeHeadDim <= 0 || m.VHeadDim <= 0 {
			return nil, fmt.Errorf("kv_lora_rank without qk_nope_head_dim, qk_rope_head_dim and v_head_dim")
		}
	}
	m.DType = NormalizeDType(cmp.Or(c.TorchDType, c.DType))
	if m.DType == "" {
		m.DType = "bfloat16"
		m.Notes = append(m.Notes, "no torch_dtype: bfloat16 assumed")
	}
	m.KVBits = dtypeBits(m.DType)
	m.WeightBits, m.WeightBitsSource = m.KVBits, "torch_dtype "+m.DType
	if bits, src, ok := quantBits(c.QuantizationConfig); ok {
		m.WeightBits, m.WeightBitsSource, m.Quantized = bits, src, true
		m.QuantizedHead = quantizesHead(c.QuantizationConfig)
		head := "the LM head is counted at " + m.DType
		if m.QuantizedHead {
			head = "the LM head is quantized too (modules_to_not_convert does not list lm_head)"
		}
		m.Notes = append(m.Notes, "quantized weights: group scales and zero points are not counted unless the bits include them; "+head)
	}
	return m, nil
}

func first(ps ...*int) int {
	for _, p := range ps {
		if p != nil && *p > 0 {
			return *p
		}
	}
	return 0
}

// NormalizeDType maps dtype spellings (torch.bfloat16, bf16, fp16, f32, …)
// to torch's names: bfloat16, float16, float32; others pass lowercased.
func NormalizeDType(s string) string {
	s = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "torch.")
	switch s {
	case "bf16":
		return "bfloat16"
	case "fp16", "half", "f16":
		return "float16"
	case "fp32", "float", "f32":
		return "float32"
	}
	return s
}

// dtypeBits is the width of a dtype name; 16 when unknown.
func dtypeBits(dtype string) float64 {
	d := strings.ToLower(dtype)
	switch {
	case strings.Contains(d, "32"):
		return 32
	case strings.Contains(d, "fp8"), strings.Contains(d, "float8"), strings.Contains(d, "int8"), d == "q8_0":
		return 8
	case strings.Contains(d, "fp4"), strings.Contains(d, "int4"):
		return 4
	}
	return 16
}

// quantBits reads the weight bits of a quantization_config: its "bits"
// (GPTQ, AWQ), compressed-tensors' config_groups weights num_bits, or the
// method's fixed width (fp8, mxfp4, bitsandbytes 4/8-bit).
func quantBits(raw json.RawMessage) (float64, string, bool) {
	if len(raw) == 0 {
		return 0, "", false
	}
	var q struct {
		QuantMethod  string   `json:"quant_method"`
		Bits         *float64 `json:"bits"`
		WeightBits   *float64 `json:"w_bit"`
		LoadIn4Bit   bool     `json:"load_in_4bit"`
		LoadIn8Bit   bool     `json:"load_in_8bit"`
		ConfigGroups map[string]struct {
			Weights struct {
				NumBits *float64 `json:"num_bits"`
			} `json:"weights"`
		} `json:"config_groups"`
	}
	if err := json.Unmarshal(raw, &q); err != nil {
		return 0, "", false
	}
	method := strings.ToLower(q.QuantMethod)
	src := "quantization_config"
	if method != "" {
		src += " (" + method + ")"
	}
	switch {
	case q.Bits != nil && *q.Bits > 0:
		return *q.Bits, src + " bits", true
	case q.WeightBits != nil && *q.WeightBits > 0:
		return *q.WeightBits, src + " w_bit", true
	case q.LoadIn4Bit:
		return 4, src + " load_in_4bit", true
	case q.LoadIn8Bit:
		return 8, src + " load_in_8bit", true
	}
	for _, g := range q.ConfigGroups {
		if g.Weights.NumBits != nil && *g.Weights.NumBits > 0 {
			return *g.Weights.NumBits, src + " config_groups weights num_bits", true
		}
	}
	switch {
	case strings.Contains(method, "fp8"):
		return 8, src, true
	case strings.Contains(method, "mxfp4"):
		return 4.25, src + ": 4-bit values plus an 8-bit scale per 32", true
	}
	return 0, "", false
}

// quantizesHead reads a quantization_config's modules_to_not_convert: when
// the list is there and lacks lm_head, the head is quantized with the rest.
func quantizesHead(raw json.RawMessage) bool {
	var q struct {
		Keep *[]string `json:"modules_to_not_convert"`
	}
	if json.Unmarshal(raw, &q) != nil || q.Keep == nil {
		return false
	}
	for _, m := range *q.Keep {
		if m == "lm_head" || strings.HasSuffix(m, ".lm_head") {
			return false
		}
	}
	return true
}

// attentionParams is the weight count of one layer's attention.
func (m *Spec) attentionParams() float64 {
	h, heads := float64(m.Hidden), float64(m.Heads)
	if m.KVLoRARank > 0 {
		qk := float64(m.QKNopeHeadDim + m.QKRopeHeadDim)
		q := h * heads * qk
		if m.QLoRARank > 0 {
			q = h*float64(m.QLoRARank) + float64(m.QLoRARank)*heads*qk
		}
		kvA := h * float64(m.KVLoRARank+m.QKRopeHeadDim)
		kvB := float64(m.KVLoRARank) * heads * float64(m.QKNopeHeadDim+m.VHeadDim)
		o := heads * float64(m.VHeadDim) * h
		return q + kvA + kvB + o
	}
	hd := float64(m.HeadDim)
	return h*heads*hd + 2*h*float64(m.KVHeads)*hd + heads*hd*h
}

func (m *Spec) ffnParams(inter int) float64 {
	n := 2.0
	if m.GatedMLP {
		n = 3
	}
	return n * float64(m.Hidden) * float64(inter)
}

func (m *Spec) moeLayers() int {
	if m.Experts == 0 {
		return 0
	}
	return m.Layers - m.DenseLayers
}

// TouchedExperts is the expected number of distinct experts a decode step
// of batch b reads per MoE layer, if each token picks its experts uniformly
// and independently: E·(1 − (1 − k/E)^b).
func (m *Spec) TouchedExperts(b float64) float64 {
	if m.Experts == 0 {
		return 0
	}
	e, k := float64(m.Experts), float64(m.ActiveExperts)
	return e * (1 - math.Pow(1-k/e, b))
}

// layerWeightParams is the weights of all layers that a decode step of
// batch b reads (expected, for MoE).
func (m *Spec) layerWeightParams(b float64) float64 {
	dense := m.Layers - m.moeLayers()
	p := float64(m.Layers)*m.attentionParams() + float64(dense)*m.ffnParams(m.Intermediate)
	if n := m.moeLayers(); n > 0 {
		per := m.TouchedExperts(b)*m.ffnParams(m.ExpertIntermediate) + m.ffnParams(m.SharedExpertIntermediate) + float64(m.Hidden*m.Experts)
		p += float64(n) * per
	}
	return p
}

func (m *Spec) lmHeadParams() float64 { return float64(m.Vocab) * float64(m.Hidden) }

// WeightBytesPerStep is the weight bytes one decode step of batch b reads:
// every layer's weights (for MoE, the experts the batch touches) and the
// LM head. The embedding table is only indexed, not read whole.
func (m *Spec) WeightBytesPerStep(b float64) float64 {
	return m.layerWeightParams(b)*m.WeightBits/8 + m.lmHeadParams()*m.headBits()/8
}

func (m *Spec) headBits() float64 {
	if m.Quantized && !m.QuantizedHead {
		return dtypeBits(m.DType)
	}
	return m.WeightBits
}

// ActiveParamsPerToken is the weights one token multiplies through.
func (m *Spec) ActiveParamsPerToken() float64 {
	dense := m.Layers - m.moeLayers()
	p := float64(m.Layers)*m.attentionParams() + float64(dense)*m.ffnParams(m.Intermediate) + m.lmHeadParams()
	if n := m.moeLayers(); n > 0 {
		p += float64(n) * (float64(m.ActiveExperts)*m.ffnParams(m.ExpertIntermediate) + m.ffnParams(m.SharedExpertIntermediate) + float64(m.Hidden*m.Experts))
	}
	return p
}

// TotalParams counts every weight: all experts, and the embedding table
// separately unless tied to the LM head.
func (m *Spec) TotalParams() float64 {
	// With b → ∞ every expert is touched.
	p := m.layerWeightParams(math.Inf(1)) + m.lmHeadParams()
	if !m.TieEmbeddings {
		p += m.lmHeadParams()
	}
	return p
}

// KVBytesPerToken is the KV-cache bytes one token of context holds: keys
// and values of every layer (MLA: the compressed latent and rope key).
func (m *Spec) KVBytesPerToken() float64 {
	if m.KVLoRARank > 0 {
		return float64(m.Layers) * float64(m.KVLoRARank+m.QKRopeHeadDim) * m.KVBits / 8
	}
	return 2 * float64(m.Layers) * float64(m.KVHeads) * float64(m.HeadDim) * m.KVBits / 8
}

// FLOPPerToken is the FLOPs to decode one token at a context of ctx
// tokens: 2 per active weight, plus attention's QKᵀ and AV over the
// context, 2·ctx·heads·(qk dim + v dim) per layer.
func (m *Spec) FLOPPerToken(ctx float64) float64 {
	qk, v := float64(m.HeadDim), float64(m.HeadDim)
	if m.KVLoRARank > 0 {
		qk, v = float64(m.QKNopeHeadDim+m.QKRopeHeadDim), float64(m.VHeadDim)
	}
	return 2*m.ActiveParamsPerToken() + 2*ctx*float64(m.Heads)*(qk+v)*float64(m.Layers)
}
