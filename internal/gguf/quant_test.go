package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// dequantize returns the values a block of t holds (ggml's dequantize_row_*).
func dequantize(t TensorType, block []byte) []float32 {
	d := Float16ToFloat32(binary.LittleEndian.Uint16(block))
	out := make([]float32, QuantBlock)
	switch t {
	case TensorQ8_0:
		for j := range out {
			out[j] = float32(int8(block[2+j])) * d
		}
	case TensorQ4_0:
		for j := range QuantBlock / 2 {
			out[j] = float32(int(block[2+j]&0x0f)-8) * d
			out[j+QuantBlock/2] = float32(int(block[2+j]>>4)-8) * d
		}
	}
	return out
}

// ramp is the block -16, -15, …, 15.
func ramp() *[QuantBlock]float32 {
	var x [QuantBlock]float32
	for j := range x {
		x[j] = float32(j - 16)
	}
	return &x
}

func TestQuantizeQ8_0KnownBlock(t *testing.T) {
	dst := make([]byte, TensorQ8_0.BlockBytes())
	quantizeQ8_0(dst, ramp())
	// d = 16/127; quants round(v·127/16): -16 → -127, -1 → -8 (7.94 rounds to 8), 15 → 119.
	if got, want := binary.LittleEndian.Uint16(dst), Float16Bits(16.0/127); got != want {
		t.Errorf("scale bits %#x, want %#x", got, want)
	}
	for j, want := range map[int]int8{0: -127, 15: -8, 16: 0, 17: 8, 31: 119} {
		if got := int8(dst[2+j]); got != want {
			t.Errorf("quant %d (value %d) = %d, want %d", j, j-16, got, want)
		}
	}
}

func TestQuantizeQ4_0KnownBlock(t *testing.T) {
	dst := make([]byte, TensorQ4_0.BlockBytes())
	quantizeQ4_0(dst, ramp())
	// The largest magnitude is -16 (the first of ±16), so d = -16 / -8 = 2 and a
	// quant is min(15, trunc(v/2 + 8.5)): -16 → 0, -15 → 1, -3 → 7, -1 → 8, 0 → 8, 1 → 9, 13 → 15, 15 → 15.
	if got := Float16ToFloat32(binary.LittleEndian.Uint16(dst)); got != 2 {
		t.Errorf("scale %v, want 2", got)
	}
	// byte j holds element j (low nibble) and element j+16 (high nibble).
	for j, want := range map[int]byte{0: 0x0 | 0x8<<4, 1: 0x1 | 0x9<<4, 13: 0x7 | 0xf<<4, 15: 0x8 | 0xf<<4} {
		if got := dst[2+j]; got != want {
			t.Errorf("byte %d = %#02x, want %#02x", j, got, want)
		}
	}
}

// TestQuantizeError checks, on random blocks, the bound each format's
// rounding allows: half a step for Q8_0, one step for Q4_0 (whose grid is
// offset by 8.5 and truncated), with the step d rounded to f16.
func TestQuantizeError(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, typ := range []TensorType{TensorQ8_0, TensorQ4_0} {
		for range 2000 {
			var x [QuantBlock]float32
			scale := math.Pow(10, 4*rng.Float64()-2) // 0.01 … 100: d stays a normal f16
			for j := range x {
				x[j] = float32(rng.NormFloat64() * scale)
			}
			dst := make([]byte, typ.BlockBytes())
			if typ == TensorQ8_0 {
				quantizeQ8_0(dst, &x)
			} else {
				quantizeQ4_0(dst, &x)
			}
			d := math.Abs(float64(Float16ToFloat32(binary.LittleEndian.Uint16(dst))))
			bound := 0.5*d + 1e-3*d
			if typ == TensorQ4_0 {
				bound = d + 1e-3*d
			}
			for j, v := range dequantize(typ, dst) {
				// the f16 rounding of d moves every value by up to 2^-11 of it
				if err := math.Abs(float64(v - x[j])); err > bound+math.Abs(float64(x[j]))*1e-3 {
					t.Fatalf("%v: element %d: %v dequantized to %v (error %.3g > %.3g, d %.3g)", typ, j, x[j], v, err, bound, d)
				}
			}
		}
	}
}

func TestQuantizedLlamaHoldsTheF16Weights(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		c := TinyLlama()
		c.TensorType, c.ChunkedStreams = TensorF32, chunked
		checkQuantizedWeights(t, c)
	}
}

func checkQuantizedWeights(t *testing.T, c LlamaConfig) {
	ref := mustBuild(t, c)
	for _, typ := range []TensorType{TensorQ8_0, TensorQ4_0} {
		c.TensorType = typ
		f := mustBuild(t, c)
		for i, tn := range f.Tensors {
			want := ref.Tensors[i]
			if tn.Name != want.Name || len(tn.Dims) != len(want.Dims) {
				t.Fatalf("%v: tensor %d is %s, want %s", typ, i, tn.Name, want.Name)
			}
			if len(tn.Dims) == 1 {
				if tn.Type != TensorF32 {
					t.Errorf("%v: %s is %v, want F32 (norms stay F32)", typ, tn.Name, tn.Type)
				}
				continue
			}
			if tn.Type != typ || uint64(len(tn.Data)) != (TensorInfo{Dims: tn.Dims, Type: typ}).Size() {
				t.Fatalf("%v: %s is %v with %d bytes", typ, tn.Name, tn.Type, len(tn.Data))
			}
			// Same draws as the F32 model: each block dequantizes close to its values.
			var worst float64
			for b := 0; b < len(tn.Data)/typ.BlockBytes(); b++ {
				vals := dequantize(typ, tn.Data[b*typ.BlockBytes():])
				for j, v := range vals {
					x := math.Float32frombits(binary.LittleEndian.Uint32(want.Data[4*(b*QuantBlock+j):]))
					worst = max(worst, math.Abs(float64(v-x)))
				}
			}
			// uniform weights of std 1/sqrt(64) (1 for the embedding): a step of at most a/127 or a/8
			limit := 0.02
			if typ == TensorQ4_0 {
				limit = 0.25
			}
			if tn.Name == "token_embd.weight" {
				limit *= 8
			}
			if worst > limit {
				t.Errorf("%v: %s differs from the F32 weights by up to %.3g (> %.3g)", typ, tn.Name, worst, limit)
			}
		}
	}
}

