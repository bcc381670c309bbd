package rundir

import "strings"

// Engine names as run manifests write them (manifest engine.name). Every
// collector writes these spellings, and every reader that takes an engine
// name from a user or from a server (a flag, /version, owned_by) maps it
// here with CanonicalEngine.
const (
	EngineVLLM           = "vllm"
	EngineSGLang         = "sglang"
	EngineLlamaCpp       = "llama.cpp"
	EngineNodeLlamaCpp   = "node-llama-cpp" // the project's test engine
	EngineTransformersCB = "transformers-cb"
	EngineOllama         = "ollama"
	EngineTGI            = "tgi"
)

// engineAliases maps every spelling headroom accepts, lower case, to the
// canonical name: the canonical names themselves, the names the engines
// give themselves (owned_by "llamacpp") and what users type.
var engineAliases = map[string]string{
	EngineVLLM:                  EngineVLLM,
	EngineSGLang:                EngineSGLang,
	EngineLlamaCpp:              EngineLlamaCpp,
	"llamacpp":                  EngineLlamaCpp,
	"llama-cpp":                 EngineLlamaCpp,
	"llama-server":              EngineLlamaCpp,
	EngineNodeLlamaCpp:          EngineNodeLlamaCpp,
	"nodellama":                 EngineNodeLlamaCpp,
	"node-llama":                EngineNodeLlamaCpp,
	"testengine":                EngineNodeLlamaCpp,
	EngineTransformersCB:        EngineTransformersCB,
	"tfcb":                      EngineTransformersCB,
	"transformers":              EngineTransformersCB,
	EngineOllama:                EngineOllama,
	EngineTGI:                   EngineTGI,
	"text-generation-inference": EngineTGI,
}

// CanonicalEngine returns the manifest spelling of an engine name, in any
// case and spelling headroom knows, and whether it knows it.
func CanonicalEngine(name string) (string, bool) {
	c, ok := engineAliases[strings.ToLower(strings.TrimSpace(name))]
	return c, ok
}
