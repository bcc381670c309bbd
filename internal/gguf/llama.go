package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// LlamaConfig describes a Llama-architecture model with random weights.
type LlamaConfig struct {
	Name              string     // general.name
	EmbeddingLength   int        // n_embd
	BlockCount        int        // layers
	HeadCount         int        // attention heads
	HeadCountKV       int        // key/value heads (grouped-query attention when < HeadCount)
	FeedForwardLength int        // SwiGLU hidden size
	ContextLength     int        // the context length the model says it was trained with
	TensorType        TensorType // type of the weight matrices; norm vectors are always F32
	Seed              uint64     // weights are a deterministic function of the config, seed included
}

// TinyLlama is a 0.1M-parameter model (about 0.5 MB): fast enough that a
// test can generate hundreds of tokens in well under a second on one core.
func TinyLlama() LlamaConfig {
	return LlamaConfig{
		Name:              "headroom-tiny-random",
		EmbeddingLength:   64,
		BlockCount:        2,
		HeadCount:         4,
		HeadCountKV:       2,
		FeedForwardLength: 192,
		ContextLength:     4096,
		TensorType:        TensorF32,
		Seed:              1,
	}
}

// SmallLlama is a 3.5M-parameter F16 model (about 7 MB) for demo sweeps: on one CPU thread a
// decode step costs enough that batching sequences together pays off, so aggregate throughput
// rises with concurrency, then flattens (docs/test-engine.md has the measured shape).
func SmallLlama() LlamaConfig {
	return LlamaConfig{
		Name:              "headroom-small-random",
		EmbeddingLength:   256,
		BlockCount:        4,
		HeadCount:         4,
		HeadCountKV:       4,
		FeedForwardLength: 768,
		ContextLength:     4096,
		TensorType:        TensorF16,
		Seed:              1,
	}
}

// Validate reports the first field that llama.cpp could not load.
func (c LlamaConfig) Validate() error {
	switch {
	case c.EmbeddingLength <= 0 || c.BlockCount <= 0 || c.HeadCount <= 0 || c.HeadCountKV <= 0 ||
		c.FeedForwardLength <= 0 || c.ContextLength <= 0:
		return fmt.Errorf("gguf: llama config %+v: every size must be positive", c)
	case c.EmbeddingLength%c.HeadCount != 0:
		return fmt.Errorf("gguf: embedding length %d is not a multiple of the head count %d", c.EmbeddingLength, c.HeadCount)
	case (c.EmbeddingLength/c.HeadCount)%2 != 0:
		return fmt.Errorf("gguf: head dimension %d must be even for RoPE", c.EmbeddingLength/c.HeadCount)
	case c.HeadCount%c.HeadCountKV != 0:
		return fmt.Errorf("gguf: head count %d is not a multiple of the KV head count %d", c.HeadCount, c.HeadCountKV)
	case c.TensorType != TensorF32 && c.TensorType != TensorF16:
		return fmt.Errorf("gguf: tensor type %v: want F32 or F16", c.TensorType)
	}
	return nil
}

// Parameters is the model's parameter count.
func (c LlamaConfig) Parameters() int64 {
	e, ff, v := int64(c.EmbeddingLength), int64(c.FeedForwardLength), int64(ByteVocabSize)
	kv := e / int64(c.HeadCount) * int64(c.HeadCountKV)
	perBlock := e*e*2 + e*kv*2 + 3*e*ff + 2*e
	return int64(c.BlockCount)*perBlock + 2*e*v + e
}

