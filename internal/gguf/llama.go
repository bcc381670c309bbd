package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
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
	TensorType        TensorType // type of the weight matrices (F32, F16, Q8_0, Q4_0); norm vectors are always F32
	// VocabSize 0 is the byte-level vocabulary (ByteVocabSize tokens). A larger
	// size pads it with text tokens (see textVocabKVs) to give the embedding and
	// the LM head a real model's width: llama-server then streams every token as
	// valid UTF-8, which it requires of a model's output.
	VocabSize int
	// ChunkedStreams draws each chunk of ChunkElements values of each matrix
	// from a random stream of its own (seeded by Seed, the tensor's position
	// and the chunk's), so that a multi-gigabyte model is drawn on every core
	// in seconds. The default, one stream for the whole file, keeps the bytes of
	// the test models that recorded runs were made with.
	ChunkedStreams bool
	Seed           uint64 // weights are a deterministic function of the config, seed included
}

// ChunkElements is the number of values drawn from one stream when
// LlamaConfig.ChunkedStreams is set (a multiple of QuantBlock).
const ChunkElements = 1 << 20

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

// Llama8B has the shape of Llama-3.1-8B (4096 wide, 32 layers, 32 heads with 8
// KV heads, FFN 14336, vocabulary 128256, untied embeddings: 8,030,261,248
// parameters) with random F16 weights, for serving through llama.cpp on a GPU;
// set TensorType to Q8_0 or Q4_0 for the same weights quantized.
func Llama8B() LlamaConfig {
	return LlamaConfig{
		Name:              "headroom-llama-3.1-8b-shape-random",
		EmbeddingLength:   4096,
		BlockCount:        32,
		HeadCount:         32,
		HeadCountKV:       8,
		FeedForwardLength: 14336,
		ContextLength:     131072,
		TensorType:        TensorF16,
		VocabSize:         128256,
		ChunkedStreams:    true,
		Seed:              1,
	}
}

// Vocab is the number of tokens of the model's vocabulary.
func (c LlamaConfig) Vocab() int {
	if c.VocabSize == 0 {
		return ByteVocabSize
	}
	return c.VocabSize
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
	case c.TensorType != TensorF32 && c.TensorType != TensorF16 && c.TensorType != TensorQ8_0 && c.TensorType != TensorQ4_0:
		return fmt.Errorf("gguf: tensor type %v: want F32, F16, Q8_0 or Q4_0", c.TensorType)
	case c.TensorType.Quantized() && (c.EmbeddingLength%QuantBlock != 0 || c.FeedForwardLength%QuantBlock != 0):
		return fmt.Errorf("gguf: %v needs an embedding length (%d) and a feed-forward length (%d) that are multiples of %d", c.TensorType, c.EmbeddingLength, c.FeedForwardLength, QuantBlock)
	case c.VocabSize != 0 && c.VocabSize < ByteVocabSize:
		return fmt.Errorf("gguf: vocabulary of %d tokens: want 0 (the byte-level one) or at least %d", c.VocabSize, ByteVocabSize)
	}
	return nil
}

// fileTypes maps the matrices' type to general.file_type (llama_ftype).
var fileTypes = map[TensorType]uint32{TensorF32: 0, TensorF16: 1, TensorQ4_0: 2, TensorQ8_0: 7}

// Parameters is the model's parameter count.
func (c LlamaConfig) Parameters() int64 {
	e, ff, v := int64(c.EmbeddingLength), int64(c.FeedForwardLength), int64(c.Vocab())
	kv := e / int64(c.HeadCount) * int64(c.HeadCountKV)
	perBlock := e*e*2 + e*kv*2 + 3*e*ff + 2*e
	return int64(c.BlockCount)*perBlock + 2*e*v + e
}

// BuildLlama lays out the model: llama metadata, the vocabulary, and random
// weights drawn uniformly with a standard deviation of 1/sqrt(fan-in) (so
// activations and logits stay of order one), norms at 1. A quantized type
// holds the same drawn values as F16 would, quantized as ggml's reference
// quantizer does.
func BuildLlama(c LlamaConfig) (*File, error) { return buildLlama(c, false) }

