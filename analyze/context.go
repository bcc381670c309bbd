package analyze

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// runContext lists the facts a reader needs next to every number (the
// seed's "report the context" rule: model, quantisation, dtype, context
// length, prompt and output tokens, engine version, driver, every server
// flag) and names the ones the run lacks; the report shows those as a
// warning, never silently omits them. The engine's facts come from eng:
// the manifest's, with gaps filled from the server log and labelled so.
func runContext(run *Run, eng engineFacts) (items []ContextItem, missing []string) {
	m := run.Manifest
	sweep := m.HasKind(rundir.KindSweep) || isSweep(run)
	add := func(label, value string) {
		if value != "" {
			items = append(items, ContextItem{Label: label, Value: value})
		}
	}
	need := func(label, value string) {
		if value == "" {
			missing = append(missing, label)
			return
		}
		items = append(items, ContextItem{Label: label, Value: value})
	}
	need("Date", formatTime(m.StartTime))
	add("Run label", m.Label)
	add("Measurements", strings.Join(m.Kinds, ", "))
	if !m.Complete {
		why := "collection did not finish"
		if m.Stopped != nil {
			why += ": " + m.Stopped.Reason
		}
		add("Complete", "no ("+why+")")
	}
	var gpus, drivers, cuda []string
	for _, g := range m.GPUs {
		gpus = append(gpus, fmt.Sprintf("%d: %s", g.Index, g.Name))
		drivers = append(drivers, g.Driver)
		cuda = append(cuda, g.CUDAVersion)
	}
	if len(m.GPUs) > 0 || m.HasKind(rundir.KindProbe) || sweep {
		need("GPU", strings.Join(gpus, "; "))
		need("Driver", uniqueJoin(drivers))
		need("CUDA", uniqueJoin(cuda))
	}
	add("Host", m.Host.Hostname)
	add("CPU", m.Host.CPUModel)
	if len(m.GPUs) > 0 {
		g := m.GPUs[0]
		if g.MemoryBytes > 0 {
			add("GPU memory", fmt.Sprintf("%.0f GiB", float64(g.MemoryBytes)/(1<<30)))
		}
		if g.PowerLimitW > 0 {
			add("GPU power limit", fmt.Sprintf("%.0f W", g.PowerLimitW))
		}
		if len(m.GPUs) > 1 {
			add("GPU count", fmt.Sprint(len(m.GPUs)))
		}
	}
	if m.Engine != nil || sweep {
		fromLog := func(label, value, field string) {
			switch {
			case value == "":
				missing = append(missing, label)
			case eng.fromLog[field]:
				items = append(items, ContextItem{Label: label, Value: value, Source: sourceServerLog})
			default:
				items = append(items, ContextItem{Label: label, Value: value})
			}
		}
		fromLog("Engine", eng.Name, efName)
		fromLog("Engine version", eng.Version, efVersion)
		fromLog("Model", eng.Model, efModel)
		fromLog("Quantization", eng.Quantization, efQuantization)
		fromLog("DType", eng.DType, efDType)
		ctxLen := ""
		if eng.ContextTokens > 0 {
			ctxLen = strings.TrimSuffix(fmt.Sprintf("%d tokens %s", eng.ContextTokens, eng.ContextNote), " ")
		}
		fromLog("Context length", ctxLen, efContext)
		if eng.fromLog[efTensorParallel] {
			items = append(items, ContextItem{Label: "Tensor parallel size", Value: fmt.Sprint(eng.TensorParallel), Source: sourceServerLog})
		}
		if eng.fromLog[efFlags] {
			items = append(items, ContextItem{Label: "Server flags", Value: strings.Join(eng.Flags, " "), Source: sourceServerLog + ", the arguments it lists as non-default"})
		} else {
			fromLog("Server flags", strings.Join(eng.Flags, " "), efFlags)
		}
		if e := m.Engine; e != nil {
			add("Engine notes", e.Description)
			for _, k := range slices.Sorted(maps.Keys(e.Config)) {
				add("Engine "+strings.ReplaceAll(k, "_", " "), e.Config[k])
			}
		}
	}
	if w := m.Workload; w != nil {
		if w.Endpoint != "" {
			add("Endpoint", "/v1/"+strings.TrimPrefix(w.Endpoint, "/v1/"))
		}
		need("Prompt tokens", w.Prompt.String())
		need("Output tokens", w.Output.String())
		if !w.FixedOutput {
			add("Output length", strings.TrimSuffix("not fixed: "+w.FixedOutputNote, ": "))
		}
		if w.Mode == "open" {
			add("Load", fmt.Sprintf("open loop, rates %v req/s", w.RatesRPS))
		} else if len(w.Levels) > 0 {
			add("Load", fmt.Sprintf("closed loop, concurrency %v", w.Levels))
		}
		if w.RequestsPerLevel > 0 {
			add("Requests per level", fmt.Sprintf("%d measured + %d warm-up", w.RequestsPerLevel, w.WarmupPerLevel))
		}
		if w.DurationPerLevelS > 0 {
			add("Duration per level", fmt.Sprintf("%.0f s", w.DurationPerLevelS))
		}
		if w.SharedPrefixTokens > 0 {
			add("Shared prompt prefix", fmt.Sprintf("%d tokens (prefix caching can make TTFT look better than unshared traffic would)", w.SharedPrefixTokens))
		} else {
			add("Prompts", "randomised, no shared prefix")
		}
		add("Dataset", w.Dataset)
		add("Tokenizer", w.Tokenizer)
		add("Temperature", fmt.Sprint(w.Temperature))
		add("Seed", fmt.Sprint(w.Seed))
	} else if sweep {
		missing = append(missing, "Prompt tokens", "Output tokens")
	}
	if s := m.Source; s != nil {
		add("Imported from", s.Tool+": "+s.File)
		if len(s.Lacks) > 0 {
			add("The source lacks", strings.Join(s.Lacks, "; "))
		}
	}
	add("headroom", m.HeadroomVersion)
	return items, missing
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04 MST")
}

func uniqueJoin(vals []string) string {
	seen := map[string]bool{}
	var out []string
	for _, v := range vals {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return strings.Join(out, ", ")
}
