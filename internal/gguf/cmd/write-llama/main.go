// Command write-llama writes a random-weight Llama GGUF for the test engine (docs/test-engine.md):
//
//	go run ./internal/gguf/cmd/write-llama -preset small -o small.gguf
//	node test/engine/server.mjs --model small.gguf
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
	preset := fs.String("preset", "tiny", "starting shape: tiny or small")
	name := fs.String("name", "", "general.name and default model id (default: the preset's)")
	embd := fs.Int("embd", 0, "embedding length (0: the preset's)")
	layers := fs.Int("layers", 0, "block count (0: the preset's)")
	heads := fs.Int("heads", 0, "attention heads (0: the preset's)")
	kvHeads := fs.Int("kv-heads", 0, "key/value heads (0: the preset's)")
	ff := fs.Int("ff", 0, "feed-forward length (0: the preset's)")
	f16 := fs.Bool("f16", false, "F16 weight matrices (default: the preset's type)")
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
	default:
		return fmt.Errorf("-preset %q: want tiny or small", *preset)
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
	if *name != "" {
		c.Name = *name
	}
	if *f16 {
		c.TensorType = gguf.TensorF16
	}
	if *seed != 0 {
		c.Seed = *seed
	}
	if err := gguf.WriteLlamaFile(*out, c); err != nil {
		return err
	}
	_, err := fmt.Fprintf(stdout, "%s: %s, %d parameters, %d wide, %d layers, %d/%d heads, FF %d, %v\n",
		*out, c.Name, c.Parameters(), c.EmbeddingLength, c.BlockCount, c.HeadCount, c.HeadCountKV, c.FeedForwardLength, c.TensorType)
	return err
}
