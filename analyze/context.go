package analyze

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// Context keys (ContextItem.Key, RunAnalysis.Missing).
const (
	CtxDate              = "date"               // Value: RFC 3339
	CtxLabel             = "label"              // Value
	CtxKinds             = "kinds"              // Values
	CtxIncomplete        = "incomplete"         // Value: the reason it stopped, "" when unknown
	CtxGPU               = "gpu"                // Values: each GPU's name; Numbers: its index
	CtxDriver            = "driver"             // Value
	CtxCUDA              = "cuda"               // Value
	CtxHost              = "host"               // Value
	CtxCPU               = "cpu"                // Value
	CtxGPUMemory         = "gpu_memory"         // Numbers: bytes
	CtxGPUPowerLimit     = "gpu_power_limit"    // Numbers: watts
	CtxGPUCount          = "gpu_count"          // Numbers
	CtxEngine            = "engine"             // Value
	CtxEngineVersion     = "engine_version"     // Value
	CtxModel             = "model"              // Value
	CtxQuantization      = "quantization"       // Value
	CtxDType             = "dtype"              // Value
	CtxContextLength     = "context_length"     // Numbers: tokens; Value: a qualifier ("per slot")
	CtxTensorParallel    = "tensor_parallel"    // Numbers
	CtxReplicas          = "replicas"           // Numbers: servers the load was spread over; Value: the balance
	CtxInterconnect      = "interconnect"       // Value: how the GPUs are connected (NVLink, PCIe switch, …)
	CtxServerFlags       = "server_flags"       // Values
	CtxEngineNotes       = "engine_notes"       // Value
	CtxEngineConfig      = "engine_config"      // Key prefix: CtxEngineConfig + "." + the manifest's key
	CtxEndpoint          = "endpoint"           // Value: "/v1/…"
	CtxPromptTokens      = "prompt_tokens"      // Dist
	CtxOutputTokens      = "output_tokens"      // Dist
	CtxOutputNotFixed    = "output_not_fixed"   // Value: why
	CtxLoad              = "load"               // Value: "closed" or "open"; Numbers: the concurrencies or rates
	CtxRequestsPerLevel  = "requests_per_level" // Numbers: measured, warm-up
	CtxDurationPerLevel  = "duration_per_level" // Numbers: seconds
	CtxSharedPrefix      = "shared_prefix"      // Numbers: tokens (0: randomised prompts)
	CtxDataset           = "dataset"            // Value
	CtxTokenizer         = "tokenizer"          // Value
	CtxTemperature       = "temperature"        // Numbers
	CtxSeed              = "seed"               // Numbers
	CtxImportedFrom      = "imported_from"      // Values: tool, file
	CtxSourceLacks       = "source_lacks"       // Values
	CtxHeadroomVersion   = "headroom_version"   // Value
	sourceServerLogFlags = sourceServerLog + ", the arguments it lists as non-default"
)

