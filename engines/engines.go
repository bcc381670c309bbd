// Package engines names the serving engines headroom knows, in the one
// spelling run manifests use (manifest engine.name), and maps every other
// spelling a user types or a server reports to it. It needs only the standard library, so
// that log and metrics parsers can use it without the run directory's
// Parquet machinery.
package engines

import "strings"

// Engine names as run manifests write them. Every collector writes these
// spellings, and every reader that takes an engine name from a user or
// from a server (a flag, /version, owned_by) maps it here with Canonical.
const (
	VLLM           = "vllm"
	SGLang         = "sglang"
	LlamaCpp       = "llama.cpp"
	NodeLlamaCpp   = "node-llama-cpp" // the project's test engine
	TransformersCB = "transformers-cb"
	Ollama         = "ollama"
	TGI            = "tgi"
)

// aliases maps every spelling headroom accepts, lower case, to the
// canonical name: the canonical names themselves, the names the engines
// give themselves (owned_by "llamacpp") and what users type.
var aliases = map[string]string{
	VLLM:                        VLLM,
	SGLang:                      SGLang,
	LlamaCpp:                    LlamaCpp,
	"llamacpp":                  LlamaCpp,
	"llama-cpp":                 LlamaCpp,
	"llama-server":              LlamaCpp,
	NodeLlamaCpp:                NodeLlamaCpp,
	"nodellama":                 NodeLlamaCpp,
	"node-llama":                NodeLlamaCpp,
	"testengine":                NodeLlamaCpp,
	TransformersCB:              TransformersCB,
	"tfcb":                      TransformersCB,
	"transformers":              TransformersCB,
	Ollama:                      Ollama,
	TGI:                         TGI,
	"text-generation-inference": TGI,
}

// Canonical returns the manifest spelling of an engine name, in any case
// and spelling headroom knows, and whether it knows it.
func Canonical(name string) (string, bool) {
	c, ok := aliases[strings.ToLower(strings.TrimSpace(name))]
	return c, ok
}
