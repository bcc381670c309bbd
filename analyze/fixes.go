package analyze

import (
	"slices"
	"strconv"
	"strings"

	"github.com/headroom-llm/headroom/analyze/serverlog"
)

// The fixes of each wall, in the serving engine's own flags. Each engine's
// flags are from its documentation: vLLM's engine arguments, SGLang's
// server arguments, llama.cpp's llama-server --help, docs/gpu-engine.md for
// transformers-cb and docs/test-engine.md for the test engine. An engine
// not listed gets the same actions without flags.

// engineFlags maps a fix action to the engine's flag for it; an action an
// engine lacks is absent.
var engineFlags = map[serverlog.Engine]map[string]string{
	serverlog.EngineVLLM: {
		FixMoreKVMemory: "--gpu-memory-utilization", FixQuantizeKV: "--kv-cache-dtype",
		FixFewerSequences: "--max-num-seqs", FixSwapPreempted: "--swap-space", FixRaiseSequenceCap: "--max-num-seqs",
		FixChunkedPrefill: "--max-num-batched-tokens", FixCUDAGraphs: "--enforce-eager", FixMoreCompute: "--tensor-parallel-size",
	},
	serverlog.EngineSGLang: {
		FixMoreKVMemory: "--mem-fraction-static", FixQuantizeKV: "--kv-cache-dtype",
		FixFewerSequences: "--max-running-requests", FixRaiseSequenceCap: "--max-running-requests",
		FixChunkedPrefill: "--chunked-prefill-size", FixCUDAGraphs: "--cuda-graph-max-bs", FixMoreCompute: "--tp-size",
	},
	serverlog.EngineLlamaCpp: {
		FixMoreKVMemory: "--ctx-size", FixQuantizeKV: "--cache-type-k", FixFewerSequences: "--parallel",
		FixRaiseSequenceCap: "--parallel", FixMoreThreads: "--threads", FixChunkedPrefill: "--ubatch-size",
	},
	serverlog.EngineTransformersCB: {
		FixMoreKVMemory: "--kv-blocks", FixSwapPreempted: "--cpu-offload-gib",
		FixChunkedPrefill: "--max-batch-tokens", FixCUDAGraphs: "--cuda-graph",
	},
	serverlog.EngineNodeLlamaCpp: {
		FixKVBudget: "--kv-budget-tokens", FixRaiseSequenceCap: "--sequences", FixMoreThreads: "--threads",
		FixChunkedPrefill: "--batch-tokens",
	},
}

// capFlags are the flags that set an engine's cap on running sequences.
var capFlags = map[serverlog.Engine]string{
	serverlog.EngineVLLM:         "--max-num-seqs",
	serverlog.EngineSGLang:       "--max-running-requests",
	serverlog.EngineLlamaCpp:     "--parallel",
	serverlog.EngineNodeLlamaCpp: "--sequences",
}

// shortFlags are the short forms of an engine's flags (llama-server's
// --help: -c, -np, -t, -ctk, -ub), so that a flag given short is still
// found among the server's arguments.
var shortFlags = map[serverlog.Engine]map[string]string{
	serverlog.EngineLlamaCpp: {
		"--ctx-size": "-c", "--parallel": "-np", "--threads": "-t", "--cache-type-k": "-ctk", "--ubatch-size": "-ub",
	},
}

// flagForms are the names a flag may be given by to the engine: the long
// one, and its short form if it has one.
func flagForms(eng serverlog.Engine, long string) []string {
	if short := shortFlags[eng][long]; short != "" {
		return []string{long, short}
	}
	return []string{long}
}

// graphsBuiltIn are the engines whose GPU builds run decode steps as CUDA
// graphs by default, with no server flag to turn them on: llama.cpp's
// top-level CMakeLists.txt sets GGML_CUDA_GRAPHS_DEFAULT ON. Suggesting
// CUDA graphs there would suggest what is already done.
var graphsBuiltIn = map[serverlog.Engine]bool{serverlog.EngineLlamaCpp: true}

// fixValues are suggested settings for actions that take one.
var fixValues = map[serverlog.Engine]map[string]string{
	serverlog.EngineVLLM:           {FixQuantizeKV: "fp8", FixCUDAGraphs: "remove"},
	serverlog.EngineSGLang:         {FixQuantizeKV: "fp8_e5m2"},
	serverlog.EngineLlamaCpp:       {FixQuantizeKV: "q8_0"},
	serverlog.EngineTransformersCB: {FixCUDAGraphs: "on"},
}

func parseEngine(name string) serverlog.Engine {
	if name == "" {
		return serverlog.EngineUnknown
	}
	e, _ := serverlog.ParseEngine(name)
	return e
}