// buildLlama with lazy set leaves every matrix's Data nil and draws it in
// Generate instead; the generators share one random stream, so they must be
// called once each, in file order, as File.WriteTo does.
func buildLlama(c LlamaConfig, lazy bool) (*File, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	e := uint64(c.EmbeddingLength)
	headDim := e / uint64(c.HeadCount)
	kvDim := headDim * uint64(c.HeadCountKV)
	ff := uint64(c.FeedForwardLength)
	vocab := uint64(c.Vocab())
	fileType := fileTypes[c.TensorType]
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
	if c.VocabSize == 0 {
		f.KVs = append(f.KVs, byteVocabKVs()...)
	} else {
		f.KVs = append(f.KVs, textVocabKVs(c.VocabSize)...)
	}

	rng := rand.New(rand.NewPCG(c.Seed, streamTag))
	var drawn uint64 // random tensors so far: the next one's stream index
	random := func(name string, in, out uint64, std float64) Tensor {
		t := Tensor{Name: name, Dims: []uint64{in, out}, Type: c.TensorType}
		index := drawn
		drawn++
		gen := func() []byte { return randomData(rng, c.TensorType, in*out, std) }
		if c.ChunkedStreams {
			gen = func() []byte { return randomChunked(c.Seed, index, c.TensorType, in*out, std) }
		}
		if lazy {
			t.Generate = gen
		} else {
			t.Data = gen()
		}
		return t
	}
	matrix := func(name string, in, out uint64) Tensor {
		return random(name, in, out, 1/math.Sqrt(float64(in)))
	}
	ones := func(name string) Tensor {
		return Tensor{Name: name, Dims: []uint64{e}, Type: TensorF32, Data: constantF32(e, 1)}
	}
	f.Tensors = append(f.Tensors,
		// The embedding is a lookup, not a product: unit scale per element.
		random("token_embd.weight", e, vocab, 1),
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
	f, err := buildLlama(c, true)
	if err != nil {
		return err
	}
	// The rename below replaces what is at path: never a device or a
	// directory (writing to /dev/null must not replace /dev/null).
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("gguf: write %s: not a regular file", path)
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

// streamTag is the PCG stream of the single-stream weights ("headroom").
const streamTag = 0x68656164726f6f6d

// randomData draws n values uniform in [-a, a) with a = sqrt(3)*std, from
// the PCG stream only (no library distribution code), so the bytes are the
// same on every Go version, and stores them as t. The quantized types draw
// the same values as F16 and quantize each block of QuantBlock.
func randomData(rng *rand.Rand, t TensorType, n uint64, std float64) []byte {
	out := make([]byte, n/uint64(t.BlockElements())*uint64(t.BlockBytes()))
	encodeUniform(out, rng, t, n, std)
	return out
}

// randomChunked is randomData with one stream per chunk of ChunkElements,
// the chunks drawn in parallel: chunk k of the tensor at position index
// comes from PCG(seed, streamTag ^ index<<32 ^ k).
func randomChunked(seed, index uint64, t TensorType, n uint64, std float64) []byte {
	bytesPerChunk := ChunkElements / uint64(t.BlockElements()) * uint64(t.BlockBytes())
	out := make([]byte, n/uint64(t.BlockElements())*uint64(t.BlockBytes()))
	chunks := (n + ChunkElements - 1) / ChunkElements
	next := make(chan uint64)
	var wg sync.WaitGroup
	for range min(uint64(runtime.GOMAXPROCS(0)), chunks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				m := min(ChunkElements, n-k*ChunkElements)
				rng := rand.New(rand.NewPCG(seed, streamTag^index<<32^k))
				encodeUniform(out[k*bytesPerChunk:], rng, t, m, std)
			}
		}()
	}
	for k := range chunks {
		next <- k
	}
	close(next)
	wg.Wait()
	return out
}

// encodeUniform draws n values from rng into out as type t.
func encodeUniform(out []byte, rng *rand.Rand, t TensorType, n uint64, std float64) {
	a := math.Sqrt(3) * std
	draw := func() float32 {
		u := float64(rng.Uint64()>>11) / (1 << 53) // [0, 1)
		return float32((2*u - 1) * a)
	}
	switch t {
	case TensorQ8_0, TensorQ4_0:
		var block [QuantBlock]float32
		for b := range n / QuantBlock {
			for j := range block {
				block[j] = draw()
			}
			dst := out[b*uint64(t.BlockBytes()):]
			if t == TensorQ8_0 {
				quantizeQ8_0(dst, &block)
			} else {
				quantizeQ4_0(dst, &block)
			}
		}
	case TensorF16:
		for i := range n {
			binary.LittleEndian.PutUint16(out[2*i:], Float16Bits(draw()))
		}
	default:
		for i := range n {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(draw()))
		}
	}
}

func constantF32(n uint64, v float32) []byte {
	out := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}