func TestTextVocabulary(t *testing.T) {
	c := TinyLlama()
	c.VocabSize = ByteVocabSize + 3*textTokenRange/2
	f := mustBuild(t, c)
	var tokens []string
	var types []int32
	for _, kv := range f.KVs {
		switch kv.Key {
		case "tokenizer.ggml.tokens":
			tokens = kv.Value.([]string)
		case "tokenizer.ggml.token_type":
			types = kv.Value.([]int32)
		case "tokenizer.ggml.scores":
			if n := len(kv.Value.([]float32)); n != c.VocabSize {
				t.Errorf("%d scores, want %d", n, c.VocabSize)
			}
		}
	}
	if len(tokens) != c.VocabSize || len(types) != c.VocabSize {
		t.Fatalf("%d tokens, %d types, want %d", len(tokens), len(types), c.VocabSize)
	}
	seen := map[string]bool{}
	for id, tok := range tokens {
		if seen[tok] {
			t.Fatalf("token %d %q appears twice", id, tok)
		}
		seen[tok] = true
		// What llama.cpp streams for the token: a byte token's byte, a normal token's text, nothing for unused.
		var text []byte
		switch types[id] {
		case tokenTypeByte:
			text = []byte{byte(id - TokenFirstByte)}
		case tokenTypeNormal:
			text = []byte(tok)
		}
		if !utf8.Valid(text) {
			t.Errorf("token %d (%q, type %d) streams invalid UTF-8 %x", id, tok, types[id], text)
		}
	}
	if types[TokenFirstByte+'a'] != tokenTypeByte || types[TokenFirstByte+0xc3] != tokenTypeUnused {
		t.Error("ASCII bytes must stay byte tokens and 0x80-0xFF become unused")
	}
	for _, tn := range f.Tensors {
		if (tn.Name == "token_embd.weight" || tn.Name == "output.weight") && tn.Dims[1] != uint64(c.VocabSize) {
			t.Errorf("%s has %d rows, want the vocabulary's %d", tn.Name, tn.Dims[1], c.VocabSize)
		}
	}
	if got, want := c.Parameters(), TinyLlama().Parameters()+2*64*int64(c.VocabSize-ByteVocabSize); got != want {
		t.Errorf("parameters %d, want %d", got, want)
	}
}

func TestLlama8BShape(t *testing.T) {
	c := Llama8B()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// Llama-3.1-8B's parameter count (Hugging Face's config.json with untied embeddings).
	if got := c.Parameters(); got != 8_030_261_248 {
		t.Errorf("parameters %d, want 8,030,261,248", got)
	}
}

// TestLazyWriteMatchesBuild checks that WriteLlamaFile, which draws each
// tensor as it is written, writes the same bytes as the eager BuildLlama.
func TestLazyWriteMatchesBuild(t *testing.T) {
	for _, typ := range []TensorType{TensorF16, TensorQ4_0, TensorQ8_0} {
		c := TinyLlama()
		c.TensorType, c.VocabSize, c.ChunkedStreams = typ, 1000, typ != TensorF16
		path := filepath.Join(t.TempDir(), "m.gguf")
		if err := WriteLlamaFile(path, c); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, encode(t, mustBuild(t, c))) {
			t.Errorf("%v: the lazily written file differs from BuildLlama's", typ)
		}
	}
}

// TestChunkedStreams checks that chunked weights are reproducible, that every
// tensor and every chunk gets a stream of its own, and that a tensor longer
// than a chunk is filled to its end.
func TestChunkedStreams(t *testing.T) {
	c := TinyLlama()
	c.ChunkedStreams, c.TensorType = true, TensorF32
	a, b := mustBuild(t, c), mustBuild(t, c)
	for i := range a.Tensors {
		if !bytes.Equal(a.Tensors[i].Data, b.Tensors[i].Data) {
			t.Fatalf("%s differs between two builds", a.Tensors[i].Name)
		}
	}
	q, k := a.Tensors[4], a.Tensors[5] // blk.0.attn_q, blk.0.attn_k
	if q.Name != "blk.0.attn_q.weight" || bytes.Equal(q.Data[:64], k.Data[:64]) {
		t.Errorf("%s and %s start with the same values: streams are shared", q.Name, k.Name)
	}
	long := randomChunked(1, 0, TensorF32, ChunkElements+64, 1)
	if bytes.Equal(long[:256], long[4*ChunkElements:4*ChunkElements+256]) {
		t.Error("the second chunk repeats the first")
	}
	if tail := long[len(long)-4:]; bytes.Equal(tail, make([]byte, 4)) {
		t.Error("the last values of a tensor longer than a chunk were not drawn")
	}
}

func TestWriteRefusesNonRegularTarget(t *testing.T) {
	dir := t.TempDir()
	if err := WriteLlamaFile(dir, TinyLlama()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("writing over a directory: %v, want a refusal", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}