// fixesFor lists the fixes of a wall for the engine. flags are the
// server's arguments as recorded (a fix already applied is left out).
func fixesFor(w Wall, engine string, flags []string, op OperatingPoint) []Fix {
	eng := parseEngine(engine)
	var actions []string
	switch w.Kind {
	case WallKVCache:
		if eng == serverlog.EngineNodeLlamaCpp {
			actions = []string{FixKVBudget}
			break
		}
		// Paged engines (vLLM, SGLang, transformers) take KV cells as
		// tokens arrive, and llama.cpp's --ctx-size is the whole cache: a
		// shorter longest context frees nothing for more requests. vLLM's
		// own advice on preemption (docs: Optimization and Tuning) is more
		// memory for the cache first, then fewer sequences at once.
		actions = []string{FixMoreKVMemory, FixQuantizeKV, FixFewerSequences}
		if preempted(w.Evidence) {
			actions = append(actions, FixSwapPreempted)
		}
		actions = append(actions, FixSmallerModel)
	case WallEngineCap:
		actions = []string{FixRaiseSequenceCap, FixAdmissionControl}
	case WallFrontQueue:
		actions = []string{FixAdmissionControl}
	case WallCompute:
		if w.Basis == BasisServerCPU {
			actions = []string{FixMoreThreads, FixMoreCompute}
		} else {
			actions = []string{FixMoreCompute, FixQuantizeWeights}
		}
	case WallEngineOverhead:
		switch share, ok := intakeShareOfGrowth(w.Evidence); {
		case w.Basis == BasisServerCPU:
			actions = []string{FixProfileHost}
		case ok && share < 1.0/3:
			actions = []string{FixProfileHost, FixCUDAGraphs, FixChunkedPrefill}
		case ok:
			actions = []string{FixChunkedPrefill, FixCUDAGraphs, FixProfileHost}
		default:
			actions = []string{FixCUDAGraphs, FixChunkedPrefill, FixProfileHost}
		}
	case WallClientBound:
		actions = []string{FixClientCores}
	case WallNone:
		return []Fix{{Action: FixRaiseLoad, Value: strconv.FormatFloat(w.RaiseTo, 'g', 4, 64), Axis: w.At.Axis}}
	case WallInconclusive:
		return []Fix{{Action: FixRecordMeasurement, Value: w.Deciding}}
	}
	var out []Fix
	for _, a := range actions {
		f := Fix{Action: a, Flag: engineFlags[eng][a], Value: fixValues[eng][a]}
		if a == FixAdmissionControl && op.At.Valid() {
			f.Value, f.Axis = strconv.FormatFloat(op.At.Value(), 'g', 4, 64), op.At.Axis
		}
		if applied(f, eng, flags) {
			continue
		}
		if f.Flag != "" && f.Value == "" {
			if v, ok := flagValue(flags, flagForms(eng, f.Flag)...); ok && v != "" {
				f.Current = v
			}
		}
		out = append(out, f)
	}
	return out
}

// intakeShareOfGrowth is how much of the growth of TPOT from the baseline
// to the knee lies in steps that took in new prompts (EvPromptIntake's
// shares of the time between tokens, applied to EvTPOTRatio's two TPOTs).
// Below a third, the per-step host work is the overhead and profiling it
// comes first; from a third, bounding the prompts per step does. Measured:
// 0.44-0.71 at the knees of llama.cpp on GPUs (11 runs), 0.14-0.19 on
// transformers' continuous batching, whose step is host work.
func intakeShareOfGrowth(ev []Evidence) (float64, bool) {
	var intake, tpot *Evidence
	for i := range ev {
		switch ev[i].Kind {
		case EvPromptIntake:
			intake = &ev[i]
		case EvTPOTRatio:
			tpot = &ev[i]
		}
	}
	if intake == nil || tpot == nil || tpot.Value <= tpot.Ref || tpot.Ref <= 0 {
		return 0, false
	}
	grown := intake.Value*tpot.Value - intake.Ref*tpot.Ref
	return grown / (tpot.Value - tpot.Ref), true
}

// preempted reports whether the evidence counts any preemption.
func preempted(ev []Evidence) bool {
	return slices.ContainsFunc(ev, func(e Evidence) bool {
		return (e.Kind == EvPreemptions && e.Value > 0) || e.Kind == EvPreemptLog
	})
}

// applied reports whether a fix is already in effect: CUDA graphs on by
// the engine's default (graphsBuiltIn) or by its flags (transformers-cb
// --cuda-graph on), or, for vLLM's --enforce-eager (the fix is to remove
// it), that flag not there.
func applied(f Fix, eng serverlog.Engine, flags []string) bool {
	if f.Action != FixCUDAGraphs {
		return false
	}
	if graphsBuiltIn[eng] {
		return true
	}
	if f.Flag == "" {
		return false
	}
	v, ok := flagValue(flags, f.Flag)
	if f.Value == "remove" {
		return !ok
	}
	return ok && v == f.Value
}

// flagValue finds a flag's value in a server's arguments ("--f v",
// "--f=v", or a bare "--f").
func flagValue(flags []string, names ...string) (string, bool) {
	for i, a := range flags {
		name, val, hasVal := strings.Cut(a, "=")
		if !slices.Contains(names, name) {
			continue
		}
		if !hasVal && i+1 < len(flags) && !strings.HasPrefix(flags[i+1], "-") {
			val = flags[i+1]
		}
		return val, true
	}
	return "", false
}

// capFlag returns the engine's sequence-cap flag and its value when the
// server's arguments set it.
func capFlag(engine string, flags []string) (string, int, bool) {
	eng := parseEngine(engine)
	if capFlags[eng] == "" {
		return "", 0, false
	}
	for _, name := range flagForms(eng, capFlags[eng]) {
		if v, ok := flagValue(flags, name); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return name, n, true
			}
		}
	}
	return "", 0, false
}

// cpuThreads is how many cores a CPU-served engine decodes on: its
// --threads flag when the run recorded it, else its default (the test
// engine 1, llama.cpp the physical cores, taken as half the host's CPUs),
// else the host's CPUs. An engine wanting that many cores at the knee is
// saturated, however its work hops between threads.
func cpuThreads(engine string, flags []string, hostCores int) float64 {
	if v, ok := flagValue(flags, flagForms(parseEngine(engine), "--threads")...); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return float64(n)
		}
	}
	switch parseEngine(engine) {
	case serverlog.EngineNodeLlamaCpp:
		return 1
	case serverlog.EngineLlamaCpp:
		return float64(max(hostCores/2, 1))
	}
	return float64(max(hostCores, 1))
}
