package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/internal/gguf"
)

func TestRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	var out bytes.Buffer
	if err := run([]string{"-o", path, "-preset", "small", "-layers", "2", "-name", "x"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "x, ") || !strings.Contains(out.String(), "2 layers") {
		t.Errorf("output %q", out.String())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := gguf.ReadHeader(f)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := h.Get("llama.block_count"); v != uint32(2) {
		t.Errorf("block_count %v, want 2", v)
	}
	if v, _ := h.Get("llama.embedding_length"); v != uint32(gguf.SmallLlama().EmbeddingLength) {
		t.Errorf("embedding_length %v, want the small preset's", v)
	}
	for _, args := range [][]string{{}, {"-o", path, "-preset", "huge"}, {"-o", path, "-heads", "3"}} {
		if err := run(args, &out); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