// BuildLlama lays out the model: llama metadata, the byte-level vocabulary,
// and random weights drawn uniformly with a standard deviation of
// 1/sqrt(fan-in) (so activations and logits stay of order one), norms at 1.
func BuildLlama(c LlamaConfig) (*File, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	e := uint64(c.EmbeddingLength)
	headDim := e / uint64(c.HeadCount)
	kvDim := headDim * uint64(c.HeadCountKV)
	ff := uint64(c.FeedForwardLength)
	vocab := uint64(ByteVocabSize)
	fileType := uint32(0) // LLAMA_FTYPE_ALL_F32
	if c.TensorType == TensorF16 {
		fileType = 1 // LLAMA_FTYPE_MOSTLY_F16
	}
	f := &File{KVs: []KV{
		{"general.architecture", "llama"},
		{"general.type", "model"},
		{"general.name", c.Name},
		{"general.description", "synthetic model with random weights written by headroom's internal/gguf for tests"},
		{"general.file_type", fileType},
		{"general.alignment", uint32(DefaultAlignment)},
		{"llama.vocab_size", uint32(vocab)},
		{"llama.context_length", uint32(c.ContextLength)},
		{"llama.embedding_length", uint32(e)},
		{"llama.block_count", uint32(c.BlockCount)},
		{"llama.feed_forward_length", uint32(ff)},
		{"llama.attention.head_count", uint32(c.HeadCount)},
		{"llama.attention.head_count_kv", uint32(c.HeadCountKV)},
		{"llama.rope.dimension_count", uint32(headDim)},
		{"llama.rope.freq_base", float32(10000)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
	}}
	f.KVs = append(f.KVs, byteVocabKVs()...)

	rng := rand.New(rand.NewPCG(c.Seed, 0x68656164726f6f6d)) // "headroom"
	matrix := func(name string, in, out uint64) Tensor {
		return Tensor{Name: name, Dims: []uint64{in, out}, Type: c.TensorType,
			Data: randomData(rng, c.TensorType, in*out, 1/math.Sqrt(float64(in)))}
	}
	ones := func(name string) Tensor {
		return Tensor{Name: name, Dims: []uint64{e}, Type: TensorF32, Data: constantF32(e, 1)}
	}
	f.Tensors = append(f.Tensors,
		// The embedding is a lookup, not a product: unit scale per element.
		Tensor{Name: "token_embd.weight", Dims: []uint64{e, vocab}, Type: c.TensorType,
			Data: randomData(rng, c.TensorType, e*vocab, 1)},
		ones("output_norm.weight"),
		matrix("output.weight", e, vocab),
	)
	for i := range c.BlockCount {
		p := fmt.Sprintf("blk.%d.", i)
		f.Tensors = append(f.Tensors,
			ones(p+"attn_norm.weight"),
			matrix(p+"attn_q.weight", e, e),
			matrix(p+"attn_k.weight", e, kvDim),
			matrix(p+"attn_v.weight", e, kvDim),
			matrix(p+"attn_output.weight", e, e),
			ones(p+"ffn_norm.weight"),
			matrix(p+"ffn_gate.weight", e, ff),
			matrix(p+"ffn_up.weight", e, ff),
			matrix(p+"ffn_down.weight", ff, e),
		)
	}
	return f, nil
}

// WriteLlamaFile writes the model to path (via a temporary file in the same
// directory, so a reader never sees half a model).
func WriteLlamaFile(path string, c LlamaConfig) (err error) {
	f, err := BuildLlama(c)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".gguf-*")
	if err != nil {
		return fmt.Errorf("gguf: create model in %s: %w", filepath.Dir(path), err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, os.Remove(tmp.Name()))
		}
	}()
	if err := tmp.Chmod(0o644); err != nil { // CreateTemp makes it private
		return errors.Join(fmt.Errorf("gguf: write %s: %w", path, err), tmp.Close())
	}
	if _, err := f.WriteTo(tmp); err != nil {
		return errors.Join(fmt.Errorf("gguf: write %s: %w", path, err), tmp.Close())
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("gguf: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("gguf: write %s: %w", path, err)
	}
	return nil
}

// randomData draws n values uniform in [-a, a) with a = sqrt(3)*std, from
// the PCG stream only (no library distribution code), so the bytes are the
// same on every Go version.
func randomData(rng *rand.Rand, t TensorType, n uint64, std float64) []byte {
	a := math.Sqrt(3) * std
	out := make([]byte, n*uint64(t.ElementSize()))
	for i := range n {
		u := float64(rng.Uint64()>>11) / (1 << 53) // [0, 1)
		v := float32((2*u - 1) * a)
		if t == TensorF16 {
			binary.LittleEndian.PutUint16(out[2*i:], Float16Bits(v))
		} else {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
	}
	return out
}

func constantF32(n uint64, v float32) []byte {
	out := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}
