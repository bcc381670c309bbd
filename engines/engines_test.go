package engines

import "testing"

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"vllm": VLLM, "vLLM": VLLM, " SGLang ": SGLang,
		"llama.cpp": LlamaCpp, "llamacpp": LlamaCpp, "llama-server": LlamaCpp,
		"node-llama-cpp": NodeLlamaCpp, "testengine": NodeLlamaCpp,
		"tfcb": TransformersCB, "transformers-cb": TransformersCB,
		"ollama": Ollama, "text-generation-inference": TGI,
	} {
		if got, ok := Canonical(in); !ok || got != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "auto", "unknown", "triton"} {
		if got, ok := Canonical(in); ok {
			t.Errorf("Canonical(%q) = %q: not an engine", in, got)
		}
	}
	// Every canonical name maps to itself.
	for _, name := range aliases {
		if got, _ := Canonical(name); got != name {
			t.Errorf("%q is not its own canonical name (%q)", name, got)
		}
	}
}
