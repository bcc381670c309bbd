package render

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/analyze"
)

// The run's context comes from the analyzer as keyed data; this file words
// it: a label and a value per item.

// contextLabels name the context items.
var contextLabels = map[string]string{
	analyze.CtxDate: "Date", analyze.CtxLabel: "Run label", analyze.CtxKinds: "Measurements", analyze.CtxIncomplete: "Complete",
	analyze.CtxGPU: "GPU", analyze.CtxDriver: "Driver", analyze.CtxCUDA: "CUDA", analyze.CtxHost: "Host", analyze.CtxCPU: "CPU",
	analyze.CtxGPUMemory: "GPU memory", analyze.CtxGPUPowerLimit: "GPU power limit", analyze.CtxGPUCount: "GPU count",
	analyze.CtxReplicas: "Replicas", analyze.CtxInterconnect: "GPU interconnect",
	analyze.CtxEngine: "Engine", analyze.CtxEngineVersion: "Engine version", analyze.CtxModel: "Model",
	analyze.CtxQuantization: "Quantization", analyze.CtxDType: "DType", analyze.CtxContextLength: "Context length",
	analyze.CtxTensorParallel: "Tensor parallel size", analyze.CtxServerFlags: "Server flags", analyze.CtxEngineNotes: "Engine notes",
	analyze.CtxEndpoint: "Endpoint", analyze.CtxPromptTokens: "Prompt tokens", analyze.CtxOutputTokens: "Output tokens",
	analyze.CtxOutputNotFixed: "Output length", analyze.CtxLoad: "Load", analyze.CtxRequestsPerLevel: "Requests per level",
	analyze.CtxDurationPerLevel: "Duration per level", analyze.CtxDataset: "Dataset", analyze.CtxTokenizer: "Tokenizer",
	analyze.CtxTemperature: "Temperature", analyze.CtxSeed: "Seed", analyze.CtxImportedFrom: "Imported from",
	analyze.CtxSourceLacks: "The source lacks", analyze.CtxHeadroomVersion: "headroom",
}

// contextLabel names a context item by its key.
func contextLabel(c analyze.ContextItem) string {
	if c.Key == analyze.CtxSharedPrefix {
		if len(c.Numbers) > 0 && c.Numbers[0] > 0 {
			return "Shared prompt prefix"
		}
		return "Prompts"
	}
	if k, ok := strings.CutPrefix(c.Key, analyze.CtxEngineConfig+"."); ok {
		return "Engine " + strings.ReplaceAll(k, "_", " ")
	}
	return nameOr(contextLabels, c.Key)
}

// missingLabels names the context a run lacks.
func missingLabels(keys []string) []string {
	var out []string
	for _, k := range keys {
		out = append(out, contextLabel(analyze.ContextItem{Key: k}))
	}
	return out
}

// contextValue says a context item's value, and where it came from when
// that is not the manifest.
func contextValue(c analyze.ContextItem) string {
	num := func(i int) float64 {
		if i < len(c.Numbers) {
			return c.Numbers[i]
		}
		return 0
	}
	var v string
	switch c.Key {
	case analyze.CtxDate:
		v = c.Value
		if t, err := time.Parse(time.RFC3339, c.Value); err == nil {
			v = stamp(t)
		}
	case analyze.CtxIncomplete:
		v = "no: collection did not finish"
		if c.Value != "" {
			v += " (" + c.Value + ")"
		}
	case analyze.CtxKinds:
		v = strings.Join(c.Values, ", ")
	case analyze.CtxSourceLacks:
		v = strings.Join(c.Values, "; ")
	case analyze.CtxGPU:
		gpus := make([]string, len(c.Values))
		for i, name := range c.Values {
			gpus[i] = name
			if i < len(c.Numbers) {
				gpus[i] = integer(int64(c.Numbers[i])) + ": " + name
			}
		}
		v = strings.Join(gpus, "; ")
	case analyze.CtxServerFlags:
		v = strings.Join(c.Values, " ")
	case analyze.CtxGPUMemory:
		v = fmt.Sprintf("%.0f GiB", num(0)/(1<<30))
	case analyze.CtxGPUPowerLimit:
		v = fmt.Sprintf("%.0f W", num(0))
	case analyze.CtxGPUCount, analyze.CtxTensorParallel:
		v = integer(int64(num(0)))
	case analyze.CtxReplicas:
		v = integer(int64(num(0))) + " servers of one model, the load spread over them"
		switch c.Value {
		case "least-outstanding":
			v += ": each request to the one with the fewest in flight"
		case "round-robin":
			v += ": each request to the next in turn"
		}
	case analyze.CtxContextLength:
		v = strings.TrimSpace(integer(int64(num(0))) + " tokens " + c.Value)
	case analyze.CtxPromptTokens, analyze.CtxOutputTokens:
		if c.Dist != nil {
			v = c.Dist.String()
		}
	case analyze.CtxOutputNotFixed:
		v = "not fixed"
		if c.Value != "" {
			v += ": " + c.Value
		}
	case analyze.CtxLoad:
		var xs []string
		for _, n := range c.Numbers {
			xs = append(xs, strconv.FormatFloat(n, 'g', -1, 64))
		}
		if c.Value == "open" {
			v = "open loop, rates " + strings.Join(xs, ", ") + " req/s"
		} else {
			v = "closed loop, concurrency " + strings.Join(xs, ", ")
		}
	case analyze.CtxRequestsPerLevel:
		v = fmt.Sprintf("%s measured + %s warm-up", integer(int64(num(0))), integer(int64(num(1))))
	case analyze.CtxDurationPerLevel:
		v = sig(num(0)) + " s"
	case analyze.CtxSharedPrefix:
		v = "randomised, no shared prefix"
		if num(0) > 0 {
			v = integer(int64(num(0))) + " tokens (prefix caching can make TTFT look better than unshared traffic would)"
		}
	case analyze.CtxTemperature:
		v = strconv.FormatFloat(num(0), 'g', -1, 64)
	case analyze.CtxSeed:
		v = strconv.FormatFloat(num(0), 'f', 0, 64)
	case analyze.CtxImportedFrom:
		v = strings.Join(c.Values, ": ")
	default:
		v = c.Value
	}
	if c.Source != "" {
		// Not from the manifest: say where, so the reader can check it.
		v += " (from " + c.Source + ")"
	}
	return v
}

// contextValueOf is the worded value of a run's item with the key; ""
// when the run has none.
func contextValueOf(r *analyze.RunAnalysis, key string) string {
	for _, c := range r.Context {
		if c.Key == key {
			c.Source = ""
			return contextValue(c)
		}
	}
	return ""
}
