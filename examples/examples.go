// Package examples bundles real recorded runs into the binary, for
// `headroom demo` and for tests. Every run here was measured, not made up;
// each one's manifest says what it is and where it came from.
package examples

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

//go:embed all:runs
var runs embed.FS

// Example is one bundled run.
type Example struct {
	Name        string
	Description string
}

// List names the bundled runs, with a line on each.
var List = []Example{
	{"h200", "NVIDIA H200: headroom probe, and two sweeps of transformers' continuous batching serving a random-weight Llama-3.1-8B shape (KV cache 256 and 768 blocks)"},
	{"h200-1b", "NVIDIA H200: the same engine serving a random-weight Llama-3.2-1B shape (KV cache 256 blocks), with the probe"},
	{"sweep-testengine", "a real sweep of headroom's CPU test engine (llama.cpp, random-weight model) on 2 cores: knee, KV wall, queue"},
	{"h200-probe", "NVIDIA H200 roofline measured by the seed's script 01 (PyTorch), imported: the hardware ceiling only"},
	{"h200-llamacpp", "NVIDIA H200: llama.cpp's llama-server (CUDA) serving a random-weight Llama-3.1-8B shape at f16 and q4_0, the q4_0 run predicted from the f16 run, and headroom probe with FP8 and the model's own GEMMs"},
}

// Default is the example `headroom demo` shows without --example.
const Default = "h200"

// Extract writes the named example into dir (which must not exist or be
// empty) and returns the run directories to report together, with the
// report settings the example asks for.
func Extract(name, dir string) ([]string, Spec, error) {
	root := "runs/" + name
	if _, err := fs.Stat(runs, root); err != nil || name == "" {
		return nil, Spec{}, fmt.Errorf("no bundled example %q (have: %s)", name, names())
	}
	err := fs.WalkDir(runs, root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := runs.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return nil, Spec{}, err
	}
	spec := Spec{Runs: []string{"."}}
	data, err := os.ReadFile(filepath.Join(dir, SpecFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, Spec{}, err
	default:
		spec = Spec{}
		if err := json.Unmarshal(data, &spec); err != nil {
			return nil, Spec{}, fmt.Errorf("%s: %w", filepath.Join(dir, SpecFile), err)
		}
	}
	var dirs []string
	for _, r := range spec.Runs {
		dirs = append(dirs, filepath.Join(dir, r))
	}
	if spec.ModelConfig != "" {
		spec.ModelConfig = filepath.Join(dir, spec.ModelConfig)
	}
	if len(spec.ModelConfigs) > 0 {
		onDisk := map[string]string{}
		for run, config := range spec.ModelConfigs {
			onDisk[filepath.Join(dir, run)] = filepath.Join(dir, config)
		}
		spec.ModelConfigs = onDisk
	}
	if spec.PredictFrom != "" {
		spec.PredictFrom = filepath.Join(dir, spec.PredictFrom)
	}
	return dirs, spec, nil
}

// SpecFile names an example's description of itself: an example of one
// run has none; an example of several says which to report together and
// with which settings.
const SpecFile = "example.json"

// Spec is an example's example.json. Paths are relative to the example
// until Extract makes them paths on disk.
type Spec struct {
	Runs        []string `json:"runs"`
	ModelConfig string   `json:"model_config,omitempty"`
	SLO         string   `json:"slo,omitempty"`
	GPUPreset   string   `json:"gpu_preset,omitempty"`
	KWhUSD      float64  `json:"kwh_usd,omitempty"`
	// ModelConfigs gives runs models of their own (run → config.json), and
	// PredictFrom names the run the others are predicted from.
	ModelConfigs map[string]string `json:"model_configs,omitempty"`
	PredictFrom  string            `json:"predict_from,omitempty"`
}

func names() string {
	var n []string
	for _, e := range List {
		n = append(n, e.Name)
	}
	sort.Strings(n)
	return fmt.Sprint(n)
}
