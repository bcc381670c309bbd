// Command write-llama writes a random-weight Llama GGUF for the test engine (docs/test-engine.md)
// or, with -preset 8b, a Llama-3.1-8B-shaped model for llama.cpp on a GPU (docs/gpu-engine.md):
//
//	go run ./internal/gguf/cmd/write-llama -preset small -o small.gguf
//	node test/engine/server.mjs --model small.gguf
//	write-llama -preset 8b -type q4_0 -o 8b-q4_0.gguf
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/headroom-llm/headroom/internal/gguf"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "write-llama:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("write-llama", flag.ContinueOnError)
	out := fs.String("o", "", "output GGUF file (required)")
	preset := fs.String("preset", "tiny", "starting shape: tiny, small or 8b (Llama-3.1-8B's shape, F16, 128256-token vocabulary)")
	name := fs.String("name", "", "general.name and default model id (default: the preset's)")
	embd := fs.Int("embd", 0, "embedding length (0: the preset's)")
	layers := fs.Int("layers", 0, "block count (0: the preset's)")
	heads := fs.Int("heads", 0, "attention heads (0: the preset's)")
	kvHeads := fs.Int("kv-heads", 0, "key/value heads (0: the preset's)")
	ff := fs.Int("ff", 0, "feed-forward length (0: the preset's)")
	f16 := fs.Bool("f16", false, "F16 weight matrices (the same as -type f16)")
	typ := fs.String("type", "", "weight matrices' type: f32, f16, q8_0 or q4_0 (default: the preset's)")
	vocab := fs.Int("vocab", -1, "vocabulary size: 0 the byte-level one, more pads it with text tokens (default: the preset's)")
	ctx := fs.Int("ctx", 0, "context length the model declares (0: the preset's)")
	seed := fs.Uint64("seed", 0, "weight seed (0: the preset's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("-o FILE is required")
	}
	var c gguf.LlamaConfig
	switch *preset {
	case "tiny":
		c = gguf.TinyLlama()
	case "small":
		c = gguf.SmallLlama()
	case "8b":
		c = gguf.Llama8B()
	default:
		return fmt.Errorf("-preset %q: want tiny, small or 8b", *preset)
	}
	set := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	set(&c.EmbeddingLength, *embd)
	set(&c.BlockCount, *layers)
	set(&c.HeadCount, *heads)
	set(&c.HeadCountKV, *kvHeads)
	set(&c.FeedForwardLength, *ff)
	set(&c.ContextLength, *ctx)
	if *vocab >= 0 {
		c.VocabSize = *vocab
	}
	if *name != "" {
		c.Name = *name
	}
	if *f16 {
		c.TensorType = gguf.TensorF16
	}
	if *typ != "" {
		t, err := gguf.ParseTensorType(*typ)
		if err != nil {
			return fmt.Errorf("-type: %w", err)
		}
		c.TensorType = t
	}
	if *seed != 0 {
		c.Seed = *seed
	}
	if err := gguf.WriteLlamaFile(*out, c); err != nil {
		return err
	}
	_, err := fmt.Fprintf(stdout, "%s: %s, %d parameters, %d wide, %d layers, %d/%d heads, FF %d, vocabulary %d, %v\n",
		*out, c.Name, c.Parameters(), c.EmbeddingLength, c.BlockCount, c.HeadCount, c.HeadCountKV, c.FeedForwardLength, c.Vocab(), c.TensorType)
	return err
}
