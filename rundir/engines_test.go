package rundir

import "testing"

func TestCanonicalEngine(t *testing.T) {
	for in, want := range map[string]string{
		"vllm": EngineVLLM, "vLLM": EngineVLLM, " SGLang ": EngineSGLang,
		"llama.cpp": EngineLlamaCpp, "llamacpp": EngineLlamaCpp, "llama-server": EngineLlamaCpp,
		"node-llama-cpp": EngineNodeLlamaCpp, "testengine": EngineNodeLlamaCpp,
		"tfcb": EngineTransformersCB, "transformers-cb": EngineTransformersCB,
		"ollama": EngineOllama, "text-generation-inference": EngineTGI,
	} {
		if got, ok := CanonicalEngine(in); !ok || got != want {
			t.Errorf("CanonicalEngine(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "auto", "unknown", "triton"} {
		if got, ok := CanonicalEngine(in); ok {
			t.Errorf("CanonicalEngine(%q) = %q: not an engine", in, got)
		}
	}
	// Every canonical name maps to itself.
	for _, name := range engineAliases {
		if got, _ := CanonicalEngine(name); got != name {
			t.Errorf("%q is not its own canonical name (%q)", name, got)
		}
	}
}
