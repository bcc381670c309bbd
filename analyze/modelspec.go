package analyze

import "github.com/headroom-llm/headroom/modelspec"

// ModelSpec is the served model's shape (package modelspec, which the probe
// shares to time the model's own GEMMs).
type ModelSpec = modelspec.Spec

// ReadModelConfig reads a Hugging Face config.json (--model-config).
func ReadModelConfig(path string) (*ModelSpec, error) { return modelspec.Read(path) }

// ParseModelConfig reads config.json content.
func ParseModelConfig(data []byte) (*ModelSpec, error) { return modelspec.Parse(data) }
