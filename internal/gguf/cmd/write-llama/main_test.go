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
	q := filepath.Join(t.TempDir(), "q.gguf")
	if err := run([]string{"-o", q, "-preset", "8b", "-type", "q4_0", "-layers", "1", "-embd", "256", "-heads", "4", "-kv-heads", "2", "-ff", "512", "-vocab", "1000", "-ctx", "8192"}, &out); err != nil {
		t.Fatal(err)
	}
	qf, err := os.Open(q)
	if err != nil {
		t.Fatal(err)
	}
	defer qf.Close()
	qh, err := gguf.ReadHeader(qf)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := qh.Get("general.file_type"); v != uint32(2) {
		t.Errorf("file_type %v, want 2 (mostly Q4_0)", v)
	}
	if v, _ := qh.Get("llama.context_length"); v != uint32(8192) {
		t.Errorf("context_length %v, want 8192", v)
	}
	if v, _ := qh.Get("llama.vocab_size"); v != uint32(1000) {
		t.Errorf("vocab_size %v, want 1000", v)
	}
	for _, args := range [][]string{{}, {"-o", path, "-preset", "huge"}, {"-o", path, "-heads", "3"}, {"-o", path, "-type", "q5_k"}} {
		if err := run(args, &out); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