// runContext lists the facts a reader needs next to every number (model,
// quantisation, dtype, context length, prompt and output tokens, engine
// version, driver, every server flag) and names the ones the run lacks;
// the report shows those as a warning, never silently omits them. The
// engine's facts come from eng: the manifest's, with gaps filled from the
// server log and marked so.
func runContext(run *Run, eng engineFacts) (items []ContextItem, missing []string) {
	m := run.Manifest
	sweep := m.HasKind(rundir.KindSweep) || isSweep(run)
	add := func(it ContextItem) { items = append(items, it) }
	value := func(key, v string) {
		if v != "" {
			add(ContextItem{Key: key, Value: v})
		}
	}
	need := func(key string, it ContextItem, have bool) {
		if !have {
			missing = append(missing, key)
			return
		}
		it.Key = key
		add(it)
	}
	need(CtxDate, ContextItem{Value: formatTime(m.StartTime)}, !m.StartTime.IsZero())
	value(CtxLabel, m.Label)
	if len(m.Kinds) > 0 {
		add(ContextItem{Key: CtxKinds, Values: m.Kinds})
	}
	if !m.Complete {
		why := ""
		if m.Stopped != nil {
			why = m.Stopped.Reason
		}
		add(ContextItem{Key: CtxIncomplete, Value: why})
	}
	var gpus, drivers, cuda []string
	var gpuIndex []float64
	for _, g := range m.GPUs {
		gpus, gpuIndex = append(gpus, g.Name), append(gpuIndex, float64(g.Index))
		drivers = append(drivers, g.Driver)
		cuda = append(cuda, g.CUDAVersion)
	}
	if len(m.GPUs) > 0 || m.HasKind(rundir.KindProbe) || sweep {
		need(CtxGPU, ContextItem{Values: gpus, Numbers: gpuIndex}, len(gpus) > 0)
		need(CtxDriver, ContextItem{Value: uniqueJoin(drivers)}, uniqueJoin(drivers) != "")
		need(CtxCUDA, ContextItem{Value: uniqueJoin(cuda)}, uniqueJoin(cuda) != "")
	}
	value(CtxHost, m.Host.Hostname)
	value(CtxCPU, m.Host.CPUModel)
	if len(m.GPUs) > 0 {
		g := m.GPUs[0]
		if g.MemoryBytes > 0 {
			add(ContextItem{Key: CtxGPUMemory, Numbers: []float64{float64(g.MemoryBytes)}})
		}
		if g.PowerLimitW > 0 {
			add(ContextItem{Key: CtxGPUPowerLimit, Numbers: []float64{g.PowerLimitW}})
		}
		if len(m.GPUs) > 1 {
			add(ContextItem{Key: CtxGPUCount, Numbers: []float64{float64(len(m.GPUs))}})
		}
		value(CtxInterconnect, m.Interconnect())
	}
	if n := len(m.Replicas); n > 1 {
		balance := ""
		if m.Workload != nil {
			balance = m.Workload.Balance
		}
		add(ContextItem{Key: CtxReplicas, Numbers: []float64{float64(n)}, Value: balance})
	}
	if m.Engine != nil || sweep {
		// fromLog marks a fact the server's log supplied.
		fromLog := func(key string, it ContextItem, have bool, field string) {
			if have && eng.fromLog[field] {
				it.Source = sourceServerLog
			}
			need(key, it, have)
		}
		fromLog(CtxEngine, ContextItem{Value: eng.Name}, eng.Name != "", efName)
		fromLog(CtxEngineVersion, ContextItem{Value: eng.Version}, eng.Version != "", efVersion)
		fromLog(CtxModel, ContextItem{Value: eng.Model}, eng.Model != "", efModel)
		fromLog(CtxQuantization, ContextItem{Value: eng.Quantization}, eng.Quantization != "", efQuantization)
		fromLog(CtxDType, ContextItem{Value: eng.DType}, eng.DType != "", efDType)
		fromLog(CtxContextLength, ContextItem{Numbers: []float64{float64(eng.ContextTokens)}, Value: eng.ContextNote}, eng.ContextTokens > 0, efContext)
		if eng.fromLog[efTensorParallel] {
			add(ContextItem{Key: CtxTensorParallel, Numbers: []float64{float64(eng.TensorParallel)}, Source: sourceServerLog})
		}
		flags := ContextItem{Values: eng.Flags}
		if eng.fromLog[efFlags] {
			flags.Source = sourceServerLogFlags
		}
		need(CtxServerFlags, flags, len(eng.Flags) > 0)
		if e := m.Engine; e != nil {
			value(CtxEngineNotes, e.Description)
			for _, k := range slices.Sorted(maps.Keys(e.Config)) {
				value(CtxEngineConfig+"."+k, e.Config[k])
			}
		}
	}
	if w := m.Workload; w != nil {
		if w.Endpoint != "" {
			value(CtxEndpoint, "/v1/"+strings.TrimPrefix(w.Endpoint, "/v1/"))
		}
		prompt, output := w.Prompt, w.Output
		need(CtxPromptTokens, ContextItem{Dist: &prompt}, prompt.Kind != "")
		need(CtxOutputTokens, ContextItem{Dist: &output}, output.Kind != "")
		if !w.FixedOutput {
			add(ContextItem{Key: CtxOutputNotFixed, Value: w.FixedOutputNote})
		}
		switch {
		case w.Mode == "open":
			add(ContextItem{Key: CtxLoad, Value: "open", Numbers: w.RatesRPS})
		case len(w.Levels) > 0:
			var levels []float64
			for _, l := range w.Levels {
				levels = append(levels, float64(l))
			}
			add(ContextItem{Key: CtxLoad, Value: "closed", Numbers: levels})
		}
		if w.RequestsPerLevel > 0 {
			add(ContextItem{Key: CtxRequestsPerLevel, Numbers: []float64{float64(w.RequestsPerLevel), float64(w.WarmupPerLevel)}})
		}
		if w.DurationPerLevelS > 0 {
			add(ContextItem{Key: CtxDurationPerLevel, Numbers: []float64{w.DurationPerLevelS}})
		}
		add(ContextItem{Key: CtxSharedPrefix, Numbers: []float64{float64(w.SharedPrefixTokens)}})
		value(CtxDataset, w.Dataset)
		value(CtxTokenizer, w.Tokenizer)
		add(ContextItem{Key: CtxTemperature, Numbers: []float64{w.Temperature}})
		add(ContextItem{Key: CtxSeed, Numbers: []float64{float64(w.Seed)}})
	} else if sweep {
		missing = append(missing, CtxPromptTokens, CtxOutputTokens)
	}
	if s := m.Source; s != nil {
		add(ContextItem{Key: CtxImportedFrom, Values: []string{s.Tool, s.File}})
		if len(s.Lacks) > 0 {
			add(ContextItem{Key: CtxSourceLacks, Values: s.Lacks})
		}
	}
	value(CtxHeadroomVersion, m.HeadroomVersion)
	return items, missing
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
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
