package analyze

import (
	"strconv"
	"strings"

	"github.com/headroom-llm/headroom/analyze/serverlog"
	"github.com/headroom-llm/headroom/rundir"
)

// sourceServerLog labels run context read from the server log's start-up
// lines rather than from the manifest.
const sourceServerLog = "server.log"

// engineFacts is the serving engine as the run describes it: the
// manifest's fields, each empty one filled from the facts the server log's
// parser extracted at start-up (a sweep against a server headroom did not
// start has a bare manifest, but vLLM prints its dtype, context and
// arguments). Nothing is inferred: a field neither source states stays
// empty. fromLog names the fields that came from the log.
type engineFacts struct {
	Name, Version, Model, Quantization, DType string
	// ContextTokens is the longest sequence the server accepts;
	// ContextNote qualifies it ("per slot" for llama.cpp).
	ContextTokens int
	ContextNote   string
	// Flags are the manifest's server arguments as given; from the log,
	// the arguments vLLM or SGLang print as changed from their defaults,
	// as name=value.
	Flags []string
	// TensorParallel is the tensor-parallel size; 0 when neither source
	// states it.
	TensorParallel int
	fromLog        map[string]bool
}

// Field names for engineFacts.fromLog.
const (
	efName           = "name"
	efVersion        = "version"
	efModel          = "model"
	efQuantization   = "quantization"
	efDType          = "dtype"
	efContext        = "context"
	efFlags          = "flags"
	efTensorParallel = "tensor_parallel"
)

// resolveEngine merges the manifest's engine with the log's start-up facts
// (log may be nil).
func resolveEngine(m *rundir.Manifest, log *serverlog.Summary) engineFacts {
	ef := engineFacts{fromLog: map[string]bool{}}
	if m != nil && m.Engine != nil {
		e := m.Engine
		ef.Name, ef.Version, ef.Model, ef.Quantization, ef.DType = e.Name, e.Version, e.Model, e.Quantization, e.DType
		ef.ContextTokens = e.MaxContextTokens
		ef.Flags = e.Flags
	}
	ef.TensorParallel = manifestTensorParallel(m)
	if log == nil {
		return ef
	}
	facts := map[string]string{}
	for _, f := range log.Config {
		facts[f.Key] = f.Value
	}
	fill := func(field string, dst *string, v string) {
		if *dst == "" && v != "" {
			*dst, ef.fromLog[field] = v, true
		}
	}
	if log.Engine != serverlog.EngineUnknown {
		fill(efName, &ef.Name, string(log.Engine))
	}
	fill(efVersion, &ef.Version, log.Version)
	fill(efModel, &ef.Model, log.Model)
	fill(efDType, &ef.DType, strings.TrimPrefix(facts[serverlog.FactDtype], "torch."))
	q := facts[serverlog.FactQuantization]
	if q == "None" { // vLLM's config line: quantization=None, i.e. not quantised
		q = "none"
	}
	fill(efQuantization, &ef.Quantization, q)
	if ef.ContextTokens <= 0 {
		if n := positiveInt(facts[serverlog.FactMaxModelLen]); n > 0 {
			ef.ContextTokens, ef.fromLog[efContext] = n, true
		} else if n := positiveInt(facts[serverlog.FactSlotContext]); n > 0 {
			ef.ContextTokens, ef.ContextNote, ef.fromLog[efContext] = n, "per slot", true
		}
	}
	if len(ef.Flags) == 0 && len(log.NonDefaultArgs) > 0 {
		for _, a := range log.NonDefaultArgs {
			ef.Flags = append(ef.Flags, a.Key+"="+a.Value)
		}
		ef.fromLog[efFlags] = true
	}
	if ef.TensorParallel == 0 {
		if n := positiveInt(facts[serverlog.FactTensorParallel]); n > 0 {
			ef.TensorParallel, ef.fromLog[efTensorParallel] = n, true
		}
	}
	return ef
}

// tp is the tensor-parallel size for the roofline and the GPU count: 1
// when not recorded.
func (ef engineFacts) tp() int {
	return max(ef.TensorParallel, 1)
}

func positiveInt(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n <= 0 {
		return 0
	}
	return n
}
