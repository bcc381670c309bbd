package gguf

import "fmt"

// Token ids of the byte-level vocabulary's special tokens.
const (
	TokenUnknown = 0
	TokenBOS     = 1
	TokenEOS     = 2
	// TokenFirstByte is the id of the byte token <0x00>; byte b is token
	// TokenFirstByte+b.
	TokenFirstByte = 3
	// TokenSpace is "▁" (U+2581), the piece llama.cpp's SentencePiece-style
	// tokenizer turns every space into.
	TokenSpace = TokenFirstByte + 256
	// ByteVocabSize is the number of tokens of the byte-level vocabulary.
	ByteVocabSize = TokenSpace + 1
)

// Token types of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
const (
	tokenTypeNormal  int32 = 1
	tokenTypeUnknown int32 = 2
	tokenTypeControl int32 = 3
	tokenTypeUnused  int32 = 5
	tokenTypeByte    int32 = 6
)

// byteVocabKVs is a llama (SentencePiece-style) vocabulary with no merges:
// every UTF-8 byte is its own token, plus "▁" for the space. With
// add_space_prefix=false, tokenizing text gives one token per UTF-8 byte
// (a space becomes "▁", a literal "▁" in the text is one token for its
// three bytes), and detokenizing gives the text back.
func byteVocabKVs() []KV {
	tokens := make([]string, ByteVocabSize)
	scores := make([]float32, ByteVocabSize)
	types := make([]int32, ByteVocabSize)
	tokens[TokenUnknown], types[TokenUnknown] = "<unk>", tokenTypeUnknown
	tokens[TokenBOS], types[TokenBOS] = "<s>", tokenTypeControl
	tokens[TokenEOS], types[TokenEOS] = "</s>", tokenTypeControl
	for b := range 256 {
		tokens[TokenFirstByte+b] = fmt.Sprintf("<0x%02X>", b)
		types[TokenFirstByte+b] = tokenTypeByte
	}
	tokens[TokenSpace], types[TokenSpace] = "\u2581", tokenTypeNormal
	return []KV{
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.unknown_token_id", uint32(TokenUnknown)},
		{"tokenizer.ggml.bos_token_id", uint32(TokenBOS)},
		{"tokenizer.ggml.eos_token_id", uint32(TokenEOS)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
		{"tokenizer.ggml.add_space_prefix", false},
	}
}

// Text tokens of the padded vocabulary: single CJK ideographs, then pairs of
// them, from this block of Unicode (U+4E00 … U+9DFF, all assigned ideographs).
const (
	textTokenBase  = 0x4E00
	textTokenRange = 0x5000
)

// textToken is the piece of the n-th text token (n from 0): valid UTF-8 that
// no ASCII prompt contains, so the padding never changes how a prompt
// tokenizes, and every generated text token reads as text.
func textToken(n int) string {
	if n < textTokenRange {
		return string(rune(textTokenBase + n))
	}
	return string(rune(textTokenBase+n%textTokenRange)) + string(rune(textTokenBase+n/textTokenRange-1))
}

// textVocabKVs is the byte-level vocabulary padded with text tokens to size
// tokens. The bytes 0x80–0xFF become unused tokens, whose text is empty:
// a random model picks tokens in any order, and a lone byte of a multi-byte
// UTF-8 sequence would make llama-server refuse its output ("does not match
// the expected Content-only format"). The tokenizer still finds them by name,
// so prompts of any text still tokenize.
func textVocabKVs(size int) []KV {
	kvs := byteVocabKVs()
	tokens := make([]string, size)
	scores := make([]float32, size)
	types := make([]int32, size)
	for _, kv := range kvs {
		switch kv.Key {
		case "tokenizer.ggml.tokens":
			copy(tokens, kv.Value.([]string))
		case "tokenizer.ggml.token_type":
			copy(types, kv.Value.([]int32))
		}
	}
	for b := 0x80; b <= 0xff; b++ {
		types[TokenFirstByte+b] = tokenTypeUnused
	}
	for i := ByteVocabSize; i < size; i++ {
		tokens[i], types[i] = textToken(i-ByteVocabSize), tokenTypeNormal
	}
	for i := range kvs {
		switch kvs[i].Key {
		case "tokenizer.ggml.tokens":
			kvs[i].Value = tokens
		case "tokenizer.ggml.scores":
			kvs[i].Value = scores
		case "tokenizer.ggml.token_type":
			kvs[i].Value = types
		}
	}
	return kvs
}
