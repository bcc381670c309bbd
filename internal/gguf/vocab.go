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
