package modelspec

import "math"

// GEMM is one weight matrix product of a decode step: Tokens rows of
// activations (K wide) times a K×N weight, run Count times per step (once
// per layer, or once per layer and expert touched). Attention over the KV
// cache is not a weight GEMM and is not listed.
type GEMM struct {
	Op     string  // OpQKV, OpO, OpGateUp, OpDown, OpLMHead, OpExpertGateUp, …
	Tokens int     // rows of the product: the batch, or the tokens one expert gets
	K, N   int     // the weight's input and output widths
	Count  float64 // products per decode step (fractional for expected expert counts)
}

// Decode GEMM operations, fused as production engines fuse them (vLLM,
// SGLang, TensorRT-LLM: one QKV and one gate/up product per layer).
const (
	OpQKV          = "qkv"
	OpO            = "o"
	OpGateUp       = "gate_up" // gate and up fused; "up" alone for ungated MLPs
	OpDown         = "down"
	OpLMHead       = "lm_head"
	OpRouter       = "router"
	OpExpertGateUp = "expert_gate_up"
	OpExpertDown   = "expert_down"
	OpSharedUp     = "shared_gate_up"
	OpSharedDown   = "shared_down"
	OpQA           = "q_a" // multi-head latent attention (DeepSeek): the low-rank projections
	OpQB           = "q_b"
	OpKVA          = "kv_a"
	OpKVB          = "kv_b"
)

// DecodeGEMMs lists the weight GEMMs of one decode step of batch b: the
// products whose time, summed with their counts, is the step's GEMM floor.
// For MoE layers the batch's tokens spread over the expected number of
// distinct experts (TouchedExperts), each expert's product getting
// ⌈b·k / touched⌉ tokens.
func (m *Spec) DecodeGEMMs(b int) []GEMM {
	if b <= 0 {
		return nil
	}
	layers := float64(m.Layers)
	var out []GEMM
	add := func(op string, tokens, k, n int, count float64) {
		if k > 0 && n > 0 && count > 0 {
			out = append(out, GEMM{Op: op, Tokens: tokens, K: k, N: n, Count: count})
		}
	}
	h := m.Hidden
	if m.KVLoRARank > 0 {
		qk := m.QKNopeHeadDim + m.QKRopeHeadDim
		if m.QLoRARank > 0 {
			add(OpQA, b, h, m.QLoRARank, layers)
			add(OpQB, b, m.QLoRARank, m.Heads*qk, layers)
		} else {
			add(OpQKV, b, h, m.Heads*qk, layers)
		}
		add(OpKVA, b, h, m.KVLoRARank+m.QKRopeHeadDim, layers)
		add(OpKVB, b, m.KVLoRARank, m.Heads*(m.QKNopeHeadDim+m.VHeadDim), layers)
		add(OpO, b, m.Heads*m.VHeadDim, h, layers)
	} else {
		add(OpQKV, b, h, (m.Heads+2*m.KVHeads)*m.HeadDim, layers)
		add(OpO, b, m.Heads*m.HeadDim, h, layers)
	}
	up := func(inter int) int {
		if m.GatedMLP {
			return 2 * inter
		}
		return inter
	}
	dense := float64(m.Layers - m.moeLayers())
	add(OpGateUp, b, h, up(m.Intermediate), dense)
	add(OpDown, b, m.Intermediate, h, dense)
	if n := float64(m.moeLayers()); n > 0 {
		touched := m.TouchedExperts(float64(b))
		// (less a hair: 64 tokens × 2 over 7.99999 experts is 16 per expert, not 17)
		perExpert := int(math.Ceil(float64(b)*float64(m.ActiveExperts)/touched - 1e-6))
		add(OpRouter, b, h, m.Experts, n)
		add(OpExpertGateUp, perExpert, h, up(m.ExpertIntermediate), n*touched)
		add(OpExpertDown, perExpert, m.ExpertIntermediate, h, n*touched)
		add(OpSharedUp, b, h, up(m.SharedExpertIntermediate), n)
		add(OpSharedDown, b, m.SharedExpertIntermediate, h, n)
	}
	add(OpLMHead, b, h, m.Vocab, 1)
	return out
}

// GEMMWeightParams is the weights the listed GEMMs read, counting each
// product's weight once per count; for a dense model it equals the layer
// weights plus the LM head that WeightBytesPerStep counts.
func GEMMWeightParams(gemms []GEMM) float64 {
	var p float64
	for _, g := range gemms {
		p += float64(g.K) * float64(g.N) * g.Count
	}
	return p
}
